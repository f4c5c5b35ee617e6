import HashTreeCollections

/// The counts the online state follows from, adjusted one link at a time: how many candidate links (not loopback,
/// not ignored) reach the minimum state, and per required interface how many match it and how many of those reach
/// its state. Contract: after any sequence of `count` calls that adds each link of a set once (and removes what
/// it replaced), ``state(under:)`` equals ``OnlineEvaluation/state(of:configuration:)`` over that set.
struct OnlineTally: Sendable, Equatable {
    /// Links other than loopback and ignored ones.
    private(set) var candidates = 0
    private var satisfying = 0
    private var matching: [Int]
    private var satisfied: [Int]

    init(links: some Sequence<Link>, configuration: Configuration) {
        matching = Array(repeating: 0, count: configuration.requiredInterfaces.count)
        satisfied = matching
        for link in links {
            count(link, under: configuration, as: 1)
        }
    }

    /// Adds (`sign` 1) or removes (`sign` -1) what `link` contributes.
    mutating func count(_ link: Link, under configuration: Configuration, as sign: Int) {
        guard !link.state.isLoopback && !configuration.ignores(link.name) else { return }
        candidates += sign
        if configuration.requiredInterfaces.isEmpty {
            if OnlineEvaluation.satisfies(link, configuration.minimumOperationalState, configuration) {
                satisfying += sign
            }
            return
        }
        for (position, requirement) in configuration.requiredInterfaces.enumerated()
        where Glob.matches(requirement.pattern, link.name) {
            matching[position] += sign
            let minimum = requirement.minimumState ?? configuration.minimumOperationalState
            if OnlineEvaluation.satisfies(link, minimum, configuration) {
                satisfied[position] += sign
            }
        }
    }

    func state(under configuration: Configuration) -> OnlineState {
        if configuration.requiredInterfaces.isEmpty {
            return satisfying > 0 ? .online : .offline
        }
        let met = zip(matching, satisfied).filter { matching, satisfied in matching > 0 && satisfied == matching }
            .count
        if met == configuration.requiredInterfaces.count { return .online }
        return met > 0 ? .partial : .offline
    }
}

/// How the online state follows from the links and the configuration.
public enum OnlineEvaluation {
    /// `online`, `partial` or `offline` for `links` under `configuration`.
    public static func state(of links: some Collection<Link>, configuration: Configuration) -> OnlineState {
        let candidates = links.lazy.filter { !$0.state.isLoopback && !configuration.ignores($0.name) }
        if configuration.requiredInterfaces.isEmpty {
            return candidates.contains { satisfies($0, configuration.minimumOperationalState, configuration) }
                ? .online : .offline
        }
        var met = 0
        for requirement in configuration.requiredInterfaces {
            let minimum = requirement.minimumState ?? configuration.minimumOperationalState
            let matching = candidates.filter { Glob.matches(requirement.pattern, $0.name) }
            if matching.contains(where: { _ in true }) && matching.allSatisfy({ satisfies($0, minimum, configuration) })
            {
                met += 1
            }
        }
        if met == configuration.requiredInterfaces.count { return .online }
        return met > 0 ? .partial : .offline
    }

    /// What keeps `links` from being online under `configuration`, one line per requirement not met (`eth0:
    /// degraded, needs routable`, `wlan*: no such link, needs routable`), or, without required interfaces, which
    /// links fall short of the minimum; empty when online.
    public static func missing(of links: some Collection<Link>, configuration: Configuration) -> [String] {
        let candidates = links.filter { !$0.state.isLoopback && !configuration.ignores($0.name) }
            .sorted { $0.index < $1.index }
        func needed(_ minimum: OperationalState) -> String { Self.needed(minimum, configuration) }
        if configuration.requiredInterfaces.isEmpty {
            let minimum = configuration.minimumOperationalState
            guard !candidates.contains(where: { satisfies($0, minimum, configuration) }) else { return [] }
            let states = candidates.map { "\($0.name) \($0.operationalState.rawValue)" }
            return [
                "no link reaches \(needed(minimum)) ([Online] MinimumOperationalState=): "
                    + (states.isEmpty ? "no link other than loopback and ignored ones" : states.joined(separator: ", "))
            ]
        }
        var missing: [String] = []
        for requirement in configuration.requiredInterfaces {
            let minimum = requirement.minimumState ?? configuration.minimumOperationalState
            let matching = candidates.filter { Glob.matches(requirement.pattern, $0.name) }
            if matching.isEmpty {
                missing.append("\(requirement.pattern): no such link, needs \(needed(minimum))")
            }
            for link in matching where !satisfies(link, minimum, configuration) {
                missing.append("\(link.name): \(link.operationalState.rawValue), needs \(needed(minimum))")
            }
        }
        return missing
    }

    /// `routable (ipv4)`: a minimum state as the missing lines say it (the address family matters for routable only,
    /// `RequiredFamily=`).
    static func needed(_ minimum: OperationalState, _ configuration: Configuration) -> String {
        let family = configuration.requiredFamily == .any || minimum != .routable
        return minimum.rawValue + (family ? "" : " (\(configuration.requiredFamily.rawValue))")
    }

    /// `true` when `link` reaches `minimum`, with the required address families for `routable`.
    public static func satisfies(_ link: Link, _ minimum: OperationalState, _ configuration: Configuration) -> Bool {
        guard link.operationalState >= minimum else { return false }
        guard minimum == .routable else { return true }
        switch configuration.requiredFamily {
        case .any: return true
        case .ipv4: return link.hasRoutableAddress(.ipv4)
        case .ipv6: return link.hasRoutableAddress(.ipv6)
        case .both: return link.hasRoutableAddress(.ipv4) && link.hasRoutableAddress(.ipv6)
        }
    }
}
