import CommandOptions
import Testing

@Suite("Command lines")
struct CommandOptionsTests {
    let spec = CommandSpec(
        name: "tool run", abstract: "Runs.",
        options: [
            .option("level", value: "level", help: "How loud.", choices: ["low", "high"], default: "low"),
            .option("tag", help: "A tag (repeatable).", repeating: true),
            .option("path", help: "A path."),
            .flag("dry", help: "Only say."),
            .option("secret", help: "Hidden.", hidden: true),
        ],
        arguments: [ArgumentSpec("name", help: "A name."), ArgumentSpec("rest", help: "More.", repeating: true)])

    @Test("options as --name VALUE or --name=VALUE, anywhere among the arguments; -- ends them")
    func parses() throws {
        let parsed = try spec.parse(["--level=high", "one", "--tag", "a", "two", "--dry", "--tag=b=c", "--", "--x"])
        #expect(parsed.request == nil)
        #expect(parsed.value("level") == "high" && parsed.values("tag") == ["a", "b=c"] && parsed.flag("dry"))
        #expect(parsed.argument("name") == "one" && parsed.arguments("rest") == ["two", "--x"])
        #expect(parsed.value("path") == nil && !parsed.flag("missing"))
        #expect(try spec.parse(["--path", "a", "--path", "b", "n"]).value("path") == "b")
        #expect(try spec.parse(["n", "--secret", "s"]).value("secret") == "s")
    }

    @Test("one-letter options: -n 10, -n10, a flag's -f alone; help names both forms")
    func shortOptions() throws {
        let spec = CommandSpec(
            name: "tool log", abstract: "Logs.",
            options: [
                .option("lines", short: "n", value: "count", help: "How many."),
                .flag("follow", short: "f", help: "Follow."),
            ])
        let spaced = try spec.parse(["-n", "10", "-f"])
        #expect(spaced.value("lines") == "10" && spaced.flag("follow"))
        let joined = try spec.parse(["-n5"])
        #expect(joined.value("lines") == "5" && !joined.flag("follow"))
        // A value that looks like an option is still the value: the command decides whether -5 is a count.
        #expect(try spec.parse(["-n", "-5"]).value("lines") == "-5")
        #expect(throws: UsageError.self) { try spec.parse(["-fx"]) }
        #expect(throws: UsageError.self) { try spec.parse(["-x"]) }
        #expect(throws: UsageError.self) { try spec.parse(["-n"]) }
        #expect(spec.help().contains("-n, --lines <count>") && spec.help().contains("-f, --follow"))
    }

    @Test("mistakes are usage errors that say what is wrong and show the usage")
    func mistakes() {
        func message(_ arguments: [String]) -> String? {
            do {
                _ = try spec.parse(arguments)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(message(["n", "--bogus"]) == "Unknown option '--bogus'")
        #expect(message(["n", "--levle", "low"]) == "Unknown option '--levle'. Did you mean '--level'?")
        #expect(message(["n", "--dyr"]) == "Unknown option '--dyr'. Did you mean '--dry'?")
        // Hidden options are never suggested.
        #expect(message(["n", "--secrt"]) == "Unknown option '--secrt'")
        #expect(message(["n", "-x"]) == "Unknown option '-x'")
        #expect(
            message(["n", "--level", "loud"]) == "The value 'loud' is invalid for '--level': it is one of low, high")
        #expect(message(["n", "--path"]) == "Missing value for '--path'")
        #expect(message(["n", "--dry=yes"]) == "The flag '--dry' takes no value")
        #expect(message([]) == "Missing expected argument '<name>'")
        let noRest = CommandSpec(name: "t", abstract: "", arguments: [ArgumentSpec("a", help: "", optional: true)])
        #expect(throws: UsageError.self) { try noRest.parse(["x", "y"]) }
        let error = UsageError(spec, "Unknown option '--bogus'")
        #expect(
            error.description
                == "Error: Unknown option '--bogus'\nUsage: tool run <name> [<rest> ...] [--level <level>] "
                + "[--tag <tag> ...] [--path <path>] [--dry]\n  See 'tool run --help' for more information.")
    }

    @Test("--help and --version win over everything else on the line")
    func requests() throws {
        #expect(try spec.parse(["--bogus=1", "--help"]).request == .help)
        #expect(try spec.parse(["--", "--help"]).request == nil)
        #expect(try spec.parse(["--level", "loud", "-h"]).request == .help)
        #expect(try spec.parse(["--version"]).request == .version)
    }

    @Test("help lists arguments and options with choices and defaults, leaves hidden options out")
    func help() {
        let text = spec.help()
        #expect(text.hasPrefix("OVERVIEW: Runs.\n\nUSAGE: tool run <name>"))
        #expect(text.contains("  --level <level>       How loud. (values: low, high; default: low)\n"))
        #expect(text.contains("  <rest>                More.\n"))
        #expect(!text.contains("secret"))
    }
}
