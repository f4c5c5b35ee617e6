/// Routing by naming an enum case itself, as Mobius.swift users write it: `.routeCase(Effect.save)` for a case with
/// associated values (the case's embed function, `(Payload) -> Effect`) and `.routeCase(Effect.reset)` for one
/// without, on an `Effect` that need not be `Equatable`.
///
/// Contract: a route made from an embed function takes exactly the effects of that case and hands the handler the
/// associated values (a tuple when there are several, labels dropped); a route made from a case without associated
/// values takes exactly the effects of that case and hands the handler `()`. The case is recognised by its name,
/// as the Swift runtime records it, and the associated values are read with `Mirror`; an `Effect` that is not an
/// enum matches nothing. Two cases that share a base name and a payload type (`case load(id: Int)`, `case
/// load(index: Int)`), or an `Effect` with a custom mirror, cannot be routed this way. It costs a reflection per
/// effect and route: where routing speed matters, a case key path (MobiusCasePaths) or
/// `routeEffects(withParameters:)` is the fast form.
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
        guard let expected = EnumCase.emptyCaseName(of: enumCase) else {
            MobiusHooks.errorHandler(
                "routeCase(\(enumCase)): not a case without associated values; pass the case itself, as in "
                    + "routeCase(\(Effect.self).name), for a case with associated values", #file, #line)
        }
        return routeEffects(withParameters: { effect in EnumCase.emptyCaseName(of: effect) == expected ? () : nil })
    }
}

/// Recognises an enum value's case without `Equatable`: by the case's name, as the Swift runtime records it, and
/// `Mirror` for the associated values.
@usableFromInline
enum EnumCase {
    /// The associated values of `value` when it is of the case `embed` builds, else `nil`.
    @usableFromInline
    static func payload<Value, Payload>(of value: Value, embeddedBy embed: (Payload) -> Value) -> Payload? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .enum || mirror.displayStyle == .optional, let child = mirror.children.first,
            let payload = cast(child.value, to: Payload.self), let name = name(of: value)
        else { return nil }
        // Another case with a payload of the same type (`case load(Int)`, `case unload(Int)`): the names differ.
        guard self.name(of: embed(payload)) == name else { return nil }
        return payload
    }

    /// The name of `value`'s case when it is an enum case without associated values, else `nil`.
    @usableFromInline
    static func emptyCaseName<Value>(of value: Value) -> String? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .enum || mirror.displayStyle == .optional, mirror.children.isEmpty else {
            return nil
        }
        return name(of: value)
    }

    /// The name of `value`'s case from the runtime's reflection records (what `print` shows for an enum without a
    /// description of its own), or `nil` when `value` is not an enum. Not its bytes: a case without associated
    /// values of a generic enum, built in unspecialised code, may leave the payload's bytes undefined.
    private static func name<Value>(of value: Value) -> String? {
        swiftEnumCaseName(value).map { String(cString: $0) }
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

/// The Swift runtime's name of an enum value's case (`swift_EnumCaseName`, exported by the runtime and called the
/// same way by the standard library's own reflection); `nil` for a value that is not an enum.
@_silgen_name("swift_EnumCaseName")
private func swiftEnumCaseName<T>(_ value: T) -> UnsafePointer<CChar>?
