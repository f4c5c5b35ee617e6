import Foundation
import FuzzChecks
import Testing

/// Every input kept in `Fuzz/Corpus/<target>/` (seeds, and each input a fuzzer found a crash with) run through its
/// target's check, as `make fuzz` runs it: a crash found once stays fixed.
@Suite("Fuzz corpora")
struct CorpusTests {
    /// The input being checked, for ``CrashNote``'s handler; the targets are checked one at a time so it is one.
    static let note = CrashNote()

    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/Corpus").standardized

    @Test("every kept input passes its target's check", .serialized, arguments: FuzzTarget.allCases)
    func corpusPasses(_ target: FuzzTarget) throws {
        let folder = Self.corpus.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(!names.isEmpty, "Fuzz/Corpus/\(target.rawValue) has no inputs")
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
            // A check that traps names this input; so does any other crash in the code it runs (CrashNote).
            let input = "Fuzz/Corpus/\(target.rawValue)/\(name)"
            Self.note.set("netdevd's corpus test crashed on \(input)\n")
            FuzzTarget.$input.withValue(input) { target.check(bytes) }
        }
    }

    @Test("every corpus folder is a target's, and every target has one")
    func foldersMatchTargets() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path)
        #expect(Set(folders) == Set(FuzzTarget.allCases.map(\.rawValue)))
    }
}

/// A line written to standard error when the process dies of a crash signal (a trap, a bad access, an abort): the
/// corpus input being checked then, which a crash inside a parser would not name otherwise. The handler writes the
/// line with write(2) (async-signal-safe, from a buffer filled beforehand) and hands the signal on to the handler
/// that was there before (Swift's backtracer), so the crash is reported as before.
final class CrashNote: Sendable {
    private static let capacity = 4096
    /// nonisolated(unsafe): the addresses never change; the line's bytes are written only by the thread that checks
    /// inputs (the parameterized test is serialized, and set before each check), and the handlers' table once,
    /// before any handler is installed; the crash handler only reads both.
    private nonisolated(unsafe) static let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
    private nonisolated(unsafe) static let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
    private static let signals = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE]

    init() {
        Self.buffer.initialize(repeating: 0, count: Self.capacity)
        Self.previous.initialize(repeating: sigaction(), count: 65)
        for signal in Self.signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signal in
                _ = write(2, CrashNote.buffer, strlen(CrashNote.buffer))
                // Put back what was there (Swift's backtracer, or the default) and raise again: it reports the
                // crash as it would have.
                sigaction(signal, CrashNote.previous + Int(signal), nil)
                raise(signal)
            }
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, Self.previous + Int(signal))
        }
    }

    /// The line to write if the process crashes now.
    func set(_ line: String) {
        let bytes = Array(line.utf8.prefix(Self.capacity - 1))
        for (index, byte) in bytes.enumerated() { Self.buffer[index] = CChar(bitPattern: byte) }
        Self.buffer[bytes.count] = 0
    }
}
