import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Synchronization
import Systemd
import Testing
import Varlink

@Suite("netdevctl without a daemon")
struct NetdevctlUsageTests {
    @Test("`netdevctl help links` shows the help of links; options before a command still apply to it")
    func helpAndGlobalOptions() throws {
        let help = try netdevctl(["help", "links"])
        #expect(help.status == 0)
        #expect(help.output.contains("USAGE: netdevctl links"), "\(help.output)\(help.errors)")
        let early = try netdevctl(["--json=short", "links", "--socket", "/nonexistent/io.netdevd"])
        #expect(early.status == 69)
        #expect(early.errors.contains("cannot connect to /nonexistent/io.netdevd"))
    }
}
