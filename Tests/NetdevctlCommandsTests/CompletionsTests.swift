import Foundation
import Testing

@testable import NetdevctlCommands

@Suite("Shell completions")
struct CompletionsTests {
    /// Runs `script` in bash with `COMP_WORDS` set to `words` (the last being completed) and returns `COMPREPLY`.
    func bashCompletes(_ words: [String]) throws -> [String] {
        let script = try #require(Completions.script(for: "bash"))
        let quotedWords = words.map { "'\($0)'" }.joined(separator: " ")
        let program =
            script + """
                COMP_WORDS=(\(quotedWords)); COMP_CWORD=\(words.count - 1)
                _netdevctl
                printf '%s\\n' "${COMPREPLY[@]}"
                """
        let bash = Process()
        bash.executableURL = URL(fileURLWithPath: "/bin/bash")
        bash.arguments = ["-c", program]
        let output = Pipe()
        bash.standardOutput = output
        try bash.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        bash.waitUntilExit()
        #expect(bash.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).sorted()
    }

    @Test("bash completes commands, each command's options, and the values of options with choices")
    func bash() throws {
        #expect(try bashCompletes(["netdevctl", "li"]) == ["link", "links"])
        #expect(try bashCompletes(["netdevctl", "monitor", "--l"]) == ["--links-only"])
        #expect(try bashCompletes(["netdevctl", "links", "--json", "p"]) == ["pretty"])
        #expect(try bashCompletes(["netdevctl", "wait-online", "--min-state", "de"]) == ["degraded"])
        #expect(try bashCompletes(["netdevctl", "--v"]) == ["--version"])
        // Options of one command are not offered for another.
        #expect(try bashCompletes(["netdevctl", "links", "--a"]).isEmpty)
    }

    @Test("every shell's script names every command and option netdevctl takes; other shells are refused")
    func everyShell() throws {
        for shell in Completions.shells {
            let script = try #require(Completions.script(for: shell))
            for command in Netdevctl.commands {
                #expect(script.contains(command.name), "\(shell): \(command.name)")
                for option in command.spec.options where !option.hidden {
                    #expect(script.contains(option.name), "\(shell): --\(option.name)")
                }
            }
        }
        #expect(Completions.script(for: "tcsh") == nil)
    }
}
