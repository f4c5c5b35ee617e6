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

/// Passes when the update produced neither a model nor effects. Fails as `hasNoModel()` does when there is a model,
/// otherwise as `hasNoEffects()` does.
public func hasNothing<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect> {
    { next in
        let noModel: PredicateResult = hasNoModel(file: file, line: line)(next)
        guard case .success = noModel else { return noModel }
        return hasNoEffects(file: file, line: line)(next)
    }
}

/// Passes when the update produced no new model. Fails with "Expected final Next to have no model. Got: <model>".
public func hasNoModel<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect> {
    { next in
        guard let model = next.model else { return .success }
        return .failure(
            message: "Expected final Next to have no model. Got: <\(String(describing: model))>",
            file: file,
            line: line
        )
    }
}

/// Passes when the update produced some new model. Fails with "Expected final Next to have a model. Got: <nil>".
public func hasModel<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect> {
    { next in
        guard next.model == nil else { return .success }
        return .failure(message: "Expected final Next to have a model. Got: <nil>", file: file, line: line)
    }
}

/// Passes when the update produced exactly `expected` as its new model. Fails with "Different final model than
/// expected (−), got (+): " and the line diff of the two models' dumps; a missing model diffs as `- nil`.
public func hasModel<Model: Equatable, Effect>(
    _ expected: Model,
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in
        modelMatches("Different final model", expected: Optional(expected), actual: next.model, file: file, line: line)
    }
}

/// Passes when the update produced no effects. Fails with "Expected no effects. Got: <[effects]>".
public func hasNoEffects<Model, Effect>(file: StaticString = #file, line: UInt = #line) -> NextPredicate<Model, Effect>
{
    { next in
        if next.effects.isEmpty { return .success }
        return .failure(message: "Expected no effects. Got: <\(next.effects)>", file: file, line: line)
    }
}

/// Passes when every effect in `expected` is among the effects produced (others may be there too). Fails with
/// "Missing 1 expected effect (−), got (+) (with 2 actual effects unmatched):" and each missing effect's dump,
/// diffed against the most similar effect produced but not expected (one whose dump starts with the same line,
/// such as the same enum case), or marked `−` when there is none.
public func hasEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in effectsContain(next.effects, expected, file: file, line: line) }
}

/// Passes when the effects produced are exactly those in `expected`, in any order, each as often. Fails with
/// "Missing 1 expected effect (−), got 1 actual unmatched effect (+):" (either half alone when the other is empty)
/// and the missing and unexpected effects' dumps, diffed against each other as for `hasEffects`, the unexpected ones
/// left over marked `+`.
public func hasOnlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in effectsAreOnly(next.effects, expected, file: file, line: line) }
}

/// Passes when the effects produced are `expected`, in the same order. Fails with "Different effects than expected
/// (−), got (+): " and the line diff of the two lists' dumps.
public func hasExactlyEffects<Model, Effect: Equatable>(
    _ expected: [Effect],
    file: StaticString = #file,
    line: UInt = #line
) -> NextPredicate<Model, Effect> {
    { next in effectsAreExactly(next.effects, expected, file: file, line: line) }
}
