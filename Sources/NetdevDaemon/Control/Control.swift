// Control: the `io.netdevd` Varlink interface. `ControlService` answers queries and monitors from the last model
// published, never waiting on the loop; `ControlInterface` is its description, `ControlReports` the reports built
// from a model, `ControlSocket` the socket it is served on.
