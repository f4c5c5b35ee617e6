/// Shell-style glob matching over names: `*` (any run), `?` (one character), `[abc]`, `[a-z]`, `[!...]`.
public enum Glob {
    /// `true` when `name` matches `pattern` as a whole.
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        match(Array(pattern), 0, Array(name), 0)
    }

    private static func match(_ pattern: [Character], _ p: Int, _ name: [Character], _ n: Int) -> Bool {
        var p = p
        var n = n
        var starP = -1
        var starN = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == "*" {
                starP = p
                starN = n
                p += 1
            } else if p < pattern.count, let next = single(pattern, p, name[n]) {
                p = next
                n += 1
            } else if starP >= 0 {
                p = starP + 1
                starN += 1
                n = starN
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" {
            p += 1
        }
        return p == pattern.count
    }

    /// If the pattern element at `p` matches `character`, the index after that element.
    private static func single(_ pattern: [Character], _ p: Int, _ character: Character) -> Int? {
        switch pattern[p] {
        case "?":
            return p + 1
        case "[":
            guard let close = pattern[(p + 1)...].dropFirst().firstIndex(of: "]") else {
                return character == "[" ? p + 1 : nil
            }
            var set = Array(pattern[(p + 1)..<close])
            let negated = set.first == "!" || set.first == "^"
            if negated {
                set.removeFirst()
            }
            var matched = false
            var index = 0
            while index < set.count {
                if index + 2 < set.count, set[index + 1] == "-" {
                    if set[index] <= character && character <= set[index + 2] {
                        matched = true
                    }
                    index += 3
                } else {
                    if set[index] == character {
                        matched = true
                    }
                    index += 1
                }
            }
            return matched != negated ? close + 1 : nil
        default:
            return pattern[p] == character ? p + 1 : nil
        }
    }
}
