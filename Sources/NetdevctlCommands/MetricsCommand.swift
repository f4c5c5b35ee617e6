import CommandOptions
import NetdevWire
import Varlink

/// `netdevctl metrics`: netdevd's metrics in Prometheus' text exposition format, as `[Metrics] TextfileDirectory=`
/// writes them, for a look by hand or a collector of one's own.
struct MetricsCommand: NetdevctlCommand {
    static let name = "metrics"
    static let abstract = "Print netdevd's metrics in Prometheus' text format."
    static let discussion = """
        The same text netdevd writes to netdevd.prom when [Metrics] TextfileDirectory= is set (for
        node_exporter's textfile collector). With --json: {"text": ...}.
        """

    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        self.options = options
    }

    func run() throws {
        struct Reply: Codable {
            var text: String
        }
        let reply = try options.call("io.netdevd.GetMetrics", as: Reply.self)
        if options.printJSON(encoding: reply) { return }
        print(reply.text, terminator: "")
    }
}
