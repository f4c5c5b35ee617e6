// Hooks: the administrator's hooks and networkd-dispatcher scripts. netdevd side: `HookRunner` (a run's hooks,
// their output to the journal, the result back to the loop) over `HookRunnerConnection`; runner side
// (`netdevd --serve-hooks`): `HookRunnerProgram`, `HookRunnerService`, `HookProcess`. Both sides find hooks with
// `HookDiscovery` (watched with `HookDirectoryWatch`) and speak `HookRunnerWire`.
