/// Where a coder is inside the value, kept as a link to the level above: going one level deeper costs one small
/// allocation instead of a copy of the whole path, and an array element's key ("Index 3") is not written out. The
/// `[any CodingKey]` that `codingPath` returns is built only when something reads it, which for these coders is an
/// error's context.
indirect enum CodingPath {
    case root
    case key(any CodingKey, in: CodingPath)
    case index(Int, in: CodingPath)

    /// The path one member deeper.
    func appending(_ key: any CodingKey) -> CodingPath {
        .key(key, in: self)
    }

    /// The path as `Encoder.codingPath` and `DecodingError.Context` say it, outermost first.
    var keys: [any CodingKey] {
        var reversed: [any CodingKey] = []
        var level = self
        while true {
            switch level {
            case .root: return reversed.reversed()
            case .key(let key, let above):
                reversed.append(key)
                level = above
            case .index(let index, let above):
                reversed.append(JSONIndexKey(index: index))
                level = above
            }
        }
    }
}

/// A key for an array element ("Index 3"), or for a super encoder ("super"). The element's text is made only when
/// read.
struct JSONIndexKey: CodingKey {
    private let name: String?
    let intValue: Int?

    init(index: Int) {
        name = nil
        intValue = index
    }

    init(stringValue: String) {
        name = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        self.init(index: intValue)
    }

    var stringValue: String { name ?? "Index \(intValue ?? 0)" }

    static let superKey = JSONIndexKey(stringValue: "super")
}
