#if canImport(Glibc)
import Glibc
#endif

/// JSON text written value by value into one byte buffer, for code that writes a known shape by hand on a hot path (a
/// hook's `NETDEVD_JSON`, a monitor's change: thousands a second in a burst, where building a tree for the generic
/// encoder cost more than the rest of the work).
///
/// Contract: the caller opens and closes each container and gives an object's members in the order of their keys'
/// UTF-8 bytes (``utf8Precedes(_:_:)``); written so, the bytes are ``JSONTextEncoder``'s for the same value: compact,
/// an absent optional left out (the `add` methods take `nil` and write nothing), strings as ``JSONString`` writes
/// them, integers as `String(_:)` spells them. The writer puts in the commas.
public struct JSONOutput {
    /// The text written so far.
    public private(set) var bytes: [UInt8]
    /// A value was written at this level: the next one needs a comma.
    private var followsValue = false

    /// A writer into a new buffer with room for `capacity` bytes.
    public init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// A writer that goes on at the end of `buffer`, which it takes over (``take()`` gives it back, with what was
    /// written): a value written into a larger text, such as a reply's frame, without a copy of either.
    public init(appendingTo buffer: inout [UInt8]) {
        bytes = []
        swap(&bytes, &buffer)
    }

    /// Gives up the text, leaving the writer empty (so the caller's buffer is not copied when it grows again).
    public mutating func take() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        return taken
    }

    /// Writes the comma between a value and the next at the same level.
    private mutating func separate() {
        if followsValue { bytes.append(UInt8(ascii: ",")) }
    }

    /// Opens an object (`{`) or an array (`[`), as a member's value or an array's element.
    public mutating func open(_ bracket: Unicode.Scalar) {
        separate()
        bytes.append(UInt8(ascii: bracket))
        followsValue = false
    }

    /// Closes what ``open(_:)`` opened.
    public mutating func close(_ bracket: Unicode.Scalar) {
        bytes.append(UInt8(ascii: bracket))
        followsValue = true
    }

    /// Writes the comma the next value needs, if any, and returns the offset that value starts at: for a caller that
    /// keeps where each element's text is, to copy it into a later text with ``append(encoded:)``.
    public mutating func startValue() -> Int {
        separate()
        followsValue = false
        return bytes.count
    }

    /// A value written before (one whole JSON value, as this writer wrote it), copied as it is.
    public mutating func append(encoded value: ArraySlice<UInt8>) {
        separate()
        bytes.append(contentsOf: value)
        followsValue = true
    }

    /// Starts the member `name`: its value is written next.
    public mutating func key(_ name: String) {
        separate()
        JSONString.append(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        followsValue = false
    }

    /// A string: an array's element, or the value after ``key(_:)``.
    public mutating func element(_ string: String) {
        separate()
        JSONString.append(string, to: &bytes)
        followsValue = true
    }

    /// An integer: an array's element, or the value after ``key(_:)``.
    public mutating func element(_ number: Int) {
        separate()
        DecimalText.append(number, to: &bytes)
        followsValue = true
    }

    /// The member `name` with a string value; nothing when it is `nil`.
    public mutating func add(_ name: String, string: String?) {
        guard let string else { return }
        key(name)
        element(string)
    }

    /// The member `name` with a string value, both given as UTF-8 bytes (kept elsewhere: a `String` is not made of
    /// each).
    public mutating func add(utf8 name: UnsafeBufferPointer<UInt8>, string value: UnsafeBufferPointer<UInt8>) {
        separate()
        JSONString.append(utf8: name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        JSONString.append(utf8: value, to: &bytes)
        followsValue = true
    }

    /// The member `name` with an integer value; nothing when it is `nil`.
    public mutating func add(_ name: String, number: Int?) {
        guard let number else { return }
        key(name)
        element(number)
    }

    /// The member `name` with an array of strings as its value.
    public mutating func add(_ name: String, strings: [String]) {
        add(name, array: strings) { $0.element($1) }
    }

    /// The member `name` with an array as its value, each element written by `write`.
    public mutating func add<Element>(
        _ name: String, array elements: [Element], _ write: (inout JSONOutput, Element) -> Void
    ) {
        key(name)
        open("[")
        for element in elements { write(&self, element) }
        close("]")
    }

    /// The member `name` with an object as its value: `members` in key order, each value written by `write`.
    public mutating func add<Value>(
        _ name: String, object members: [String: Value], _ write: (inout JSONOutput, Value) -> Void
    ) {
        key(name)
        object(members, write)
    }

    /// An object (an array's element, the value after ``key(_:)``, or a text of its own): `members` in key order,
    /// each value written by `write`.
    public mutating func object<Value>(_ members: [String: Value], _ write: (inout JSONOutput, Value) -> Void) {
        open("{")
        for member in members.sorted(by: { Self.utf8Precedes($0.key, $1.key) }) {
            key(member.key)
            write(&self, member.value)
        }
        close("}")
    }

    /// Whether `a` comes before `b` by their UTF-8 bytes: the order of an object's keys (for two valid strings, the
    /// order of their scalars).
    public static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var (a, b) = (a, b)
        return a.withUTF8 { left in
            b.withUTF8 { right in
                let common = min(left.count, right.count)
                let compared = common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
                return compared != 0 ? compared < 0 : left.count < right.count
            }
        }
    }
}

/// Integers in decimal, written straight into bytes (no `String` per number) with the digits `String(_:)` gives.
public enum DecimalText {
    /// The most bytes ``write(_:to:)`` writes: a sign and `UInt64.max`'s 20 digits.
    public static let maximumCount = 21

    /// Writes `value` at `start`, which has room for ``maximumCount`` bytes; returns how many it wrote.
    public static func write(_ value: Int, to start: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 0
        if value < 0 {
            start[0] = UInt8(ascii: "-")
            count = 1
        }
        let first = count
        var rest = value.magnitude
        repeat {
            start[count] = UInt8(ascii: "0") + UInt8(rest % 10)
            count += 1
            rest /= 10
        } while rest > 0
        var digits = UnsafeMutableBufferPointer(start: start + first, count: count - first)
        digits.reverse()
        return count
    }

    /// Appends `value` to `output`.
    public static func append(_ value: Int, to output: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for maximumCount
        withUnsafeMutableBytes(of: &digits) { buffer in
            let start = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            output.append(contentsOf: UnsafeBufferPointer(start: start, count: write(value, to: start)))
        }
    }
}
