import HashTreeCollections

/// The counts the online state follows from, adjusted one link at a time: how many candidate links (not loopback,
/// not ignored) reach the minimum state, and per required interface how many match it and which of those fall short
/// of its state. Contract: after any sequence of `count` calls that adds each link of a set once (and removes what
/// it replaced), ``state(under:)`` equals ``OnlineEvaluation/state(of:configuration:)`` over that set, and
/// ``missing(in:under:)`` equals ``OnlineEvaluation/missing(of:configuration:)``; neither passes over the links.
struct OnlineTally: Sendable, Equatable {
    /// Links other than loopback and ignored ones.
    private(set) var candidates = 0
    private var satisfying = 0
    /// Per required interface, how many candidate links match it.
    private var matching: [Int]
    /// Per required interface, the indexes of the matching links below its state: the links its missing lines name.
    private var short: [TreeSet<Int32>]

    init(links: some Sequence<Link>, configuration: Configuration) {
        matching = Array(repeating: 0, count: configuration.requiredInterfaces.count)
        short = Array(repeating: [], count: configuration.requiredInterfaces.count)
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
            if !OnlineEvaluation.satisfies(link, minimum, configuration) {
                if sign > 0 { short[position].insert(link.index) } else { short[position].remove(link.index) }
            }
        }
    }

    func state(under configuration: Configuration) -> OnlineState {
        if configuration.requiredInterfaces.isEmpty {
            return satisfying > 0 ? .online : .offline
        }
        let met = zip(matching, short).filter { matching, short in matching > 0 && short.isEmpty }.count
        if met == configuration.requiredInterfaces.count { return .online }
        return met > 0 ? .partial : .offline
    }

    /// What keeps `links` (the links this tally counted, by index) from being online: O(log n) for each link a line
    /// names, at most ``NetdevWire/linksNamedPerLine`` of them for each requirement.
    func missing(in links: TreeDictionary<Int32, Link>, under configuration: Configuration) -> [String] {
        guard state(under: configuration) != .online else { return [] }
        if configuration.requiredInterfaces.isEmpty {
            guard links.count > linksNamedPerLine || candidates == 0 else {
                return OnlineEvaluation.missing(of: links.values, configuration: configuration)
            }
            return [OnlineEvaluation.noLinkReaches(configuration, candidates: candidates, listing: [])]
        }
        var lines: [String] = []
        for (position, requirement) in configuration.requiredInterfaces.enumerated() {
            let shortOf = short[position].count <= linksNamedPerLine ? short[position].sorted() : []
            lines += OnlineEvaluation.lines(
                for: requirement, matching: matching[position], short: short[position].count,
                naming: shortOf.compactMap { links[$0] }, configuration)
        }
        return lines
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
    /// links fall short of the minimum; empty when online. A line names each link up to
    /// ``NetdevWire/linksNamedPerLine`` and counts them above that (for all links without required interfaces, for a
    /// requirement's links short of its state with them), so that it stays a line an operator reads on a host with
    /// thousands of links. A pass over the links: the model keeps the same lines from its tally
    /// (``Model/onlineMissing``).
    public static func missing(of links: some Collection<Link>, configuration: Configuration) -> [String] {
        let candidates = links.filter { !$0.state.isLoopback && !configuration.ignores($0.name) }
            .sorted { $0.index < $1.index }
        if configuration.requiredInterfaces.isEmpty {
            let minimum = configuration.minimumOperationalState
            guard !candidates.contains(where: { satisfies($0, minimum, configuration) }) else { return [] }
            let named = links.count > linksNamedPerLine ? [] : candidates
            return [noLinkReaches(configuration, candidates: candidates.count, listing: named)]
        }
        var missing: [String] = []
        for requirement in configuration.requiredInterfaces {
            let minimum = requirement.minimumState ?? configuration.minimumOperationalState
            let matching = candidates.filter { Glob.matches(requirement.pattern, $0.name) }
            let short = matching.filter { !satisfies($0, minimum, configuration) }
            missing += lines(
                for: requirement, matching: matching.count, short: short.count,
                naming: short.count > linksNamedPerLine ? [] : short, configuration)
        }
        return missing
    }

    /// The line without required interfaces: each of `listing`'s links and its state, or, when it is empty, the
    /// number of candidate links.
    static func noLinkReaches(_ configuration: Configuration, candidates: Int, listing: [Link]) -> String {
        let which =
            if candidates == 0 {
                "no link other than loopback and ignored ones"
            } else if listing.isEmpty {
                "none of the \(quantity(candidates, "link")) other than loopback and ignored ones"
            } else {
                listing.map { "\($0.name) \($0.operationalState.rawValue)" }.joined(separator: ", ")
            }
        return "no link reaches \(needed(configuration.minimumOperationalState, configuration)) "
            + "([Online] MinimumOperationalState=): " + which
    }

    /// A requirement's lines: none when met, `no such link` when nothing matches, each link of `naming` (its
    /// `short` links below its state, in index order) or, when there are too many to name, their number.
    static func lines(
        for requirement: InterfaceRequirement, matching: Int, short: Int, naming: [Link], _ configuration: Configuration
    ) -> [String] {
        let needs = needed(requirement.minimumState ?? configuration.minimumOperationalState, configuration)
        if matching == 0 {
            return ["\(requirement.pattern): no such link, needs \(needs)"]
        }
        return shortLinkLines(
            pattern: requirement.pattern, matching: matching, short: short,
            naming: naming.map { ($0.name, $0.operationalState.rawValue) }, needs: needs)
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
