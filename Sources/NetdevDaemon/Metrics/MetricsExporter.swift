import JSONCoding
import Locking
public import NetdevSession
import Prometheus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// netdevd's metrics in Prometheus' text exposition format, made with swift-prometheus' registry: per link its
/// operational state (one 0/1 series per state), carrier, address count, state changes and the time of the last
/// change; the host's online state; devices per subsystem; events, monitor overflows, resyncs, hook runs and
/// control clients; build information.
///
/// The registry is made at the first ``render(_:clients:)`` (a netdevd whose metrics nobody reads never runs
/// swift-prometheus' code) and then follows the model at each: series of a link that went away (or was renamed)
/// are unregistered, so none accumulate. Renders are serialised by a ``Locked``; each costs a pass over the links
/// and devices, so it runs only when a file is due or a client asks.
public final class MetricsExporter: Sendable {
    /// The registry and every series in it.
    private struct Series {
        let registry = PrometheusCollectorRegistry()
        let events: Counter
        let resyncs: Counter
        let dropped: Counter
        let clients: Gauge
        let online: [(OnlineState, Gauge)]
        var overflows: [String: Counter] = [:]
        /// The per-link families, written beside the registry's text (``LinkMetricsText``).
        var links = LinkMetricsText(
            names: [Family.linkState, .carrier, .addresses, .stateChanges, .lastChange].map { family in
                let descriptor = family.descriptor
                return (descriptor.name, descriptor.helpText ?? "", family == .stateChanges ? "counter" : "gauge")
            })
        var devices: [String: Gauge] = [:]
        var hooks: [String: (started: Counter, failed: Counter)] = [:]

        init(version: String) {
            let registry = registry
            registry.makeGauge(descriptor: Family.buildInfo.descriptor, labels: [("version", version)]).set(to: 1)
            events = registry.makeCounter(descriptor: Family.events.descriptor)
            resyncs = registry.makeCounter(descriptor: Family.resyncs.descriptor)
            dropped = registry.makeCounter(descriptor: Family.dropped.descriptor)
            clients = registry.makeGauge(descriptor: Family.clients.descriptor)
            online = OnlineState.allCases.map { state in
                (state, registry.makeGauge(descriptor: Family.online.descriptor, labels: [("state", state.rawValue)]))
            }
            for monitor in MonitorSource.allCases {
                overflows[monitor.rawValue] = counter(.overflows, [("monitor", monitor.rawValue)])
            }
        }

        func gauge(_ family: Family, _ labels: [(String, String)]) -> Gauge {
            registry.makeGauge(descriptor: family.descriptor, labels: labels)
        }

        func counter(_ family: Family, _ labels: [(String, String)]) -> Counter {
            registry.makeCounter(descriptor: family.descriptor, labels: labels)
        }
    }

    private let recorder: MetricsRecorder
    private let version: String
    private let series = Locked<Series?>(nil)

    /// An exporter of `recorder`'s counts and the models given to ``render(_:clients:)``; `version` is netdevd's.
    public init(recorder: MetricsRecorder, version: String) {
        self.recorder = recorder
        self.version = version
    }

    /// The text exposition of `model` and the recorder's counts, with `clients` control connections open.
    public func render(_ model: Model, clients connections: Int) -> [UInt8] {
        var whole: [UInt8] = []
        // One piece: the buffer the render made, taken as it is.
        render(model, clients: connections, chunk: .max) { (piece: [UInt8]) throws(Never) in whole = piece }
        return whole
    }

    /// The text of ``render(_:clients:)`` handed to `write` as it is made, in pieces of at least `chunk` bytes (at
    /// most a block of the per-link lines, about 80 KB, more; the last may be less): a file at 20,000 links is
    /// written without its 12 MB in memory at once. An error `write` throws ends the render.
    public func render<Failure: Error>(
        _ model: Model, clients connections: Int, chunk: Int, to write: ([UInt8]) throws(Failure) -> Void
    ) throws(Failure) {
        let rest = try withSeries { series, counts, events throws(Failure) in
            var text = Self.setAndEmit(model, counts, events: events, clients: connections, into: &series)
            try series.links.render(model, counts, into: &text, chunk: chunk, flush: write)
            return text
        }
        if !rest.isEmpty { try write(rest) }
    }

    /// `GetMetrics`' reply parameters, `{"text": ...}`, the text of ``render(_:clients:)`` as a JSON string written
    /// as it is made (at 20,000 links, not 12 MB of text and then 15 MB of reply with it copied in).
    public func replyParameters(_ model: Model, clients connections: Int) -> [UInt8] {
        var reply: [UInt8] = []
        replyParameters(model, clients: connections, into: &reply)
        return reply
    }

    /// ``replyParameters(_:clients:)`` appended to `reply`: written straight into the reply's message, not made and
    /// then copied into it (at 20,000 links two 12 MB buffers at once, the highest RSS netdevd reached there).
    public func replyParameters(_ model: Model, clients connections: Int, into reply: inout [UInt8]) {
        withSeries { series, counts, events in
            let text = Self.setAndEmit(model, counts, events: events, clients: connections, into: &series)
            reply += #"{"text":"#.utf8
            JSONString.append(utf8: text, to: &reply)
            // The string goes on with the links' families: its closing quote comes after them.
            reply.removeLast()
            series.links.render(model, counts, into: &reply, quoted: true)
            reply += #""}"#.utf8
        }
    }

