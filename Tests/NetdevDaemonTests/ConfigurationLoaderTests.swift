import Foundation
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing

@Suite("Configuration files")
struct ConfigurationLoaderTests {
    @Test("every documented key is read")
    func keys() {
        let text = """
            # netdevd.conf
            [Online]
            RequiredInterfaces=eth* wl?0:degraded
            IgnoredInterfaces=veth* docker0
            MinimumOperationalState=degraded
            RequiredFamily=ipv6

            [Devices]
            Subsystems=
            Subsystems=net tty

            [Hooks]
            TimeoutSec=1min 30s
            DebounceSec=500ms
            Parallelism=8

            [Daemon]
            StopTimeoutSec=20
            """
        guard case .loaded(let configuration, let warnings) = ConfigurationLoader.parse(text) else {
            Issue.record("expected the file to load")
            return
        }
        #expect(warnings.isEmpty)
        #expect(
            configuration.requiredInterfaces == [
                InterfaceRequirement(pattern: "eth*"), InterfaceRequirement(pattern: "wl?0", minimumState: .degraded),
            ])
        #expect(configuration.ignoredInterfaces == ["veth*", "docker0"])
        #expect(configuration.minimumOperationalState == .degraded)
        #expect(configuration.requiredFamily == .ipv6)
        #expect(configuration.trackedSubsystems == ["net", "tty"])
        #expect(configuration.hookTimeoutMilliseconds == 90_000)
        #expect(configuration.debounceMilliseconds == 500)
        #expect(configuration.hookParallelism == 8)
        #expect(configuration.stopTimeoutMilliseconds == 20_000)
    }

    @Test("errors name file and line, and suggest the key that was meant")
    func errors() {
        let text = """
            [Online]
            Requiredinterface=eth0
            MinimumOperationalState=fast
            [Hook]
            Parallelism 4
            [Hooks]
            RequiredFamily=ipv4
            Parallelism=0
            """
        guard case .rejected(let errors) = ConfigurationLoader.parse(text, file: "/etc/netdevd/netdevd.conf") else {
            Issue.record("expected errors")
            return
        }
        #expect(
            errors.map(\.description) == [
                "/etc/netdevd/netdevd.conf:2: unknown key 'Requiredinterface' in [Online], did you mean 'RequiredInterfaces'?",
                "/etc/netdevd/netdevd.conf:3: MinimumOperationalState='fast' must be one of off, no-carrier, dormant, carrier, degraded, routable",
                "/etc/netdevd/netdevd.conf:4: unknown section '[Hook]', did you mean '[Hooks]'?",
                "/etc/netdevd/netdevd.conf:5: expected 'Key=Value', found 'Parallelism 4'",
                "/etc/netdevd/netdevd.conf:7: 'RequiredFamily=' belongs in [Online], not [Hooks]",
                "/etc/netdevd/netdevd.conf:8: Parallelism='0' must be a number from 1 to 64",
            ])
    }

    @Test("drop-ins are read in lexical order after the main file; later ones win; no file gives the defaults")
    func dropIns() throws {
        let directory = NSTemporaryDirectory() + "netdevd-conf-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(
            atPath: directory + "/netdevd.conf.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loader = ConfigurationLoader(mainFile: directory + "/netdevd.conf")
        #expect(loader.load() == .loaded(Configuration(), warnings: []))
        try "[Hooks]\nParallelism=2\n".write(toFile: directory + "/netdevd.conf", atomically: true, encoding: .utf8)
        try "[Hooks]\nParallelism=3\n".write(
            toFile: directory + "/netdevd.conf.d/20-b.conf", atomically: true, encoding: .utf8)
        try "[Hooks]\nParallelism=9\n".write(
            toFile: directory + "/netdevd.conf.d/10-a.conf", atomically: true, encoding: .utf8)
        try "ignored".write(toFile: directory + "/netdevd.conf.d/README", atomically: true, encoding: .utf8)
        guard case .loaded(let configuration, _) = loader.load() else {
            Issue.record("expected the files to load")
            return
        }
        #expect(configuration.hookParallelism == 3)
        try "[Hooks]\nParallelism=many\n".write(
            toFile: directory + "/netdevd.conf.d/30-bad.conf", atomically: true, encoding: .utf8)
        #expect(
            loader.load()
                == .rejected([
                    Diagnostic(
                        file: directory + "/netdevd.conf.d/30-bad.conf", line: 2,
                        message: "Parallelism='many' must be a number from 1 to 64")
                ]))
    }

    @Test("time spans in systemd's syntax")
    func timeSpans() {
        #expect(TimeSpan.milliseconds("30") == 30_000)
        #expect(TimeSpan.milliseconds("30s") == 30_000)
        #expect(TimeSpan.milliseconds("500ms") == 500)
        #expect(TimeSpan.milliseconds("2min") == 120_000)
        #expect(TimeSpan.milliseconds("1min 30s") == 90_000)
        #expect(TimeSpan.milliseconds("1h") == 3_600_000)
        #expect(TimeSpan.milliseconds("soon") == nil)
        #expect(TimeSpan.milliseconds("5 parsecs") == nil)
        #expect(TimeSpan.milliseconds("-1") == nil)
    }
}
