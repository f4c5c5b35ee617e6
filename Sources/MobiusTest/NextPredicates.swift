public import MobiusCore

/// A check on the `Next` an update returned.
public typealias NextPredicate<Model, Effect> = Predicate<Next<Model, Effect>>

/// An ``UpdateSpec`` assertion that checks the last step's `Next` against every predicate and reports each
/// failure through `failFunction`.
public func assertThatNext<Model, Event, Effect>(
    _ predicates: NextPredicate<Model, Effect>...,
    failFunction: @escaping AssertionFailure = reportTestFailure
) -> UpdateSpec<Model, Event, Effect>.Assert {
    { result in evaluate(result.lastNext, predicates, failFunction: failFunction) }
}

/// Passes when the update produced neither a model nor effects.
public func hasNothing<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect> {
    { next in
        if next.model == nil && next.effects.isEmpty { return .success }
        return .failure(
            message: "Expected no model and no effects, got \(String(reflecting: next))", file: file, line: line)
    }
}

/// Passes when the update produced no new model.
public func hasNoModel<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect> {
    { next in
        guard let model = next.model else { return .success }
        return .failure(message: "Expected no model, got \(String(reflecting: model))", file: file, line: line)
    }
}

/// Passes when the update produced some new model.
public func hasModel<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect> {
    { next in
        next.model == nil ? .failure(message: "Expected a model, got none", file: file, line: line) : .success
    }
}

/// Passes when the update produced exactly `expected` as its new model; a failure shows the difference.
public func hasModel<Model: Equatable, Effect>(
    _ expected: Model,
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in
        guard let actual = next.model else {
            return .failure(message: "Expected model \(String(reflecting: expected)), got none", file: file, line: line)
        }
        return modelMatches(expected: expected, actual: actual, file: file, line: line)
    }
}

/// Passes when the update produced no effects.
public func hasNoEffects<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect>
{
    { next in effectsAreEmpty(next.effects, file: file, line: line) }
}

/// Passes when every effect in `expected` is among the effects produced (others may be there too).
public func hasEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in effectsContain(next.effects, expected, file: file, line: line) }
}

/// Passes when the effects produced are exactly those in `expected`, in any order.
public func hasOnlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in effectsAreOnly(next.effects, expected, file: file, line: line) }
}

/// Passes when the effects produced are `expected`, in the same order.
public func hasExactlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in effectsAreExactly(next.effects, expected, file: file, line: line) }
}
