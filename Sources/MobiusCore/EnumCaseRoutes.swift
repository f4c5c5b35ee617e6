/// Routing by naming an enum case itself, as Mobius.swift users write it: `.routeCase(Effect.save)` for a case with
/// associated values (the case's embed function, `(Payload) -> Effect`) and `.routeCase(Effect.reset)` for one
/// without, on an `Effect` that need not be `Equatable`.
///
/// Contract: a route made from an embed function takes exactly the effects of that case and hands the handler the
/// associated values (a tuple when there are several, labels dropped); a route made from a case without associated
/// values takes exactly the effects of that case and hands the handler `()`. The case is recognised with `Mirror`
/// (its name and the payload's type) and, for a case without associated values, by the value's bit pattern, which
/// identifies such a case; an `Effect` that is not an enum matches nothing. It costs a reflection per effect and
/// route: where routing speed matters, a case key path (MobiusCasePaths) or `routeEffects(withParameters:)` is the
/// fast form.
extension EffectRouter {
    /// Routes the effects of the case `enumCase` embeds into (for example `Effect.save`); the handler receives its
    /// associated values.
    @inlinable
    public func routeCase<Payload>(
        _ enumCase: @escaping @Sendable (Payload) -> Effect
    ) -> _PartialEffectRouter<Effect, Payload, Event> {
        routeEffects(withParameters: { effect in EnumCase.payload(of: effect, embeddedBy: enumCase) })
    }

    /// Routes the effects of `enumCase`, a case without associated values (for example `Effect.reset`), on an
    /// `Effect` that is not `Equatable`; the handler receives `()`. A value with associated values (or one that is
    /// not an enum case) is a programming error reported to ``MobiusHooks``: name its case's embed function instead.
    @inlinable
    public func routeCase(_ enumCase: Effect) -> _PartialEffectRouter<Effect, Void, Event> {
        guard let expected = EnumCase.emptyCaseBits(of: enumCase) else {
            MobiusHooks.errorHandler(
                "routeCase(\(enumCase)): not a case without associated values; pass the case itself, as in "
                    + "routeCase(\(Effect.self).name), for a case with associated values", #file, #line)
        }
        return routeEffects(withParameters: { effect in EnumCase.emptyCaseBits(of: effect) == expected ? () : nil })
    }
}

/// Recognises an enum value's case without `Equatable`, by reflection.
@usableFromInline
enum EnumCase {
    /// The associated values of `value` when it is of the case `embed` builds, else `nil`.
    @usableFromInline
    static func payload<Value, Payload>(of value: Value, embeddedBy embed: (Payload) -> Value) -> Payload? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .enum, let child = mirror.children.first, let name = child.label,
            let payload = cast(child.value, to: Payload.self)
        else { return nil }
        // Another case with a payload of the same type (`case save(Int)`, `case load(Int)`): the case names differ.
        guard Mirror(reflecting: embed(payload)).children.first?.label == name else { return nil }
        return payload
    }

    /// The bytes of `value` when it is an enum case without associated values, else `nil`. Such a case is stored
    /// as its index (in the tag, the payload's unused bit patterns or the payload area, always written whole), so
    /// two values of the same case have the same bytes and values of different cases differ.
    @usableFromInline
    static func emptyCaseBits<Value>(of value: Value) -> [UInt8]? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .enum, mirror.children.isEmpty else { return nil }
        return withUnsafeBytes(of: value) { Array($0) }
    }

    /// `value` as a `Payload`: directly, or the one element of a labelled one-element tuple (`case save(count:
    /// Int)` reflects its payload as `(count: Int)`, which does not cast to `Int`). Several associated values cast
    /// to an unlabelled tuple as they are.
    private static func cast<Payload>(_ value: Any, to: Payload.Type) -> Payload? {
        if let payload = value as? Payload { return payload }
        let tuple = Mirror(reflecting: value)
        guard tuple.displayStyle == .tuple, tuple.children.count == 1, let only = tuple.children.first else {
            return nil
        }
        return only.value as? Payload
    }
}
