public import MobiusCore

/// A check on the `First` an initiate function returned.
public typealias FirstPredicate<Model, Effect> = Predicate<First<Model, Effect>>

/// An ``InitSpec`` assertion that checks the `First` against every predicate and reports each failure.
public func assertThatFirst<Model, Effect>(
    _ predicates: FirstPredicate<Model, Effect>...,
    failFunction: @escaping AssertionFailure = reportTestFailure
) -> AssertFirst<Model, Effect> {
    { first in evaluate(first, predicates, failFunction: failFunction) }
}

/// Passes when the loop starts from exactly `expected`; a failure shows the difference.
public func hasModel<Model: Equatable, Effect>(
    _ expected: Model,
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in modelMatches(expected: expected, actual: first.model, file: file, line: line) }
}

/// Passes when the loop starts with no effects.
public func hasNoEffects<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> FirstPredicate<Model, Effect>
{
    { first in effectsAreEmpty(first.effects, file: file, line: line) }
}

/// Passes when every effect in `expected` is among the first effects (others may be there too).
public func hasEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in effectsContain(first.effects, expected, file: file, line: line) }
}

/// Passes when the first effects are exactly those in `expected`, in any order.
public func hasOnlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in effectsAreOnly(first.effects, expected, file: file, line: line) }
}

/// Passes when the first effects are `expected`, in the same order.
public func hasExactlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in effectsAreExactly(first.effects, expected, file: file, line: line) }
}
