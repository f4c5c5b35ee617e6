import MobiusCore
import Testing

@Suite("MobiusHooks")
struct MobiusHooksTests {
    @Test("by default, misuse stops the process with a message naming the call site")
    func defaultHandlerStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = Mobius.loop(
                update: { (_: Int, event: Int) -> Next<Int, Never> in .next(event) },
                effectHandler: EffectRouter<Never, Int>().asConnectable
            ).start(from: 0)
            loop.dispose()
            loop.dispatchEvent(1)
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("cannot accept events when disposed"))
        #expect(output.contains("MobiusHooksTests.swift"))
    }

    @Test("a replaced handler receives the message, file and line")
    func replacedHandler() {
        let reported = misuseMessage {
            MobiusHooks.errorHandler("custom misuse", #file, #line)
        }
        #expect(reported == "custom misuse")
    }
}
