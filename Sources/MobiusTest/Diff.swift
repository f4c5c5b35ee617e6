/// A readable, line-by-line difference between an expected and an actual value, for failure messages.
///
/// Both values are rendered with `dump`, so nested structures show one field per line; lines only in the
/// expected value are marked `−`, lines only in the actual value `+`, shared lines are indented.
func describeDifference<T>(expected: T, actual: T) -> String {
    let old = render(expected)
    let new = render(actual)
    return diffLines(old, new).joined(separator: "\n")
}

private func render<T>(_ value: T) -> [String] {
    var text = ""
    dump(value, to: &text)
    return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
}

/// A longest-common-subsequence diff; inputs are small (a model's dump), so the quadratic table is fine.
private func diffLines(_ old: [String], _ new: [String]) -> [String] {
    var common = Array(repeating: Array(repeating: 0, count: new.count + 1), count: old.count + 1)
    for i in stride(from: old.count - 1, through: 0, by: -1) {
        for j in stride(from: new.count - 1, through: 0, by: -1) {
            common[i][j] = old[i] == new[j] ? common[i + 1][j + 1] + 1 : max(common[i + 1][j], common[i][j + 1])
        }
    }
    var lines: [String] = []
    var i = 0
    var j = 0
    while i < old.count || j < new.count {
        if i < old.count, j < new.count, old[i] == new[j] {
            lines.append("  \(old[i])")
            i += 1
            j += 1
        } else if j < new.count, i == old.count || common[i][j + 1] >= common[i + 1][j] {
            lines.append("+ \(new[j])")
            j += 1
        } else {
            lines.append("− \(old[i])")
            i += 1
        }
    }
    return lines
}
