import CommandOptions
import Dispatch
import Locking
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// `netdevctl wait-online`: block until the host (or the named links) is online, or say why not.
struct WaitOnline: NetdevctlCommand {
    static let name = "wait-online"
    static let abstract = "Wait until netdevd says the host, or the given links, are online."
    static let discussion = """
        Without --interface, waits for netdevd's online state to be 'online' (its configuration decides). \
        With --interface (repeatable, globs allowed, each with an optional :STATE), waits for those links; \
        with --any, for one of them. On timeout it names each link not there yet and its state (exit 75).
        """
    static let options: [OptionSpec] = [
        .option(
            "interface", value: "interface",
            help: "A link (glob) and optionally its minimum state: eth0, wl*:degraded.",
            repeating: true),
        .flag("any", help: "Succeed when any one of the given links is ready."),
        .option(
            "min-state", value: "state", help: "The minimum state for links given without one.",
            choices: OperationalState.allCases.map(\.rawValue), default: "routable"),
        .option(
            "timeout", value: "span",
            help: "How long to wait: a time span such as 2s, 500ms, 1min; 0 or infinity waits forever.",
            default: "120s"),
    ]

    var interfaces: [String]
    var any: Bool
    var minState: String
    var timeout: String
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) throws(UsageError) {
        interfaces = parsed.values("interface")
        any = parsed.flag("any")
        minState = parsed.value("min-state") ?? "routable"
        timeout = parsed.value("timeout") ?? "120s"
        self.options = options
        switch TimeSpan.parse(timeout) {
        case .success: break
        case .failure(.notATimeSpan):
            throw UsageError(
                Self.spec, "--timeout '\(timeout)' is not a time span such as 2s, 500ms, 1min or infinity")
        case .failure(.tooLarge):
            throw UsageError(
                Self.spec, "--timeout '\(timeout)' is longer than 365 days; write infinity to wait forever")
        }
        for interface in interfaces where InterfaceRequirement(parsing: interface) == nil {
            throw UsageError(
                Self.spec, "--interface '\(interface)' is not NAME or NAME:STATE with a state netdevd knows")
        }
    }

    func run() throws {
        let requirements = interfaces.compactMap(InterfaceRequirement.init(parsing:))
        let minimum = OperationalState(name: minState) ?? .routable
        // infinity, like 0, waits forever.
        let milliseconds = TimeSpan.milliseconds(timeout) ?? 0
        let client = try options.client()
        let outcome = WaitOutcome()
        if milliseconds > 0 {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
                writeToStandardError(outcome.timeoutReport())
                // EX_TEMPFAIL: systemd shows netdevd-wait-online.service as status=75/TEMPFAIL.
                Glibc.exit(75)
            }
        }
        var replies = MonitorReplies()
        var failure: CommandFailure?
        do {
            try client.callWithMore("io.netdevd.Monitor") { reply in
                let state: StateReport
                do throws(CommandFailure) {
                    let next = try replies.apply(reply)
                    state = next
                } catch {
                    failure = error
                    return false
                }
                let waiting = Self.waiting(state, requirements: requirements, minimum: minimum, any: any)
                outcome.record(waiting, met: Self.met(state, requirements: requirements, minimum: minimum))
                return !waiting.isEmpty
            }
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: wait-online: \(error)")
        }
        if let failure { throw failure }
        if !outcome.satisfied {
            throw CommandFailure(
                status: 1, message: "netdevctl: netdevd closed the connection before the wait was over")
        }
        // One line saying what was waited for (netdevd-wait-online.service leaves it in the journal).
        print("Online after \(outcome.elapsed): \(outcome.met)")
    }

    /// What a satisfied wait met, in one line: the host's state, or each required link and its state (their number
    /// above ``NetdevWire/linksNamedPerLine``).
    static func met(
        _ state: StateReport, requirements: [InterfaceRequirement], minimum: OperationalState
    ) -> String {
        if requirements.isEmpty { return "the host is \(state.onlineState) (netdevd's configuration decides)" }
        return requirements.map { requirement in
            let needed = requirement.minimumState ?? minimum
            let links = state.links.filter { Glob.matches(requirement.pattern, $0.name) }
            let named =
                if links.isEmpty {
                    "none"
                } else if links.count > linksNamedPerLine {
                    quantity(links.count, "link")
                } else {
                    links.map { "\($0.name) \($0.operationalState)" }.joined(separator: ", ")
                }
            return "\(requirement.pattern) (needs \(needed.rawValue)): " + named
        }.joined(separator: "; ")
    }

    /// What is still missing, one line each (a requirement with more links short of it than
    /// ``NetdevWire/linksNamedPerLine`` gives their number); empty when the wait is over.
    static func waiting(
        _ state: StateReport,
        requirements: [InterfaceRequirement],
        minimum: OperationalState,
        any: Bool
    ) -> [String] {
        if requirements.isEmpty {
            guard state.onlineState != "online" else { return [] }
            // netdevd says what its [Online] configuration still waits for.
            return ["the host is \(state.onlineState); netdevd's [Online] configuration waits for:"]
                + (state.onlineMissing ?? []).map { "  " + $0 }
        }
        var missing: [String] = []
        var met = 0
        for requirement in requirements {
            let needed = requirement.minimumState ?? minimum
            let matching = state.links.filter { Glob.matches(requirement.pattern, $0.name) }
            if matching.isEmpty {
                missing.append("\(requirement.pattern): no such link yet (needs \(needed.rawValue))")
                continue
            }
            let short = matching.filter { (OperationalState(name: $0.operationalState) ?? .off) < needed }
            if short.isEmpty {
                met += 1
            } else {
                missing += shortLinkLines(
                    pattern: requirement.pattern, matching: matching.count, short: short.count,
                    naming: short.map { ($0.name, $0.operationalState) }, needs: needed.rawValue)
            }
        }
        return (any ? met > 0 : met == requirements.count) ? [] : missing
    }
}

/// What the wait last saw, for the timeout report.
final class WaitOutcome: Sendable {
    private let lastMissing = Locked(["no state from netdevd yet"])
    private let lastMet = Locked("")
    private let started = WaitOutcome.now()

    func record(_ missing: [String], met: String) {
        lastMissing.withLock { $0 = missing }
        lastMet.withLock { $0 = met }
    }

    /// What the last state met.
    var met: String { lastMet.withLock { $0 } }

    /// How long the wait has taken, as `0.4 s`.
    var elapsed: String {
        let tenths = (Self.now() - started + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// The monotonic clock in milliseconds.
    private static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
    }

    var satisfied: Bool {
        lastMissing.withLock { $0.isEmpty }
    }

    func timeoutReport() -> String {
        "netdevctl: timed out waiting; still missing:\n" + lastMissing.withLock { $0 }.map { "  \($0)\n" }.joined()
    }
}
