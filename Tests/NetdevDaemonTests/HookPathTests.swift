import Testing

@testable import NetdevDaemon

@Suite("Hook paths split as the kernel splits them")
struct HookPathTests {
    @Test("names are cut at every '/' byte, even one a combining mark follows, and empty names are dropped")
    func names() {
        // "/\u{301}" is one Character: split on characters, it separated nothing.
        #expect(HookDiscovery.names(of: "/etc//a/\u{301}b/c/") == ["etc", "a", "\u{301}b", "c"])
        #expect(HookDiscovery.names(of: "relative/x") == ["relative", "x"])
    }

    @Test("a path's parent is what precedes its last '/' byte")
    func parent() {
        #expect(HookDiscovery.parent(of: "/a/\u{301}b") == "/a")
        #expect(HookDiscovery.parent(of: "/hook") == "/")
        #expect(HookDiscovery.parent(of: "hook") == ".")
    }
}
