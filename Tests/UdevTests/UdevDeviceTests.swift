import Foundation
import Testing
import Udev

@Suite("UdevDevice")
struct UdevDeviceTests {
    @Test("a device value round-trips through JSON and knows its interface index")
    func codable() throws {
        let device = UdevDevice(
            syspath: "/sys/devices/virtual/net/veth0",
            sysname: "veth0",
            subsystem: "net",
            action: "add",
            sequenceNumber: 42,
            properties: ["IFINDEX": "7", "INTERFACE": "veth0"]
        )
        let decoded = try JSONDecoder().decode(UdevDevice.self, from: JSONEncoder().encode(device))
        #expect(decoded == device)
        #expect(device.interfaceIndex == 7)
        #expect(UdevDevice(syspath: "/sys/x", sysname: "x").interfaceIndex == nil)
    }
}
