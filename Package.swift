// swift-tools-version: 6.1
import PackageDescription

import class Foundation.ProcessInfo

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// The release netdevd is linked with lld: relative relocations packed (DT_RELR, glibc 2.36: the dynamic loader
// reads 27,000 of them at every start, 650 KiB of file pages as RELA) and the functions netdevd runs at start and on
// a link change placed together (Packaging/netdevd.order, made by Benchmarks/OrderFile/generate.sh): the kernel maps
// a binary's pages 64 KiB at a time around each one executed, and that code was spread over most of the text.
let releaseLinkFlags = [
    "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Packaging/netdevd.order",
    "-Xlinker", "--no-warn-symbol-ordering",
]

let package = Package(
    name: "netdevd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MobiusCore", targets: ["MobiusCore"]),
        .library(name: "MobiusCasePaths", targets: ["MobiusCasePaths"]),
        .library(name: "MobiusTest", targets: ["MobiusTest"]),
        .library(name: "Systemd", targets: ["Systemd"]),
        .library(name: "Udev", targets: ["Udev"]),
        .library(name: "Netlink", targets: ["Netlink"]),
        .library(name: "NetdevSession", targets: ["NetdevSession"]),
        .library(name: "Varlink", targets: ["Varlink"]),
        .executable(name: "netdevd", targets: ["netdevd"]),
        .executable(name: "netdevctl", targets: ["netdevctl"]),
        .executable(name: "mobius-counter", targets: ["MobiusCounter"]),
    ],
    dependencies: [
        .package(url: "https://github.com/pointfreeco/swift-case-paths", from: "1.10.0"),
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.13.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // Prometheus' text exposition of netdevd's metrics (its registry; it brings swift-metrics' CoreMetrics and
        // swift-atomics, not Foundation).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation`: the DocC catalogs of MobiusCore and MobiusTest (make docs).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The one lock type (a pthread mutex, which ThreadSanitizer sees), for every module with shared state.
        .target(name: "Locking", swiftSettings: strict),
        .target(
            name: "MobiusCore",
            dependencies: ["Locking"],
            swiftSettings: strict
        ),
        // routeCase(\.caseName) with swift-case-paths, apart from MobiusCore: case-paths brings Foundation with it.
        .target(
            name: "MobiusCasePaths",
            dependencies: ["MobiusCore", .product(name: "CasePaths", package: "swift-case-paths")],
            swiftSettings: strict
        ),
        .target(
            name: "MobiusTest",
            dependencies: [
                "MobiusCore", "Locking",
                .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
                // Lets IssueReporting reach Swift Testing and XCTest, whichever runs the test.
                .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
            ],
            swiftSettings: strict
        ),
        // The two system libraries the project is specified with.
        .systemLibrary(name: "CUdev", pkgConfig: "libudev", providers: [.apt(["libudev-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // syslog's priorities: the journal's and the session's entries share the one type.
        .target(name: "Syslog", swiftSettings: strict),
        .target(
            name: "Systemd",
            dependencies: ["CSystemd", "Locking", "Syslog", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // What the Linux adapters share: the error of a refused system call, a Dispatch source kept to cancel.
        .target(name: "SystemSupport", swiftSettings: strict),
        .target(name: "Udev", dependencies: ["CUdev", "Locking", "SystemSupport"], swiftSettings: strict),
        // Declarations of Linux's C library that Glibc's module leaves out (pidfd_open).
        .target(name: "CLinux"),
        .target(name: "Netlink", dependencies: ["Locking", "SystemSupport"], swiftSettings: strict),
        // TreeDictionary: the model's tables are shared between the loop and its observers, so a change must not
        // copy a whole table (a persistent hash tree copies only the path to the changed entry).
        .target(
            name: "NetdevSession",
            dependencies: [
                "MobiusCore", "NetdevWire", "Syslog", "SystemSupport",
                .product(name: "HashTreeCollections", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // JSON text to and from Codable values, without Foundation (no ICU, no Foundation in the binaries).
        .target(name: "JSONCoding", swiftSettings: strict),
        // Command lines of netdevd and netdevctl: options, arguments, help and usage errors.
        .target(name: "CommandOptions", swiftSettings: strict),
        .target(
            name: "Varlink", dependencies: ["Locking", "CLinux", "JSONCoding", "SystemSupport"], swiftSettings: strict),
        // The io.netdevd interface's JSON shapes (and time spans): what netdevd and its clients share.
        .target(name: "NetdevWire", dependencies: ["SystemSupport"], swiftSettings: strict),
        .target(
            name: "NetdevDaemon",
            dependencies: [
                "MobiusCore", "NetdevSession", "NetdevWire", "Syslog", "Systemd", "Udev", "Netlink", "Varlink",
                "JSONCoding",
                "CLinux", "Locking", "CommandOptions", "SystemSupport",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "NetdevctlCommands",
            dependencies: [
                "NetdevWire", "Varlink", "JSONCoding", "Locking", "CommandOptions", "Syslog", "Systemd",
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "netdevctl", dependencies: ["NetdevctlCommands"], swiftSettings: strict),
        .executableTarget(
            name: "netdevd",
            dependencies: [
                "NetdevDaemon", "NetdevSession", "NetdevWire", "NetdevctlCommands", "Syslog", "Systemd", "Udev",
                "CommandOptions",
            ],
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(releaseLinkFlags, .when(configuration: .release))]
        ),
        // The recorded burst replayed through a loop, for callgrind's instruction count (make benchmark-replay).
        .executableTarget(
            name: "ReplayLoop",
            dependencies: ["MobiusCore", "NetdevSession", "Syslog"],
            path: "Benchmarks/ReplayLoop",
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        // What a host's size costs the session, the monitors' changes, ListLinks and the metrics, without a kernel
        // (make benchmark-large-host).
        .executableTarget(
            name: "LargeHost",
            dependencies: [
                "NetdevDaemon", "NetdevSession", "NetdevWire", "NetdevctlCommands", "JSONCoding", "CLinux", "Varlink",
            ],
            path: "Benchmarks/LargeHost",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "MobiusCounter",
            dependencies: ["MobiusCasePaths"],
            path: "Examples/Counter",
            swiftSettings: strict
        ),
        .testTarget(
            name: "MobiusCoreTests",
            dependencies: [
                "MobiusCore", "MobiusCasePaths", "MobiusTest", "KernelTestSupport",
            ],
            swiftSettings: strict
        ),
        // Swift 5 language mode on purpose, the one exception: code written for Spotify's Mobius.swift must compile
        // against MobiusCore in that mode and behave the same, and this target is that code. Its Sendable
        // warnings are what such code gets in Swift 5 mode (errors only in Swift 6 mode), so they are silenced here.
        .testTarget(
            name: "MobiusCompatibilityTests",
            dependencies: ["MobiusCore", "MobiusTest"],
            swiftSettings: [.swiftLanguageMode(.v5), .unsafeFlags(["-suppress-warnings"])]
        ),
        // Shared by the test targets that need the real kernel: the harness check and small process helpers.
        .target(name: "KernelTestSupport", path: "Tests/KernelTestSupport", swiftSettings: strict),
        .testTarget(
            name: "SystemdTests",
            dependencies: ["Systemd", "Syslog", "KernelTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .testTarget(name: "UdevTests", dependencies: ["Udev", "KernelTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "NetlinkTests",
            dependencies: ["Netlink", "KernelTestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "NetdevSessionTests",
            dependencies: ["NetdevSession", "Syslog", "MobiusCore", "MobiusTest", "KernelTestSupport", "SystemSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "NetdevDaemonTests",
            dependencies: [
                "NetdevDaemon", "NetdevSession", "NetdevWire", "Syslog", "Systemd", "Udev", "Varlink",
                "KernelTestSupport", "SystemSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "NetdevctlCommandsTests",
            dependencies: [
                "NetdevctlCommands", "NetdevWire", "Varlink", "Systemd", "CommandOptions", "JSONCoding",
                "KernelTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(name: "VarlinkTests", dependencies: ["Varlink", "KernelTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "JSONCodingTests", dependencies: ["JSONCoding", "KernelTestSupport"], swiftSettings: strict),
        .testTarget(name: "CommandOptionsTests", dependencies: ["CommandOptions"], swiftSettings: strict),
        // The fuzz targets' checks (Fuzz/): what libFuzzer runs (make fuzz) and what the corpus replay test runs.
        .target(
            name: "FuzzChecks",
            dependencies: [
                "NetdevDaemon", "NetdevSession", "NetdevWire", "Netlink", "Udev", "Systemd", "Varlink", "MobiusCore",
                "Locking", "SystemSupport",
            ],
            path: "Fuzz/Checks",
            swiftSettings: strict
        ),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzChecks"], swiftSettings: strict),
        .testTarget(
            name: "MobiusTestTests",
            dependencies: ["MobiusCore", "MobiusCasePaths", "MobiusTest"],
            swiftSettings: strict
        ),
    ]
)

// The benchmarks (Benchmarks/, ordo-one/benchmark) join the package only when NETDEVD_BENCHMARKS is set, so that
// `make test` never builds the benchmark framework. `make benchmark` sets it.
if ProcessInfo.processInfo.environment["NETDEVD_BENCHMARKS"] != nil {
    package.dependencies.append(
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"])
    )
    package.targets.append(
        .executableTarget(
            name: "MobiusBenchmarks",
            dependencies: ["MobiusCore", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/MobiusBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    )
    // The hand-written parts against the libraries they stand in for (make benchmark-handwritten): JSONCoding against
    // FoundationEssentials' coders, CommandOptions against swift-argument-parser.
    package.dependencies.append(.package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"))
    package.targets.append(
        .executableTarget(
            name: "HandWrittenCoders", dependencies: ["JSONCoding", "NetdevWire", "Varlink"],
            path: "Benchmarks/HandWritten/Coders", swiftSettings: strict)
    )
    package.targets.append(
        .target(
            name: "HandWrittenProbe", dependencies: ["NetdevWire"], path: "Benchmarks/HandWritten/Probe",
            swiftSettings: strict)
    )
    package.targets.append(
        .target(
            name: "HandWrittenOwnOptions", dependencies: ["HandWrittenProbe", "CommandOptions"],
            path: "Benchmarks/HandWritten/OwnOptions", swiftSettings: strict)
    )
    package.targets.append(
        .target(
            name: "HandWrittenParserOptions",
            dependencies: ["HandWrittenProbe", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/HandWritten/ParserOptions", swiftSettings: strict)
    )
    for (name, dependencies) in [
        ("LinkedOwn", ["HandWrittenOwnOptions", "JSONCoding"]), ("LinkedFoundationJSON", ["HandWrittenOwnOptions"]),
        ("LinkedArgumentParser", ["HandWrittenParserOptions", "JSONCoding"]),
        ("LinkedLibraries", ["HandWrittenParserOptions"]),
    ] as [(String, [Target.Dependency])] {
        package.targets.append(
            .executableTarget(
                name: name, dependencies: ["HandWrittenProbe"] + dependencies, path: "Benchmarks/HandWritten/\(name)",
                swiftSettings: strict)
        )
    }
    package.targets.append(
        .executableTarget(
            name: "SessionBenchmarks",
            dependencies: ["NetdevSession", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/SessionBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    )
}

// The libFuzzer entry point (Fuzz/Entry) joins the package only when NETDEVD_FUZZ is set: it has no main of its own
// (libFuzzer's is linked in with -sanitize=fuzzer), so it builds only that way. `make fuzz` sets it.
if ProcessInfo.processInfo.environment["NETDEVD_FUZZ"] != nil {
    package.targets.append(
        .executableTarget(
            name: "netdevd-fuzz",
            dependencies: ["FuzzChecks", "NetdevWire"],
            path: "Fuzz/Entry",
            swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]
        )
    )
}
