import Foundation
import KernelTestSupport
import Testing

/// A server started for a test, stopped (and waited for) when the test is done.
final class Server {
    let process = Process()
    let log: String

    init(_ path: String, _ arguments: [String], log: String) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// A query Prometheus did not answer with samples.
struct QueryFailure: Error, CustomStringConvertible {
    let description: String
}

/// Prometheus' HTTP query API: the samples of an instant query, as labels and value.
func prometheusQuery(_ expression: String, port: Int) throws -> [(labels: [String: String], value: Double)] {
    var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
    components.queryItems = [URLQueryItem(name: "query", value: expression)]
    // Python's urllib: the test runs in a namespace of its own, and Foundation's HTTP client needs libcurl.
    let body = try run(
        "python3", "-c",
        "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())",
        components.string!)
    let reply = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
    guard reply?["status"] as? String == "success", let data = reply?["data"] as? [String: Any],
        let result = data["result"] as? [[String: Any]]
    else { throw QueryFailure(description: "\(expression): \(body)") }
    return result.compactMap { sample in
        guard let labels = sample["metric"] as? [String: String], let value = sample["value"] as? [Any],
            value.count == 2, let text = value[1] as? String, let number = Double(text)
        else { return nil }
        return (labels, number)
    }
}

@Suite(
    "Metrics through node_exporter and Prometheus", .serialized,
    .tags(.kernel), KernelHarness.enabled)
struct MetricsKernelTests {
    /// Present, or required (CI): then their absence fails the test instead of skipping it.
    static var serversOrRequired: Bool {
        servers.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
            || ProcessInfo.processInfo.environment["NETDEVD_REQUIRE_KERNEL_TESTS"] != nil
    }

    /// Where the servers are: `make test-kernel` unpacks Debian's packages there (NETDEVD_TEST_SERVERS), so that
    /// installing them starts no service; otherwise the installed ones.
    static let directory = ProcessInfo.processInfo.environment["NETDEVD_TEST_SERVERS"] ?? "/usr/bin"
    static let servers = ["prometheus", "prometheus-node-exporter", "promtool"].map { directory + "/" + $0 }

    @Test(
        "a veth made, raised, addressed and deleted is seen through Prometheus each time; its series then go",
        .enabled(
            if: serversOrRequired,
            "needs Debian's prometheus and prometheus-node-exporter: make test-kernel unpacks them"))
    func throughPrometheus() throws {
        let missing = Self.servers.filter { !FileManager.default.isExecutableFile(atPath: $0) }
        try #require(missing.isEmpty, "NETDEVD_REQUIRE_KERNEL_TESTS is set and these are missing: \(missing)")
        let work = NSTemporaryDirectory() + "netdevd-prometheus-\(UInt32.random(in: 0...UInt32.max))"
        let textfiles = work + "/textfile"
        try FileManager.default.createDirectory(atPath: textfiles, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        scrape_configs:
          - job_name: node
            static_configs:
              - targets: ['127.0.0.1:19100']
        """.write(toFile: work + "/prometheus.yml", atomically: true, encoding: .utf8)

        let daemon = try RunningDaemon(configuration: "[Metrics]\nTextfileDirectory=\(textfiles)\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let exporter = try Server(
            Self.directory + "/prometheus-node-exporter",
            [
                "--web.listen-address=127.0.0.1:19100", "--collector.disable-defaults", "--collector.textfile",
                "--collector.textfile.directory=\(textfiles)",
            ], log: work + "/node-exporter.log")
        let prometheus = try Server(
            Self.directory + "/prometheus",
            [
                "--config.file=\(work)/prometheus.yml", "--storage.tsdb.path=\(work)/data",
                "--web.listen-address=127.0.0.1:19090",
            ], log: work + "/prometheus.log")
        // Both live until the test ends (Swift may release a local after its last use, which would stop the server).
        defer { _ = (exporter, prometheus) }
        func value(_ expression: String) -> Double? {
            (try? prometheusQuery(expression, port: 19090))?.first?.value
        }
        /// Waits up to 20 s for `condition`; prints how long it took (the figure README gives).
        func seen(_ what: String, _ condition: () -> Bool) -> Bool {
            let start = Date()
            let ok = waitUntil(timeout: 20, condition)
            print("prometheus: \(what) after \(String(format: "%.2f", Date().timeIntervalSince(start))) s")
            return ok
        }
        let serving = seen("netdevd_build_info") { value("netdevd_build_info") == 1 }
        let logs = { () -> String in
            ["/node-exporter.log", "/prometheus.log"].compactMap {
                try? String(contentsOfFile: work + $0, encoding: .utf8)
            }
            .joined(separator: "\n")
        }
        try #require(serving, "Prometheus never had netdevd_build_info: \(logs().suffix(3000))")

        try ip("link", "add", "pm0", "type", "veth", "peer", "name", "pm1")
        defer { _ = try? ip("link", "del", "pm0") }
        for name in ["pm0", "pm1"] { try ip("link", "set", name, "addrgenmode", "none") }
        #expect(seen("pm0 off") { value(#"netdevd_link_operational_state{link="pm0",state="off"}"#) == 1 })
        #expect(value(#"netdevd_link_carrier{link="pm0"}"#) == 0)

        try ip("link", "set", "pm1", "up")
        try ip("link", "set", "pm0", "up")
        #expect(seen("pm0 carrier") { value(#"netdevd_link_operational_state{link="pm0",state="carrier"}"#) == 1 })
        #expect(value(#"netdevd_link_carrier{link="pm0"}"#) == 1)
        #expect(value(#"netdevd_link_operational_state{link="pm0",state="off"}"#) == 0)

        try ip("addr", "add", "192.0.2.55/24", "dev", "pm0")
        #expect(seen("pm0 routable") { value(#"netdevd_link_operational_state{link="pm0",state="routable"}"#) == 1 })
        #expect(value(#"netdevd_link_addresses{link="pm0"}"#) == 1)
        #expect((value(#"netdevd_link_state_changes_total{link="pm0"}"#) ?? 0) >= 2)
        let changed = value(#"netdevd_link_last_change_timestamp_seconds{link="pm0"}"#) ?? 0
        #expect(abs(changed - Date().timeIntervalSince1970) < 30)

        try ip("link", "del", "pm0")
        #expect(seen("pm0 gone") { (try? prometheusQuery(#"{link="pm0"}"#, port: 19090))?.isEmpty == true })
        #expect(value("node_textfile_scrape_error") == 0)

        // promtool's own check of the file node_exporter read (and of netdevctl's copy of it).
        let file = try String(contentsOfFile: textfiles + "/netdevd.prom", encoding: .utf8)
        let checked = try run([Self.directory + "/promtool", "check", "metrics"], input: file)
        #expect(checked.isEmpty, "promtool: \(checked)")
        let printed = try netdevctl(["metrics", "--socket", daemon.socket])
        #expect(printed.status == 0)
        #expect(printed.output.contains("# TYPE netdevd_link_operational_state gauge"))
        #expect(try run([Self.directory + "/promtool", "check", "metrics"], input: printed.output).isEmpty)

        // A stopped netdevd leaves no file for node_exporter to report as current.
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
        #expect(!FileManager.default.fileExists(atPath: textfiles + "/netdevd.prom"))
    }
}
