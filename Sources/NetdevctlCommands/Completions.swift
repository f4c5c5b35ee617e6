import CommandOptions

/// `netdevctl --generate-completion-script bash|zsh|fish`: completion scripts made from the commands' own specs
/// (their names, options, choices), so they cannot drift from what netdevctl accepts. The Debian package installs
/// one for each shell.
enum Completions {
    static let shells = ["bash", "zsh", "fish"]

    /// The script for `shell`, or `nil` for a shell not in ``shells``.
    static func script(for shell: String) -> String? {
        switch shell {
        case "bash": bash()
        case "zsh": zsh()
        case "fish": fish()
        default: nil
        }
    }

    private static var commandNames: [String] { Netdevctl.commands.map { $0.name } }

    /// Every option that takes a value, once, with its choices (`--socket` takes a file).
    private static var valueOptions: [OptionSpec] {
        var seen: Set<String> = []
        return (Netdevctl.commands.flatMap { $0.spec.options } + Netdevctl.spec.options).filter { option in
            option.valueName != nil && !option.hidden && seen.insert(option.name).inserted
        }
    }

    private static func options(of spec: CommandSpec, root: Bool) -> [String] {
        spec.options.filter { !$0.hidden }.flatMap { option in
            ["--\(option.name)"] + (option.short.map { ["-\($0)"] } ?? [])
        } + ["--help"] + (root ? ["--version"] : [])
    }

    /// `--socket` and `--directory` complete file names.
    private static func takesFile(_ option: OptionSpec) -> Bool {
        option.name == "socket" || option.name == "directory"
    }

    private static func quoted(_ text: String) -> String {
        "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    private static func bash() -> String {
        let names = commandNames.joined(separator: "|")
        var text = """
            # bash completion for netdevctl (netdevctl --generate-completion-script bash)
            _netdevctl() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command= word
                for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
                    case $word in
                        \(names)) command=$word; break ;;
                    esac
                done
                case $prev in

            """
        for option in valueOptions {
            let action =
                Self.takesFile(option)
                ? "COMPREPLY=($(compgen -f -- \"$cur\"))"
                : option.choices.isEmpty
                    ? "COMPREPLY=()"
                    : "COMPREPLY=($(compgen -W \(quoted(option.choices.joined(separator: " "))) -- \"$cur\"))"
            text += "        --\(option.name)\(option.short.map { "|-\($0)" } ?? "")) \(action); return ;;\n"
        }
        text += """
                esac
                local options
                case $command in

            """
        for command in Netdevctl.commands {
            text +=
                "        \(command.name)) options=\(quoted(options(of: command.spec, root: false).joined(separator: " "))) ;;\n"
        }
        text += "        *) options=\(quoted(options(of: Netdevctl.spec, root: true).joined(separator: " "))) ;;\n"
        text += """
                esac
                if [[ -z $command && $cur != -* ]]; then
                    COMPREPLY=($(compgen -W \(quoted((commandNames + ["help"]).joined(separator: " "))) -- "$cur"))
                else
                    COMPREPLY=($(compgen -W "$options" -- "$cur"))
                fi
            }
            complete -F _netdevctl netdevctl

            """
        return text
    }

    private static func zsh() -> String {
        let names = commandNames.joined(separator: "|")
        var text = """
            #compdef netdevctl
            # zsh completion for netdevctl (netdevctl --generate-completion-script zsh)
            _netdevctl() {
                local -a commands
                commands=(

            """
        for command in Netdevctl.commands {
            text += "        \(quoted("\(command.name):\(command.abstract)"))\n"
        }
        text += """
                )
                local command=${words[(r)(\(names))]}
                case $words[CURRENT-1] in

            """
        for option in valueOptions {
            let action =
                Self.takesFile(option)
                ? "_files" : option.choices.isEmpty ? ":" : "compadd -- \(option.choices.joined(separator: " "))"
            text += "        --\(option.name)\(option.short.map { "|-\($0)" } ?? "")) \(action); return ;;\n"
        }
        text += """
                esac
                if [[ -z $command && $words[CURRENT] != -* ]]; then
                    _describe 'command' commands
                    return
                fi
                case $command in

            """
        for command in Netdevctl.commands {
            text +=
                "        \(command.name)) compadd -- \(options(of: command.spec, root: false).joined(separator: " ")) ;;\n"
        }
        text += "        *) compadd -- \(options(of: Netdevctl.spec, root: true).joined(separator: " ")) ;;\n"
        text += """
                esac
            }
            _netdevctl "$@"

            """
        return text
    }

    private static func fish() -> String {
        let names = (commandNames + ["help"]).joined(separator: " ")
        var lines = [
            "# fish completion for netdevctl (netdevctl --generate-completion-script fish)",
            "complete -c netdevctl -f",
        ]
        for command in Netdevctl.commands {
            lines.append(
                "complete -c netdevctl -n \(quoted("not __fish_seen_subcommand_from \(names)")) -a \(command.name) "
                    + "-d \(quoted(command.abstract))")
        }
        func optionLines(_ spec: CommandSpec, condition: String) {
            for option in spec.options where !option.hidden {
                var line = "complete -c netdevctl -n \(quoted(condition)) -l \(option.name)"
                if let short = option.short { line += " -s \(short)" }
                if option.valueName != nil {
                    line += Self.takesFile(option) ? " -r -F" : " -x"
                    if !option.choices.isEmpty { line += " -a \(quoted(option.choices.joined(separator: " ")))" }
                }
                lines.append(line + " -d \(quoted(option.help))")
            }
        }
        optionLines(Netdevctl.spec, condition: "not __fish_seen_subcommand_from \(names)")
        for command in Netdevctl.commands {
            optionLines(command.spec, condition: "__fish_seen_subcommand_from \(command.name)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
