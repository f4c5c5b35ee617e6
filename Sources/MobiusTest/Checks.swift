// The checks shared by the `Next` and `First` predicates.

func modelMatches<Model: Equatable>(expected: Model, actual: Model, file: StaticString, line: UInt) -> PredicateResult {
    if expected == actual { return .success }
    let difference = describeDifference(expected: expected, actual: actual)
    return .failure(message: "Different model than expected (−), got (+):\n\(difference)", file: file, line: line)
}

func effectsAreEmpty<Effect>(_ actual: [Effect], file: StaticString, line: UInt) -> PredicateResult {
    if actual.isEmpty { return .success }
    return .failure(message: "Expected no effects, got \(String(reflecting: actual))", file: file, line: line)
}

func effectsContain<Effect: Equatable>(
    _ actual: [Effect],
    _ expected: [Effect],
    file: StaticString,
    line: UInt
) -> PredicateResult {
    let missing = expected.filter { !actual.contains($0) }
    if missing.isEmpty { return .success }
    return .failure(
        message: "Missing effects \(String(reflecting: missing)); got \(String(reflecting: actual))",
        file: file,
        line: line
    )
}

func effectsAreOnly<Effect: Equatable>(
    _ actual: [Effect],
    _ expected: [Effect],
    file: StaticString,
    line: UInt
) -> PredicateResult {
    var unmatched = actual
    var missing: [Effect] = []
    for effect in expected {
        if let index = unmatched.firstIndex(of: effect) {
            unmatched.remove(at: index)
        } else {
            missing.append(effect)
        }
    }
    if missing.isEmpty && unmatched.isEmpty { return .success }
    return .failure(
        message: "Expected only effects \(String(reflecting: expected)) in any order; "
            + "missing \(String(reflecting: missing)), unexpected \(String(reflecting: unmatched))",
        file: file,
        line: line
    )
}

func effectsAreExactly<Effect: Equatable>(
    _ actual: [Effect],
    _ expected: [Effect],
    file: StaticString,
    line: UInt
) -> PredicateResult {
    if actual == expected { return .success }
    let difference = describeDifference(expected: expected, actual: actual)
    return .failure(message: "Different effects than expected (−), got (+):\n\(difference)", file: file, line: line)
}
