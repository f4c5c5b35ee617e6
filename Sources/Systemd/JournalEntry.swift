public import Syslog

/// A 128-bit journal message id (`MESSAGE_ID=`), written as 32 lower-case hex digits, as `journalctl
/// --new-id128` prints it. Typed so that an id is never a free-form string.
public struct JournalMessageID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The 32 hex digits.
    public let hex: String

    /// An id from its 32 hex digits (dashes, as in a UUID, are accepted and dropped); `nil` if malformed.
    public init?(_ text: String) {
        let digits = text.lowercased().filter { $0 != "-" }
        guard digits.count == 32, digits.allSatisfy(\.isHexDigit) else { return nil }
        hex = digits
    }

    /// The 32 hex digits.
    public var description: String { hex }
}

/// One journal field: a valid name and a value of any bytes (newlines and binary data included).
public struct JournalField: Sendable, Equatable {
    /// The field's name.
    public var name: JournalFieldName
    /// The field's value.
    public var value: [UInt8]

    /// A field with a binary value.
    public init(_ name: JournalFieldName, bytes: [UInt8]) {
        self.name = name
        self.value = bytes
    }

    /// A field with a text value.
    public init(_ name: JournalFieldName, _ text: String) {
        self.init(name, bytes: Array(text.utf8))
    }
}

/// A structured journal entry: an ordered list of fields, in which a name may repeat.
///
/// ```swift
/// var entry = JournalEntry(message: "veth0 is routable", priority: .info)
/// entry.append(.normalizing("NETDEVD_IFNAME"), "veth0")
/// ```
public struct JournalEntry: Sendable, Equatable {
    /// The fields, in order.
    public var fields: [JournalField]

    /// An entry with `MESSAGE` and `PRIORITY`, and `MESSAGE_ID` when given.
    public init(message: String, priority: LogPriority = .info, messageID: JournalMessageID? = nil) {
        fields = [JournalField(.message, message), JournalField(.priority, String(priority.rawValue))]
        if let messageID {
            fields.append(JournalField(.messageID, messageID.hex))
        }
    }

    /// An entry with exactly these fields.
    public init(fields: [JournalField]) {
        self.fields = fields
    }

    /// Appends a text field.
    public mutating func append(_ name: JournalFieldName, _ value: String) {
        fields.append(JournalField(name, value))
    }

    /// Appends a binary field.
    public mutating func append(_ name: JournalFieldName, bytes: [UInt8]) {
        fields.append(JournalField(name, bytes: bytes))
    }

    /// The value of the first field called `name`, as text.
    public func value(of name: JournalFieldName) -> String? {
        fields.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// The entry's `PRIORITY` (info when absent or unreadable).
    public var priority: LogPriority {
        value(of: .priority).flatMap(Int.init).flatMap(LogPriority.init(rawValue:)) ?? .info
    }
}
