// The words the session shares with its clients: operational and online states, interface requirements and the
// glob they use are defined by the wire (NetdevWire), so netdevctl needs neither the session nor the daemon; the
// session's users see them through it as before.
@_exported public import NetdevWire
