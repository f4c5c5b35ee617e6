import FuzzChecks
import NetdevWire

#if canImport(Glibc)
import Glibc
#endif

/// The target this process fuzzes, from `NETDEVD_FUZZ_TARGET` (read once, before the first input).
nonisolated(unsafe) private var target: FuzzTarget?

/// libFuzzer's set-up hook: reads the target's name, or says which names there are and exits.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    let name = getenv("NETDEVD_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let chosen = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        writeToStandardError("netdevd-fuzz: set NETDEVD_FUZZ_TARGET to one of: \(names) (it is '\(name)')\n")
        exit(2)
    }
    target = chosen
    return 0
}

/// libFuzzer's entry: one input through the chosen target's check.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    target?.check(bytes)
    return 0
}
