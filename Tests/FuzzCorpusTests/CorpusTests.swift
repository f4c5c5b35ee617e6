import Foundation
import FuzzChecks
import Testing

/// Every input kept in `Fuzz/Corpus/<target>/` (seeds, and each input a fuzzer found a crash with) run through its
/// target's check, as `make fuzz` runs it: a crash found once stays fixed.
@Suite("Fuzz corpora")
struct CorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/Corpus").standardized

    @Test("every kept input passes its target's check", arguments: FuzzTarget.allCases)
    func corpusPasses(_ target: FuzzTarget) throws {
        let folder = Self.corpus.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(!names.isEmpty, "Fuzz/Corpus/\(target.rawValue) has no inputs")
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
            // A check that traps names this input.
            FuzzTarget.$input.withValue("Fuzz/Corpus/\(target.rawValue)/\(name)") { target.check(bytes) }
        }
    }

    @Test("every corpus folder is a target's, and every target has one")
    func foldersMatchTargets() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path)
        #expect(Set(folders) == Set(FuzzTarget.allCases.map(\.rawValue)))
    }
}
