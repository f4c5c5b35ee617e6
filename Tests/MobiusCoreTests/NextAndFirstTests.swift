import MobiusCore
import Testing

@Suite("Next and First")
struct NextAndFirstTests {
    @Test("the factory methods say what changed")
    func factories() {
        let next = Next<Int, String>.next(3, effects: ["save"])
        #expect(next.model == 3)
        #expect(next.effects == ["save"])
        #expect(Next<Int, String>.next(3).effects.isEmpty)
        #expect(Next<Int, String>.dispatchEffects(["a", "b"]).model == nil)
        #expect(Next<Int, String>.dispatchEffects(["a", "b"]).effects == ["a", "b"])
        #expect(Next<Int, String>.noChange.model == nil)
        #expect(Next<Int, String>.noChange.effects.isEmpty)
    }

    @Test("equality compares model and effects in order")
    func equality() {
        #expect(Next<Int, String>.next(1, effects: ["a", "b"]) == .next(1, effects: ["a", "b"]))
        #expect(Next<Int, String>.next(1, effects: ["a", "b"]) != .next(1, effects: ["b", "a"]))
        #expect(Next<Int, String>.next(1) != .noChange)
        #expect(Next<Int, String>.dispatchEffects([]) == .noChange)
        #expect(First<Int, String>(model: 1, effects: ["a"]) == First(model: 1, effects: ["a"]))
    }

    @Test("debug descriptions show model and effects")
    func descriptions() {
        #expect(String(reflecting: Next<Int, String>.next(3, effects: ["save"])) == #"(3, ["save"])"#)
        #expect(String(reflecting: Next<Int, String>.noChange) == "(nil, [])")
        #expect(String(describing: First<Int, String>(model: 0)) == "First<Int, String>(model: 0, effects: [])")
    }

    @Test("an Update struct calls its closure")
    func update() {
        let update = Update<Int, Int, String> { model, event in .next(model + event, effects: ["\(event)"]) }
        #expect(update.update(model: 1, event: 2) == .next(3, effects: ["2"]))
        #expect(update(model: 1, event: 2) == .next(3, effects: ["2"]))
    }
}
