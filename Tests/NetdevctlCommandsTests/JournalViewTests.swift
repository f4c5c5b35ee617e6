import CommandOptions
import Foundation
import JSONCoding
import Systemd
import Testing

@testable import NetdevctlCommands

@Suite("netdevctl log: times, counts and what an entry must carry", .serialized)
struct JournalViewTests {
    /// 2026-11-26 12:00:00 local time, in µs since the epoch.
    static let noon: UInt64 = {
        var parts = tm()
        parts.tm_year = 126
        parts.tm_mon = 10
        parts.tm_mday = 26
        parts.tm_hour = 12
        parts.tm_isdst = -1
        return UInt64(mktime(&parts)) * 1_000_000
    }()

    @Test("--since takes journalctl's forms: dates, times of today, now, today, yesterday, relative spans, @epoch")
    func since() {
        let noon = Self.noon
        let hour: UInt64 = 3_600_000_000
        #expect(JournalTime.parse("now", now: noon) == noon)
        #expect(JournalTime.parse("today", now: noon) == noon - 12 * hour)
        #expect(JournalTime.parse("yesterday", now: noon) == noon - 36 * hour)
        #expect(JournalTime.parse("2026-11-26", now: noon) == noon - 12 * hour)
        #expect(JournalTime.parse("2026-11-26 12:00", now: noon) == noon)
        #expect(JournalTime.parse("2026-11-26T11:30:15", now: noon) == noon - hour / 2 + 15_000_000)
        #expect(JournalTime.parse("10:00", now: noon) == noon - 2 * hour)
        #expect(JournalTime.parse("-30min", now: noon) == noon - hour / 2)
        #expect(JournalTime.parse("2 h ago", now: noon) == noon - 2 * hour)
        #expect(JournalTime.parse("-1d", now: noon) == noon - 24 * hour)
        #expect(JournalTime.parse("@1700000000", now: noon) == 1_700_000_000_000_000)
        let wrongs = [
            "", "soon", "2026-13-01", "2026-02-30", "25:00", "12:61", "-5parsecs", "@-1", "1 2 3", "-", "ago",
            // Spans longer than the epoch's age, or than 64 bits of microseconds, are no time either.
            "-300000000d", "40000000w ago", "-99999999999999999999s", "-100000w",
        ]
        for wrong in wrongs {
            #expect(JournalTime.parse(wrong, now: noon) == nil, "'\(wrong)' was taken")
        }
    }

    @Test("a time on a day the clocks change is that time on the wall clock, not midnight's offset plus hours")
    func daylightSaving() {
        setenv("TZ", "Europe/Berlin", 1)
        tzset()
        defer {
            unsetenv("TZ")
            tzset()
        }
        // 2026-03-29: 02:00 CET became 03:00 CEST. 12:00 CEST is 10:00 UTC.
        let noonUTC: UInt64 = 1_774_778_400_000_000
        #expect(JournalTime.parse("2026-03-29 12:00") == noonUTC)
        #expect(JournalTime.parse("12:00", now: noonUTC + 3_600_000_000) == noonUTC)
        #expect(JournalTime.parse("2026-03-29") == noonUTC - 11 * 3_600_000_000)
    }

    @Test("entries print as journalctl's short form, or as one JSON object with netdevd's fields")
    func format() throws {
        let record = JournalRecordFixture.make(
            time: 1_700_000_000_123_456,
            [
                "MESSAGE": "veth0 is routable", "SYSLOG_IDENTIFIER": "netdevd", "_PID": "812", "PRIORITY": "5",
                "NETDEVD_IFNAME": "veth0", "MESSAGE_ID": "4d0b1a6f8e2c4b7e9a31c5d2e7f80a13", "_HOSTNAME": "h",
            ])
        let view = JournalView(subject: "veth0", count: 10)
        #expect(
            view.line(record)
                == "\(JournalTime.short(record.realtimeMicroseconds)) netdevd[812]: veth0 is routable")
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(try JSONTextEncoder().encode(view.object(record))))
                as? [String: Any])
        #expect(object["time"] as? String == "2023-11-14T22:13:20.123456Z")
        #expect(object["message"] as? String == "veth0 is routable")
        #expect(object["priority"] as? Int == 5 && object["pid"] as? Int == 812)
        #expect(object["NETDEVD_IFNAME"] as? String == "veth0")
        #expect(object["messageId"] as? String == "4d0b1a6f8e2c4b7e9a31c5d2e7f80a13")
        #expect(object["_HOSTNAME"] == nil)
    }

    @Test("only netdevd's entries (identifier or unit), about a link by name or a device by name or path")
    func matches() throws {
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("sysfs-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let device = sysfs + "/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.0/ttyUSB0/tty/ttyUSB0"
        try FileManager.default.createDirectory(atPath: device, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: sysfs + "/class/tty", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: sysfs + "/class/tty/ttyUSB0", withDestinationPath: device)
        #expect(
            JournalView.subjectMatches("ttyUSB0", sysfs: sysfs).map(\.value) == ["ttyUSB0", device])
        #expect(JournalView.subjectMatches("eth9", sysfs: sysfs) == [JournalMatch("NETDEVD_IFNAME", "eth9")])
        #expect(
            JournalView.subjectMatches("/devices/virtual/net/lo")
                == [JournalMatch("NETDEVD_DEVPATH", "/sys/devices/virtual/net/lo")])
        #expect(
            JournalView.subjectMatches("/sys/devices/virtual/net/lo")
                == [JournalMatch("NETDEVD_DEVPATH", "/sys/devices/virtual/net/lo")])
        // A name is never a path into /sys/class.
        #expect(JournalView.subjectMatches("../tty", sysfs: sysfs).count == 1)
        let all = JournalView(subject: nil, count: nil).matches
        #expect(
            all == [[JournalMatch("SYSLOG_IDENTIFIER", "netdevd")], [JournalMatch("_SYSTEMD_UNIT", "netdevd.service")]])
        let one = JournalView(subject: "eth9", count: nil).matches
        #expect(
            one == [
                [JournalMatch("NETDEVD_IFNAME", "eth9"), JournalMatch("SYSLOG_IDENTIFIER", "netdevd")],
                [JournalMatch("NETDEVD_IFNAME", "eth9"), JournalMatch("_SYSTEMD_UNIT", "netdevd.service")],
            ])
    }

    @Test("-n takes 0 or more (a huge count is every entry); --since that does not parse names the forms")
    func commandLine() throws {
        func view(_ arguments: [String]) throws(UsageError) -> JournalView {
            try JournalView(LogCommand.spec.parse(arguments), spec: LogCommand.spec)
        }
        #expect(try view(["-n", "0"]).count == 0)
        #expect(try view(["-n", "99999999999999999999999"]).count == Int.max)
        #expect(try view(["eth0"]).count == nil && view(["eth0"]).subject == "eth0")
        for wrong in [["-n", "-3"], ["-n", "ten"], ["-n", ""]] {
            #expect(throws: UsageError.self) { try view(wrong) }
        }
        do {
            _ = try view(["--since", "last tuesday"])
            Issue.record("a time that does not parse was taken")
        } catch {
            #expect(error.message.contains("'--since last tuesday' is not a time") && error.message.contains("HH:MM"))
        }
    }
}

enum JournalRecordFixture {
    /// An entry with `fields` (in name order), received at `time`.
    static func make(time: UInt64, _ fields: [String: String]) -> JournalRecord {
        JournalRecord(
            realtimeMicroseconds: time,
            fields: fields.sorted { $0.key < $1.key }.map {
                JournalRecordField(name: $0.key, value: Array($0.value.utf8))
            })
    }
}
