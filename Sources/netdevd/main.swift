import NetdevctlCommands

// One binary serves both programs: the Debian package installs /usr/bin/netdevctl as a link to /usr/sbin/netdevd,
// which halves the installed size (each binary carries the Swift runtime, linked statically).
if CommandLine.arguments.first?.split(separator: "/").last == "netdevctl" {
    NetdevctlProgram.main()
} else {
    NetdevdCommand.main()
}
