// The difference between an expected and an actual value, in the form Mobius.swift's MobiusTest prints it.
//
// Each value is rendered with `dump` (one Optional level unwrapped, so a `Model?` reads as its model), split
// into lines, and the two line lists are compared by taking their longest common run of lines and comparing what
// lies before it and after it the same way. Every line is printed behind a marker and three spaces: `−` for a line
// only in the expected value, `+` for one only in the actual value, a figure space (U+2007) for a shared one.

/// The marker of a line only in the expected value (U+2212 MINUS SIGN).
let removedMarker = "\u{2212}"
/// The marker of a line only in the actual value.
let addedMarker = "+"
/// The marker of a line in both values (U+2007 FIGURE SPACE, as wide as a digit).
let sharedMarker = "\u{2007}"

/// A stretch of lines that is in both values, only in the expected one, or only in the actual one.
enum DiffRun {
    case shared([String])
    case removed([String])
    case added([String])

    var lines: [String] {
        switch self {
        case .shared(let lines), .removed(let lines), .added(let lines): lines
        }
    }

    var marker: String {
        switch self {
        case .shared: sharedMarker
        case .removed: removedMarker
        case .added: addedMarker
        }
    }

    var isShared: Bool {
        if case .shared = self { true } else { false }
    }
}

/// The lines of `value`'s `dump`; an `Optional` is looked through once (`.some(x)` dumps as `x`, `.none` as
/// `- nil`). Empty lines are left out.
func dumpedLines<T>(_ value: T) -> [String] {
    var text = ""
    let mirror = Mirror(reflecting: value)
    if mirror.displayStyle == .optional, let wrapped = mirror.children.first {
        dump(wrapped.value, to: &text)
    } else {
        dump(value, to: &text)
    }
    return text.split(separator: "\n").map(String.init)
}

/// The runs that turn `old` into `new`: the longest run of lines both share (the first one found, scanning `new`
/// from the start, when several are as long), with what comes before it and after it compared in turn.
func diffRuns(_ old: ArraySlice<String>, _ new: ArraySlice<String>) -> [DiffRun] {
    var bestLength = 0
    var bestOldEnd = old.startIndex
    var bestNewEnd = new.startIndex
    // runEnding[i] is the length of the common run ending at old[i] and at the new line looked at last.
    var runEnding = [Int](repeating: 0, count: old.count)
    for newIndex in new.indices {
        var previous = 0
        for (offset, oldIndex) in old.indices.enumerated() {
            let above = runEnding[offset]
            if old[oldIndex] == new[newIndex] {
                let length = previous + 1
                runEnding[offset] = length
                if length > bestLength {
                    bestLength = length
                    bestOldEnd = oldIndex
                    bestNewEnd = newIndex
                }
            } else {
                runEnding[offset] = 0
            }
            previous = above
        }
    }
    guard bestLength > 0 else {
        var runs: [DiffRun] = []
        if !old.isEmpty { runs.append(.removed(Array(old))) }
        if !new.isEmpty { runs.append(.added(Array(new))) }
        return runs
    }
    let oldStart = bestOldEnd - bestLength + 1
    let newStart = bestNewEnd - bestLength + 1
    return diffRuns(old[..<oldStart], new[..<newStart])
        + [.shared(Array(new[newStart...bestNewEnd]))]
        + diffRuns(old[(bestOldEnd + 1)...], new[(bestNewEnd + 1)...])
}

/// Prints `runs` one line each, marker, three spaces, line.
func render(_ runs: [DiffRun]) -> String {
    runs.flatMap { run in run.lines.map { "\(run.marker)   \($0)" } }.joined(separator: "\n")
}

/// The line difference between `expected` (`−`) and `actual` (`+`), as Mobius.swift's `dumpDiff` prints it.
func describeDifference<T>(expected: T, actual: T) -> String {
    render(diffRuns(dumpedLines(expected)[...], dumpedLines(actual)[...]))
}

/// The difference between two lists of effects compared without regard to order, as Mobius.swift's
/// `dumpDiffFuzzy` prints it.
///
/// Each expected value, in order, is shown against the most similar value of `actual` not yet taken: one whose
/// dump begins with the same line (for an enum, the same case) and differs in the fewest lines (the first such,
/// on a tie). An expected value with no such match is shown as removed. With `includeUnmatchedActual`, the actual
/// values left over are shown as added, after all the expected ones.
func describeUnorderedDifference<T: Equatable>(
    expected: [T],
    actual: [T],
    includeUnmatchedActual: Bool
) -> String {
    var candidates = actual
    var runs: [DiffRun] = []
    for item in expected {
        let lines = dumpedLines(item)
        var best: (runs: [DiffRun], candidate: T)?
        var bestDistance = Int.max
        for candidate in candidates {
            let candidateRuns = diffRuns(lines[...], dumpedLines(candidate)[...])
            let distance = candidateRuns.filter { !$0.isShared }.reduce(0) { $0 + $1.lines.count }
            if distance < bestDistance, candidateRuns.first?.isShared == true {
                best = (candidateRuns, candidate)
                bestDistance = distance
            }
        }
        if let best, let index = candidates.firstIndex(of: best.candidate) {
            candidates.remove(at: index)
            runs += best.runs
        } else {
            runs.append(.removed(lines))
        }
    }
    if includeUnmatchedActual {
        runs += candidates.map { .added(dumpedLines($0)) }
    }
    return render(runs)
}
