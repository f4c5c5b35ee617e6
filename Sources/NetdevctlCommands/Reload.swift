import CommandOptions
import NetdevWire
import Varlink

/// `netdevctl reload`: returns once netdevd has re-read its configuration; says which lines it ignored, and exits 1
/// with the reasons when it kept the previous configuration.
struct Reload: NetdevctlCommand {
    static let name = "reload"
    static let abstract = "Make netdevd re-read its configuration (root only); say what it ignored or refused."

    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        self.options = options
    }

    func run() throws {
        let client = try options.client()
        let reply: [String: JSONValue]
        do {
            reply = try client.call("io.netdevd.Reload")
        } catch .error(name: "io.netdevd.ConfigurationRejected", let parameters) {
            let errors = parameters["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
            throw CommandFailure(
                status: 1,
                message: "netdevctl: netdevd kept its previous configuration; the new one cannot be read:\n"
                    + errors.map { "  \($0)" }.joined(separator: "\n"))
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: io.netdevd.Reload failed: \(error)")
        }
        let warnings = reply["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !warnings.isEmpty {
            writeToStandardError(
                "netdevctl: reloaded; netdevd ignored \(quantity(warnings.count, "line")):\n"
                    + warnings.map { "  \($0)\n" }.joined())
        }
    }
}