    /// Runs `body` with the series (made at the first call), the recorder's counts and its events taken, all under
    /// the lock: a counter is set by a reset and an increment, which no emit may fall between; and of two renders
    /// at once, the later never publishes older counts.
    private func withSeries<Result, Failure: Error>(
        _ body: (inout Series, MetricsRecorder.Counts, Int) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try series.withLock { made throws(Failure) in
            let counts = recorder.snapshot()
            let events = recorder.eventCount
            if made == nil { made = Series(version: version) }
            return try body(&made!, counts, events)
        }
    }

    /// Sets every series from `model` and `counts` (in place: the tables are not copied) and returns the registry's
    /// text (every family but the links').
    private static func setAndEmit(
        _ model: Model, _ counts: MetricsRecorder.Counts, events: Int, clients: Int, into series: inout Series
    ) -> [UInt8] {
        set(series.events, to: events)
        set(series.resyncs, to: model.counters.resyncs)
        set(series.dropped, to: model.counters.staleHookRunsDropped)
        series.clients.set(to: Double(clients))
        let online = model.onlineState
        for (state, gauge) in series.online { gauge.set(to: state == online ? 1 : 0) }
        for (monitor, count) in counts.overflows {
            let counter = series.overflows[monitor] ?? series.counter(.overflows, [("monitor", monitor)])
            series.overflows[monitor] = counter
            set(counter, to: count)
        }
        renderDevices(model, into: &series)
        for (name, hook) in counts.hooks {
            let counters =
                series.hooks[name]
                ?? (series.counter(.started, [("hook", name)]), series.counter(.failed, [("hook", name)]))
            series.hooks[name] = counters
            set(counters.started, to: hook.started)
            set(counters.failed, to: hook.failed)
        }
        // Into a buffer of its own: the registry's emitToBuffer() keeps its buffer (600 KB at 1,000 links) for good.
        var text: [UInt8] = []
        series.registry.emit(into: &text)
        return text
    }

    private static func renderDevices(_ model: Model, into series: inout Series) {
        var perSubsystem = model.deviceCounts
        for subsystem in model.configuration.trackedSubsystems where perSubsystem[subsystem] == nil {
            perSubsystem[subsystem] = 0
        }
        for (subsystem, gauge) in series.devices where perSubsystem[subsystem] == nil {
            series.registry.unregisterGauge(gauge)
            series.devices[subsystem] = nil
        }
        for (subsystem, count) in perSubsystem {
            let devices = series.devices[subsystem] ?? series.gauge(.devices, [("subsystem", subsystem)])
            devices.set(to: Double(count))
            series.devices[subsystem] = devices
        }
    }

    /// Sets a counter to a count kept elsewhere (counts only grow, so the series still only grows).
    private static func set(_ counter: Counter, to value: Int) {
        counter.reset()
        counter.increment(by: Int64(value))
    }

    /// The metric names (`netdevd_` and Prometheus' suffixes) and their `# HELP` texts.
    private enum Family {
        case buildInfo, events, resyncs, dropped, clients, online, overflows, started, failed
        case linkState, carrier, addresses, stateChanges, lastChange, devices

        var descriptor: MetricNameDescriptor {
            let (name, unit, help) =
                switch self {
                case .buildInfo: ("build_info", "", "netdevd's version; always 1.")
                case .events:
                    (
                        "events_total", "",
                        "Events the loop took: kernel and udev messages, timers, signals, hook results."
                    )
                case .resyncs: ("resyncs_total", "", "Re-readings of links and devices after a monitor lost events.")
                case .dropped:
                    (
                        "hook_runs_dropped_total", "",
                        "Queued hook runs dropped because a newer run of the same link or device replaced them."
                    )
                case .clients:
                    ("control_clients", "", "Control connections open (netdevctl and other Varlink clients).")
                case .online:
                    ("online_state", "", "The host's online state: 1 for the state it is in, 0 for the others.")
                case .overflows:
                    (
                        "monitor_overflows_total", "",
                        "Times a monitor's receive buffer overflowed and events were lost (each starts a resync)."
                    )
                case .started: ("hook_runs_started_total", "", "Runs of this hook that were started.")
                case .failed:
                    (
                        "hook_runs_failed_total", "",
                        "Runs of this hook that failed: exited non-zero, were killed, timed out, or could not start."
                    )
                case .linkState:
                    (
                        "link_operational_state", "",
                        "A link's operational state (networkd's terms): 1 for the state it is in, 0 for the others."
                    )
                case .carrier: ("link_carrier", "", "1 when the link's driver signals carrier (IFF_LOWER_UP).")
                case .addresses: ("link_addresses", "", "IP addresses on the link.")
                case .stateChanges:
                    (
                        "link_state_changes_total", "",
                        "Operational state changes of the link since netdevd first saw it."
                    )
                case .lastChange:
                    (
                        "link_last_change_timestamp", "seconds",
                        "Unix time of the link's last operational state change, or of when netdevd first saw it."
                    )
                case .devices: ("devices", "", "Devices of a tracked udev subsystem.")
                }
            return MetricNameDescriptor(namespace: "netdevd", metricName: name, unitName: unit, helpText: help)
        }
    }
}
