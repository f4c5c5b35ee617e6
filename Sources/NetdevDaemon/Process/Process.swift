// Process: netdevd as a process. `DaemonOptions` (from the command line), `Daemon.run()` (build the parts, serve
// until the session exits, stop them in order), `DaemonParts` (everything wired together), `EffectHandlers` (the
// session's effects carried out, each handler given only what it uses), notifications to the service manager, and
// what a process must settle before its first thread (`ProcessSetup`, `Paths`).
