import JSONCoding
import KernelTestSupport
import NetdevDaemon
import NetdevWire
import SystemSupport
import Testing

@Suite("Reports written field by field")
struct ReportJSONTests {
    /// Text a field may hold: plain names, escapes, non-ASCII, keys that sort differently by bytes than by
    /// characters.
    static let texts = ["", "eth0", "a\"b", "back\\slash", "tab\there", "line\nfeed", "\u{1}", "é", "Z", "ü0", "/x/y"]

    static func text(_ generator: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...2, using: &generator)).map { _ in texts.randomElement(using: &generator)! }.joined()
    }

    static func optionalText(_ generator: inout SeededGenerator) -> String? {
        Bool.random(using: &generator) ? text(&generator) : nil
    }

    static func integer(_ generator: inout SeededGenerator) -> Int {
        [0, 1, -1, 9, 10, 65_535, Int.max, Int.min, Int.random(in: -1_000_000...1_000_000, using: &generator)]
            .randomElement(using: &generator)!
    }

    static func texts(_ generator: inout SeededGenerator) -> [String] {
        (0..<Int.random(in: 0...3, using: &generator)).map { _ in text(&generator) }
    }

    static func link(_ generator: inout SeededGenerator) -> LinkReport {
        LinkReport(
            index: integer(&generator), name: text(&generator), type: text(&generator),
            macAddress: optionalText(&generator), mtu: Bool.random(using: &generator) ? integer(&generator) : nil,
            operationalState: text(&generator), addresses: texts(&generator), gateways: texts(&generator))
    }

    static func device(_ generator: inout SeededGenerator) -> DeviceReport {
        var properties: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &generator) { properties[text(&generator)] = text(&generator) }
        return DeviceReport(
            syspath: text(&generator), sysname: text(&generator), subsystem: text(&generator),
            devtype: optionalText(&generator), devnode: optionalText(&generator), driver: optionalText(&generator),
            properties: DeviceProperties(properties))
    }

    static func change(_ generator: inout SeededGenerator) -> ChangeReport {
        var counts: [String: Int] = [:]
        for _ in 0..<Int.random(in: 0...3, using: &generator) { counts[text(&generator)] = integer(&generator) }
        return ChangeReport(
            sequence: integer(&generator), phase: text(&generator), onlineState: text(&generator),
            links: (0..<Int.random(in: 0...3, using: &generator)).map { _ in link(&generator) },
            removedLinks: (0..<Int.random(in: 0...3, using: &generator)).map { _ in integer(&generator) },
            devices: (0..<Int.random(in: 0...2, using: &generator)).map { _ in device(&generator) },
            removedDevices: texts(&generator), deviceCounts: counts, resyncs: integer(&generator),
            staleHookRunsDropped: integer(&generator),
            onlineMissing: Bool.random(using: &generator) ? texts(&generator) : nil)
    }

    @Test(
        "a monitor's change is byte for byte what the Codable encoder writes, over 2,000 random changes, appended after what the buffer held"
    )
    func changesMatchTheEncoder() throws {
        var generator = SeededGenerator(seed: 0x7265_706f)
        var buffer: [UInt8] = []
        for step in 0..<2_000 {
            let change = Self.change(&generator)
            let expected = try JSONTextEncoder().encode(["change": change])
            // Every fourth change starts a buffer of its own; the others follow the ones before, as in a frame.
            if step % 4 == 0 { buffer = Array("\(step):".utf8) }
            let before = buffer
            ReportJSON.appendChangeParameters(change, to: &buffer)
            #expect(buffer.starts(with: before), "step \(step): what the buffer held was changed")
            let written = Array(buffer[before.count...])
            #expect(
                written == expected, "step \(step): \(String(decoding: written, as: UTF8.self))")
            #expect(try JSONTextDecoder().decode([String: ChangeReport].self, from: written)["change"] == change)
        }
    }

    @Test("the state, with and without devices, and the device and link lists are what the encoder writes")
    func repliesMatchTheEncoder() throws {
        var generator = SeededGenerator(seed: 0x7374)
        for step in 0..<300 {
            let change = Self.change(&generator)
            let devices = Bool.random(using: &generator) ? change.devices : nil
            let state = StateReport(
                sequence: change.sequence, phase: change.phase, onlineState: change.onlineState, links: change.links,
                devices: devices, deviceCounts: change.deviceCounts, resyncs: change.resyncs,
                staleHookRunsDropped: change.staleHookRunsDropped, onlineMissing: change.onlineMissing)
            let encoder = JSONTextEncoder()
            #expect(ReportJSON.stateParameters(state) == (try encoder.encode(["state": state])), "step \(step)")
            #expect(ReportJSON.devicesParameters(change.devices) == (try encoder.encode(["devices": change.devices])))
            #expect(ReportJSON.linksParameters(change.links) == (try encoder.encode(["links": change.links])))
        }
    }

    @Test("a link and a device written after an element get their comma, and are what the encoder writes")
    func appendsAfterWhatIsThere() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<200 {
            let link = Self.link(&generator)
            var json = JSONOutput(capacity: 0)
            json.open("[")
            json.element(1)
            ReportJSON.append(&json, link)
            #expect(json.bytes == Array("[1,".utf8) + (try JSONTextEncoder().encode(link)))
            let device = Self.device(&generator)
            json = JSONOutput(capacity: 0)
            ReportJSON.append(&json, device)
            #expect(json.bytes == (try JSONTextEncoder().encode(device)))
        }
    }

    @Test("udev properties that are not UTF-8 (a link named \\xff) are written repaired, so the reply stays valid JSON")
    func repairsPropertiesThatAreNotUTF8() throws {
        let pairs: [(key: [UInt8], value: [UInt8])] = [
            (Array("INTERFACE".utf8), [0x6E, 0xFF, 0x62]), (Array("ID_MODEL".utf8), Array("disk\"é".utf8)),
            ([0x58, 0xC3], Array("cut".utf8)),
        ]
        let properties = DeviceProperties(byteList: pairs)
        let device = DeviceReport(
            syspath: "/sys/devices/virtual/net/n", sysname: "n", subsystem: "net", properties: properties)
        let written = ReportJSON.devicesParameters([device])
        #expect(String(validating: written, as: UTF8.self) != nil)
        #expect(written == (try JSONTextEncoder().encode(["devices": [device]])))
        let read = try JSONTextDecoder().decode([String: [DeviceReport]].self, from: written)["devices"]?.first
        #expect(read?.properties["INTERFACE"] == "n\u{FFFD}b")
        #expect(read?.properties["ID_MODEL"] == "disk\"é")
        #expect(read?.properties["X\u{FFFD}"] == "cut")
    }
}
