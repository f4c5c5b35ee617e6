// The checks shared by the `Next` and `First` predicates. Their failure messages are worded, and their diffs laid
// out, as Mobius.swift's MobiusTest prints them, so a suite that checks messages reads the same here.

/// Passes when `expected == actual`; a failure is "`<subject>` than expected (−), got (+): " and the line diff of
/// the two. `T` is the model type for a `First` and the optional model for a `Next` (a missing model diffs as
/// `- nil`).
func modelMatches<T: Equatable>(
    _ subject: String,
    expected: T,
    actual: T,
    file: StaticString,
    line: UInt
) -> PredicateResult {
    if expected == actual { return .success }
    return .failure(
        message: "\(subject) than expected (\(removedMarker)), got (\(addedMarker)): \n"
            + describeDifference(expected: expected, actual: actual),
        file: file,
        line: line
    )
}

/// Passes when every effect of `expected` is among `actual`, however often and in whatever order; the others in
/// `actual` are allowed. A failure counts the expected effects missing and the actual ones not expected, and shows
/// each missing effect against the most similar unexpected one.
func effectsContain<Effect: Equatable>(
    _ actual: [Effect],
    _ expected: [Effect],
    file: StaticString,
    line: UInt
) -> PredicateResult {
    let missing = expected.filter { !actual.contains($0) }
    if missing.isEmpty { return .success }
    let unexpected = actual.filter { !expected.contains($0) }
    return .failure(
        message: "Missing \(counted(missing, "expected")) (\(removedMarker)), got (\(addedMarker))"
            + " (with \(counted(unexpected, "actual")) unmatched):\n"
            + describeUnorderedDifference(expected: missing, actual: unexpected, includeUnmatchedActual: false),
        file: file,
        line: line
    )
}

/// Passes when `actual` holds the effects of `expected` and no others, in any order, each as many times as
/// expected. A failure names the missing expected effects and the unexpected actual ones, and shows the two
/// against each other.
func effectsAreOnly<Effect: Equatable>(
    _ actual: [Effect],
    _ expected: [Effect],
    file: StaticString,
    line: UInt
) -> PredicateResult {
    var missing = expected.filter { !actual.contains($0) }
    var unexpected = actual.filter { !expected.contains($0) }
    if missing.isEmpty && unexpected.isEmpty {
        // Every effect is on both sides; they still differ when one is there more often on one side.
        (missing, unexpected) = unpaired(expected, actual)
        if missing.isEmpty && unexpected.isEmpty { return .success }
    }
    let parts = [
        missing.isEmpty ? nil : "missing \(counted(missing, "expected")) (\(removedMarker))",
        unexpected.isEmpty ? nil : "got \(counted(unexpected, "actual unmatched")) (\(addedMarker))",
    ]
    let summary = parts.compactMap { $0 }.joined(separator: ", ")
    let sentence = summary.prefix(1).uppercased() + String(summary.dropFirst())
    return .failure(
        message: sentence + ":\n"
            + describeUnorderedDifference(expected: missing, actual: unexpected, includeUnmatchedActual: true),
        file: file,
        line: line
    )
}

/// Passes when `actual` is `expected`, the same effects in the same order; a failure shows the line diff of the
/// two lists.
func effectsAreExactly<Effect: Equatable>(
    _ actual: [Effect],
    _ expected: [Effect],
    file: StaticString,
    line: UInt
) -> PredicateResult {
    if actual == expected { return .success }
    return .failure(
        message: "Different effects than expected (\(removedMarker)), got (\(addedMarker)): \n"
            + describeDifference(expected: expected, actual: actual),
        file: file,
        line: line
    )
}

/// "1 `label` effect" or "`n` `label` effects".
private func counted<T>(_ effects: [T], _ label: String) -> String {
    effects.count == 1 ? "1 \(label) effect" : "\(effects.count) \(label) effects"
}

/// Pairs each expected effect with an equal actual one, each actual effect used once; returns the expected effects
/// left without a partner (in expected order) and the actual ones left over (in actual order).
private func unpaired<Effect: Equatable>(_ expected: [Effect], _ actual: [Effect]) -> ([Effect], [Effect]) {
    var leftOver = actual
    var missing: [Effect] = []
    for effect in expected {
        if let index = leftOver.firstIndex(of: effect) {
            leftOver.remove(at: index)
        } else {
            missing.append(effect)
        }
    }
    return (missing, leftOver)
}
