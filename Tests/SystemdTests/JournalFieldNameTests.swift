import Systemd
import Testing

@Suite("Journal field names")
struct JournalFieldNameTests {
    @Test(
        "normalising follows journald's rules",
        arguments: [
            ("ifname", "IFNAME"),
            ("NETDEVD_IFNAME", "NETDEVD_IFNAME"),
            ("net.dev-name", "NET_DEV_NAME"),
            ("_hidden", "HIDDEN"),
            ("__x", "X"),
            ("1abc", "F_1ABC"),
            ("", "FIELD"),
            ("___", "FIELD"),
            ("päß", "P__"),
            (String(repeating: "a", count: 100), String(repeating: "A", count: 64)),
        ]
    )
    func normalising(input: String, expected: String) throws {
        let name = JournalFieldName.normalizing(input)
        #expect(name.rawValue == expected)
        #expect(try JournalFieldName(validating: name.rawValue) == name)
    }

    @Test("validation rejects what journald would drop, saying why")
    func validation() throws {
        #expect(throws: JournalFieldNameError.empty) { try JournalFieldName(validating: "") }
        #expect(throws: JournalFieldNameError.badStart("_PID")) { try JournalFieldName(validating: "_PID") }
        #expect(throws: JournalFieldNameError.badStart("1X")) { try JournalFieldName(validating: "1X") }
        #expect(throws: JournalFieldNameError.badCharacter("ifname")) { try JournalFieldName(validating: "ifname") }
        let long = String(repeating: "A", count: 65)
        #expect(throws: JournalFieldNameError.tooLong(long)) { try JournalFieldName(validating: long) }
        #expect(try JournalFieldName(validating: "NETDEVD_IFINDEX").rawValue == "NETDEVD_IFINDEX")
        #expect(
            JournalFieldNameError.badCharacter("ifname").description
                == "journal field name 'ifname' may contain only A-Z, 0-9 and '_'"
        )
    }

    @Test("message ids are 32 hex digits; UUID dashes and upper case are accepted")
    func messageIDs() {
        #expect(JournalMessageID("7c8a41f37b764941a0e1780b1be2f037")?.hex == "7c8a41f37b764941a0e1780b1be2f037")
        #expect(JournalMessageID("7C8A41F3-7B76-4941-A0E1-780B1BE2F037")?.hex == "7c8a41f37b764941a0e1780b1be2f037")
        #expect(JournalMessageID("7c8a41f3") == nil)
        #expect(JournalMessageID("zz8a41f37b764941a0e1780b1be2f037") == nil)
    }
}

@Suite("Journal console fallback")
struct JournalConsoleTests {
    @Test("prefixed lines carry the priority on every line of the message")
    func prefixed() {
        let entry = JournalEntry(message: "first\nsecond", priority: .warning)
        #expect(Journal.prefixedLines(entry) == "<4>first\n<4>second\n")
        // CRLF (a hook's output, say): journald cuts at the "\n", so the next line must carry its priority too.
        let crlf = JournalEntry(message: "first\r\nsecond", priority: .warning)
        #expect(Journal.prefixedLines(crlf) == "<4>first\r\n<4>second\n")
    }

    @Test("readable lines show identifier, level, message and custom fields")
    func readable() {
        var entry = JournalEntry(message: "veth0 is routable", priority: .info)
        entry.append(.syslogIdentifier, "netdevd")
        entry.append(.normalizing("NETDEVD_IFNAME"), "veth0")
        entry.append(.codeLine, "12")
        #expect(Journal.readableLine(entry) == "netdevd[info]: veth0 is routable NETDEVD_IFNAME=veth0\n")
    }
}
