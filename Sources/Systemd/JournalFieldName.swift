/// A journal field name that journald will accept: `A-Z`, `0-9` and `_`, at most 64 characters, not starting
/// with a digit or an underscore (names starting with `_` are trusted fields only journald sets).
public struct JournalFieldName: Hashable, Sendable, CustomStringConvertible {
    /// The name.
    public let rawValue: String

    /// The longest name journald accepts.
    public static let maximumLength = 64

    /// Accepts `name` only if it is already valid.
    public init(validating name: String) throws(JournalFieldNameError) {
        guard !name.isEmpty else { throw .empty }
        guard name.count <= Self.maximumLength else { throw .tooLong(name) }
        guard let first = name.unicodeScalars.first, !Self.isDigit(first), first != "_" else {
            throw .badStart(name)
        }
        guard name.unicodeScalars.allSatisfy(Self.isAllowed) else { throw .badCharacter(name) }
        rawValue = name
    }

    /// Makes a valid name out of any string: lower case is upper-cased, other characters outside `A-Z0-9_`
    /// become `_`, leading underscores are dropped, a leading digit gets an `F_` prefix, and the result is cut
    /// to 64 characters. An empty result is `FIELD`.
    public static func normalizing(_ name: String) -> JournalFieldName {
        var scalars = name.unicodeScalars.map { scalar -> Unicode.Scalar in
            if ("a"..."z").contains(scalar) {
                return Unicode.Scalar(scalar.value - 32)!
            }
            return isAllowed(scalar) ? scalar : "_"
        }
        while scalars.first == "_" {
            scalars.removeFirst()
        }
        var text = String(String.UnicodeScalarView(scalars))
        if let first = text.unicodeScalars.first, isDigit(first) {
            text = "F_" + text
        }
        if text.isEmpty {
            text = "FIELD"
        }
        return JournalFieldName(uncheckedRawValue: String(text.prefix(maximumLength)))
    }

    private init(uncheckedRawValue: String) {
        rawValue = uncheckedRawValue
    }

    /// The name.
    public var description: String { rawValue }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        ("A"..."Z").contains(scalar) || isDigit(scalar) || scalar == "_"
    }

    /// `MESSAGE`.
    public static let message = JournalFieldName(uncheckedRawValue: "MESSAGE")
    /// `PRIORITY`.
    public static let priority = JournalFieldName(uncheckedRawValue: "PRIORITY")
    /// `SYSLOG_IDENTIFIER`.
    public static let syslogIdentifier = JournalFieldName(uncheckedRawValue: "SYSLOG_IDENTIFIER")
    /// `MESSAGE_ID`.
    public static let messageID = JournalFieldName(uncheckedRawValue: "MESSAGE_ID")
    /// `CODE_FILE`.
    public static let codeFile = JournalFieldName(uncheckedRawValue: "CODE_FILE")
    /// `CODE_LINE`.
    public static let codeLine = JournalFieldName(uncheckedRawValue: "CODE_LINE")
    /// `CODE_FUNC`.
    public static let codeFunction = JournalFieldName(uncheckedRawValue: "CODE_FUNC")
}

/// Why a string is not a journal field name.
public enum JournalFieldNameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The name is empty.
    case empty
    /// Longer than 64 characters.
    case tooLong(String)
    /// Starts with a digit or an underscore.
    case badStart(String)
    /// Contains a character other than `A-Z`, `0-9` and `_`.
    case badCharacter(String)

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .empty: "journal field name is empty"
        case .tooLong(let name): "journal field name '\(name)' is longer than 64 characters"
        case .badStart(let name): "journal field name '\(name)' must not start with a digit or '_'"
        case .badCharacter(let name): "journal field name '\(name)' may contain only A-Z, 0-9 and '_'"
        }
    }
}
