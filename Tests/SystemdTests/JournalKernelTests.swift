import Foundation
import KernelTestSupport
import Logging
import Systemd
import Testing

@Suite(
    "Journal against a private journald", .serialized, .tags(.kernel), KernelHarness.enabled)
struct JournalKernelTests {
    @Test("an entry arrives with its custom fields, MESSAGE_ID, and values with newlines or binary bytes intact")
    func entryReadBack() throws {
        let id = try #require(JournalMessageID("4b1a2f3c9d8e47f6a5b4c3d2e1f00a01"))
        let marker = "run-\(UInt32.random(in: 0...UInt32.max))"
        var entry = JournalEntry(message: "veth0 is routable", priority: .notice, messageID: id)
        entry.append(.normalizing("NETDEVD_IFNAME"), "veth0")
        entry.append(.normalizing("NETDEVD_TEST_MARKER"), marker)
        entry.append(.normalizing("NETDEVD_MULTILINE"), "one\ntwo")
        entry.append(.normalizing("NETDEVD_BINARY"), bytes: [0, 1, 2, 255])
        entry.append(.normalizing("NETDEVD_REPEATED"), "a")
        entry.append(.normalizing("NETDEVD_REPEATED"), "b")
        let journal = Journal(identifier: "netdevd-test", target: .journal)
        try journal.send(entry)
        var found: [[String: Any]] = []
        _ = try waitUntil {
            found = try jsonObjects(run("journalctl", "--no-pager", "-o", "json", "NETDEVD_TEST_MARKER=\(marker)"))
            return !found.isEmpty
        }
        let fields = try #require(found.first)
        #expect(fields["MESSAGE"] as? String == "veth0 is routable")
        #expect(fields["PRIORITY"] as? String == "5")
        #expect(fields["MESSAGE_ID"] as? String == id.hex)
        #expect(fields["SYSLOG_IDENTIFIER"] as? String == "netdevd-test")
        #expect(fields["NETDEVD_IFNAME"] as? String == "veth0")
        #expect(fields["NETDEVD_MULTILINE"] as? String == "one\ntwo")
        #expect(fields["NETDEVD_BINARY"] as? [Int] == [0, 1, 2, 255])
        #expect(fields["NETDEVD_REPEATED"] as? [String] == ["a", "b"])
    }

    @Test("an entry larger than a datagram (9 MiB) arrives whole, through a sealed memfd")
    func largeEntry() throws {
        let marker = "large-\(UInt32.random(in: 0...UInt32.max))"
        // Over the 8 MiB send buffer netdevd asks for: a datagram that large cannot be sent.
        var entry = JournalEntry(message: String(repeating: "x", count: 9 << 20), priority: .info)
        entry.append(.normalizing("NETDEVD_TEST_MARKER"), marker)
        try Journal(identifier: "netdevd-test", target: .journal).send(entry)
        var found: [[String: Any]] = []
        _ = try waitUntil {
            found = try jsonObjects(
                run("journalctl", "--no-pager", "--all", "-o", "json", "NETDEVD_TEST_MARKER=\(marker)"))
            return !found.isEmpty
        }
        let message = try #require(found.first?["MESSAGE"] as? String)
        #expect(message.utf8.count == 9 << 20 && message.utf8.allSatisfy { $0 == UInt8(ascii: "x") })
    }

    @Test("the log handler writes level, source location, label and metadata as fields")
    func logHandler() throws {
        let marker = "log-\(UInt32.random(in: 0...UInt32.max))"
        let journal = Journal(identifier: "netdevd-test", target: .journal)
        var logger = Logger(label: "netdevd.test") { label in JournalLogHandler(label: label, journal: journal) }
        logger[metadataKey: "ifname"] = "eth7"
        logger.warning(
            "link went down",
            metadata: ["netdevd.marker": "\(marker)", "MESSAGE_ID": "4b1a2f3c-9d8e-47f6-a5b4-c3d2e1f00a02"]
        )
        var found: [[String: Any]] = []
        _ = try waitUntil {
            found = try jsonObjects(run("journalctl", "--no-pager", "-o", "json", "NETDEVD_MARKER=\(marker)"))
            return !found.isEmpty
        }
        let fields = try #require(found.first)
        #expect(fields["MESSAGE"] as? String == "link went down")
        #expect(fields["PRIORITY"] as? String == "4")
        #expect(fields["IFNAME"] as? String == "eth7")
        #expect(fields["LOGGER"] as? String == "netdevd.test")
        #expect(fields["MESSAGE_ID"] as? String == "4b1a2f3c9d8e47f6a5b4c3d2e1f00a02")
        #expect((fields["CODE_FILE"] as? String)?.hasSuffix("JournalKernelTests.swift") == true)
        #expect(fields["CODE_LINE"] as? String != nil)
    }
}
