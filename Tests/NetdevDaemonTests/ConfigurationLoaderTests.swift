import Foundation
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing

extension ConfigurationLoader.Outcome {
    /// The warnings of a loaded configuration, as `file:line: message`; `nil` when it was rejected.
    var warnings: [String]? {
        guard case .loaded(_, let warnings) = self else { return nil }
        return warnings.map(\.description)
    }
}

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

    @Test("[Metrics] TextfileDirectory=: an absolute path, empty for none; anything else names what is wrong")
    func metricsDirectory() {
        guard case .loaded(let set, _) = ConfigurationLoader.parse("[Metrics]\nTextfileDirectory=/var/lib/node exp"),
            case .loaded(let reset, _) = ConfigurationLoader.parse(
                "[Metrics]\nTextfileDirectory=/a\nTextfileDirectory=")
        else {
            Issue.record("expected both to load")
            return
        }
        #expect(set.metricsTextfileDirectory == "/var/lib/node exp")
        if case .loaded(let slashed, _) = ConfigurationLoader.parse("[Metrics]\nTextfileDirectory=/run/x//") {
            #expect(slashed.metricsTextfileDirectory == "/run/x")
        } else {
            Issue.record("expected /run/x// to load")
        }
        #expect(reset.metricsTextfileDirectory == nil)
        #expect(Configuration().metricsTextfileDirectory == nil)
        guard
            case .loaded(let kept, let warnings) = ConfigurationLoader.parse(
                "[Metrics]\nTextfileDirectory=prom\nTextfileDirectory=/var/../tmp", file: "f")
        else {
            Issue.record("expected the file to load, with warnings")
            return
        }
        #expect(
            warnings.map(\.description) == [
                "f:2: TextfileDirectory='prom' must be an absolute path, such as /var/lib/prometheus/node-exporter; "
                    + "the line is ignored",
                "f:3: TextfileDirectory='/var/../tmp' must not contain '.' or '..'; the line is ignored",
            ])
        #expect(kept.metricsTextfileDirectory == nil)
    }

    @Test("a line not understood is a warning naming file and line, with the key or section meant; it is ignored")
    func errors() {
        let text = """
            [Online]
            Requiredinterface=eth0
            MinimumOperationalState=fast
            [Hook]
            Parallelism 4
            TimeoutSec=5
            [Hooks]
            RequiredFamily=ipv4
            Parallelism=0
            DebounceSec=2s
            """
        guard
            case .loaded(let configuration, let warnings) = ConfigurationLoader.parse(
                text, file: "/etc/netdevd/netdevd.conf")
        else {
            Issue.record("expected the file to load, with warnings")
            return
        }
        #expect(
            warnings.map(\.description)
                == [
                    "/etc/netdevd/netdevd.conf:2: unknown key 'Requiredinterface' in [Online], did you mean 'RequiredInterfaces'?",
                    "/etc/netdevd/netdevd.conf:3: MinimumOperationalState='fast' must be one of off, no-carrier, dormant, carrier, degraded, routable",
                    "/etc/netdevd/netdevd.conf:4: unknown section '[Hook]', did you mean '[Hooks]'?",
                    "/etc/netdevd/netdevd.conf:5: expected 'Key=Value', found 'Parallelism 4'",
                    "/etc/netdevd/netdevd.conf:6: 'TimeoutSec=' is under the unknown section [Hook]; it belongs in [Hooks]",
                    "/etc/netdevd/netdevd.conf:8: 'RequiredFamily=' belongs in [Online], not [Hooks]",
                    "/etc/netdevd/netdevd.conf:9: Parallelism='0' must be a number from 1 to 64",
                ].map { $0 + "; the line is ignored" })
        // What was understood is taken; the rest keeps its defaults.
        #expect(configuration.debounceMilliseconds == 2_000)
        #expect(configuration.requiredInterfaces.isEmpty && configuration.minimumOperationalState == .routable)
        #expect(configuration.hookParallelism == Configuration().hookParallelism)
        #expect(configuration.hookTimeoutMilliseconds == Configuration().hookTimeoutMilliseconds)
        #expect(
            ConfigurationLoader.parse("TimeoutSec=5", file: "a").warnings
                == ["a:1: 'TimeoutSec=' must be inside a section: [Hooks]; the line is ignored"])
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
        // A value that does not parse leaves the earlier files' value in force.
        #expect(
            loader.load()
                == .loaded(
                    Configuration(hookParallelism: 3),
                    warnings: [
                        Diagnostic(
                            file: directory + "/netdevd.conf.d/30-bad.conf", line: 2,
                            message: "Parallelism='many' must be a number from 1 to 64; the line is ignored")
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

    @Test("time spans: infinity, days and weeks; nothing too large, negative, NaN or half-written gets through")
    func timeSpanEdges() {
        #expect(TimeSpan.parse("infinity") == .success(.infinity))
        #expect(TimeSpan.parse(" infinity ") == .success(.infinity))
        #expect(TimeSpan.parse("2d") == .success(.finite(milliseconds: 172_800_000)))
        #expect(TimeSpan.parse("1w 1d") == .success(.finite(milliseconds: 691_200_000)))
        #expect(TimeSpan.parse("1.5s") == .success(.finite(milliseconds: 1_500)))
        #expect(TimeSpan.parse("0") == .success(.finite(milliseconds: 0)))
        #expect(TimeSpan.parse("365d") == .success(.finite(milliseconds: TimeSpan.maximumMilliseconds)))
        for tooLarge in ["366d", "99999999999999999999h", String(repeating: "9", count: 400), "53w"] {
            #expect(TimeSpan.parse(tooLarge) == .failure(.tooLarge), "\(tooLarge)")
        }
        for bad in [
            "inf", "nan", "-1", "-5s", "", " ", ".", "1.2.3s", "5 3s", "3s 5", "1e3", "1e300", "0x10", "٣s", "5 s s",
        ] {
            #expect(TimeSpan.parse(bad) == .failure(.notATimeSpan), "\(bad)")
        }
    }

    @Test("infinity where systemd takes it (TimeoutSec=, StopTimeoutSec=); too large or infinite elsewhere is an error")
    func infiniteSettings() {
        let text = "[Hooks]\nTimeoutSec=infinity\n[Daemon]\nStopTimeoutSec=infinity\n"
        guard case .loaded(let configuration, _) = ConfigurationLoader.parse(text) else {
            Issue.record("expected infinity to load")
            return
        }
        #expect(configuration.hookTimeoutMilliseconds == 0)
        #expect(configuration.stopTimeoutMilliseconds == nil)
        let bad =
            "[Hooks]\nTimeoutSec=999999999h\nDebounceSec=infinity\nDebounceSec=400d\n[Daemon]\nStopTimeoutSec=inf\n"
        #expect(
            ConfigurationLoader.parse(bad, file: "n.conf").warnings
                == [
                    "n.conf:2: TimeoutSec='999999999h' is longer than 365 days; write infinity for no limit",
                    "n.conf:3: DebounceSec= cannot be infinity: the hooks of a changed link would never run (0 runs them "
                        + "at once)",
                    "n.conf:4: DebounceSec='400d' is longer than 365 days",
                    "n.conf:6: StopTimeoutSec='inf' is not a time span such as 30s, 500ms, 2min or infinity",
                ].map { $0 + "; the line is ignored" })
    }

    @Test("CRLF line endings, a lone CR and a UTF-8 byte order mark read as the same file; line numbers stay right")
    func lineEndings() {
        let lines = ["# netdevd.conf", "[Hooks]", "TimeoutSec=5s", "", "[Online]", "RequiredInterfaces=eth0"]
        let expected = ConfigurationLoader.parse(lines.joined(separator: "\n"))
        guard case .loaded(let configuration, _) = expected else {
            Issue.record("expected the LF file to load")
            return
        }
        #expect(configuration.hookTimeoutMilliseconds == 5_000)
        #expect(ConfigurationLoader.parse(lines.joined(separator: "\r\n") + "\r\n") == expected)
        #expect(ConfigurationLoader.parse("\u{FEFF}" + lines.joined(separator: "\r\n")) == expected)
        #expect(ConfigurationLoader.parse(lines.joined(separator: "\r")) == expected)
        #expect(
            ConfigurationLoader.parse("\u{FEFF}[Hooks]\r\n\r\nParallelism=99\r\n", file: "c.conf").warnings
                == ["c.conf:3: Parallelism='99' must be a number from 1 to 64; the line is ignored"])
    }

    @Test("a file or drop-in directory that exists but cannot be read is an error with the reason, never skipped")
    func unreadable() throws {
        let directory = NSTemporaryDirectory() + "netdevd-conf-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/netdevd.conf", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The main file is a directory, the drop-in "directory" a file.
        try "x".write(toFile: directory + "/netdevd.conf.d", atomically: true, encoding: .utf8)
        #expect(
            ConfigurationLoader(mainFile: directory + "/netdevd.conf").load()
                == .rejected([
                    Diagnostic(file: directory + "/netdevd.conf", line: 0, message: "cannot be read: Is a directory"),
                    Diagnostic(
                        file: directory + "/netdevd.conf.d", line: 0, message: "cannot be listed: Not a directory"),
                ]))
        let big = directory + "/big.conf"
        try Data(repeating: UInt8(ascii: "#"), count: ConfigurationLoader.maximumFileBytes + 1).write(
            to: URL(fileURLWithPath: big))
        #expect(
            ConfigurationLoader(mainFile: big).load()
                == .rejected([Diagnostic(file: big, line: 0, message: "cannot be read: is larger than 1 MiB")]))
        if getuid() != 0 {
            let locked = directory + "/locked.conf"
            try "[Hooks]\n".write(toFile: locked, atomically: true, encoding: .utf8)
            chmod(locked, 0)
            #expect(
                ConfigurationLoader(mainFile: locked).load()
                    == .rejected([Diagnostic(file: locked, line: 0, message: "cannot be read: Permission denied")]))
        } else {
            print(
                "ConfigurationLoaderTests.unreadable: running as root, which reads any file; the EACCES case is skipped"
            )
        }
    }
}
