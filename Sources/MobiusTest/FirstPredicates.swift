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

/// Passes when the loop starts from exactly `expected`. Fails with "Different model than expected (−), got (+): "
/// and the line diff of the two models' dumps.
public func hasModel<Model: Equatable, Effect>(
    _ expected: Model,
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in modelMatches("Different model", expected: expected, actual: first.model, file: file, line: line) }
}

/// Passes when the loop starts with no effects. Fails with "Expected no effects, got <[effects]>".
public func hasNoEffects<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> FirstPredicate<Model, Effect>
{
    { first in
        if first.effects.isEmpty { return .success }
        return .failure(message: "Expected no effects, got <\(first.effects)>", file: file, line: line)
    }
}

/// Passes when every effect in `expected` is among the first effects (others may be there too). Fails as the `Next`
/// predicate of the same name does: "Missing 1 expected effect (−), got (+) (with 2 actual effects unmatched):" and
/// each missing effect's dump, diffed against the most similar unexpected effect.
public func hasEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in effectsContain(first.effects, expected, file: file, line: line) }
}

/// Passes when the first effects are exactly those in `expected`, in any order, each as often. Fails as the `Next`
/// predicate of the same name does: "Missing 1 expected effect (−), got 1 actual unmatched effect (+):" (either
/// half alone when the other is empty) and the missing and unexpected effects' dumps, diffed against each other.
public func hasOnlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in effectsAreOnly(first.effects, expected, file: file, line: line) }
}

/// Passes when the first effects are `expected`, in the same order. Fails with "Different effects than expected
/// (−), got (+): " and the line diff of the two lists' dumps.
public func hasExactlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> FirstPredicate<Model, Effect> {
    { first in effectsAreExactly(first.effects, expected, file: file, line: line) }
}
