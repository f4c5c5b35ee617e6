#if canImport(Glibc)
import Glibc
#endif

/// A device's udev properties (`INTERFACE`, `IFINDEX`, `ID_NET_DRIVER`, ...), kept in one buffer.
///
/// The model holds one for every device: at 20,000 links, 20,000 of them, each with a dozen or more properties. As a
/// `[String: String]` each took a dictionary's table and a heap string for most keys and values, about 1 KB a device
/// (massif at 4,000 links: 4.2 of the 7.2 MB live heap); here a device's properties are one allocation of their
/// bytes and lengths, made from libudev's strings without a `String` in between. Contract: it holds what it was made
/// from (as UTF-8, repaired where it was not), each key once; it iterates in the order of the keys' UTF-8 bytes (the order JSON objects are written in);
/// two are equal when they hold the same properties. A lookup reads the buffer (a device has tens of properties, not
/// thousands) and compares the key's bytes. A device report (`NetdevWire`) carries the same buffer, and the reports'
/// writer copies its bytes in order (``forEachUTF8(_:)``).
public struct DeviceProperties: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, Codable,
    CustomStringConvertible
{
    /// For each property, in its key's UTF-8 order: the key's length, the key, the value's length, the value; each
    /// length in 7-bit groups, low first, the high bit set on all but the last.
    private var bytes: [UInt8]

    /// No properties.
    public init() {
        bytes = []
    }

    /// The properties in `dictionary`.
    public init(_ dictionary: [String: String]) {
        self.init(list: dictionary.map { ($0.key, $0.value) })
    }

    /// The properties in `list`, in any order; of a key given twice, the last value.
    public init(list: [(key: String, value: String)]) {
        self.init(byteList: list.map { (key: $0.key.utf8, value: $0.value.utf8) })
    }

    /// The properties in `list`, keys and values as bytes (UTF-8, or repaired as ``init(pairs:)`` says), in any
    /// order; of a key given twice, the last value.
    public init<Bytes: Collection<UInt8>>(byteList list: [(key: Bytes, value: Bytes)]) {
        var text: [UInt8] = []
        var ranges: [(key: Range<Int>, value: Range<Int>)] = []
        ranges.reserveCapacity(list.count)
        for (key, value) in list {
            let keyStart = text.count
            text += key
            let valueStart = text.count
            text += value
            ranges.append((keyStart..<valueStart, valueStart..<text.count))
        }
        self = text.withUnsafeBufferPointer { text in
            DeviceProperties(
                pairs: ranges.map {
                    (UnsafeBufferPointer(rebasing: text[$0.key]), UnsafeBufferPointer(rebasing: text[$0.value]))
                })
        }
    }

    /// The properties given as bytes, in any order (libudev's list, read without making a `String` of each key and
    /// value: a dictionary built and dropped for each device left the heap in holes between the buffers kept); of a
    /// key given twice, the last value.
    ///
    /// Bytes that are not UTF-8 are repaired as `String(decoding:as:)` repairs them: udev's bytes are the kernel's,
    /// and a link may be named `\xff`. So every holder and writer of properties has UTF-8 (a report is valid JSON, a
    /// key sorts as its `String` does), and only a device with bytes of 0x80 or more is checked further.
    public init(pairs: [(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)]) {
        func isUTF8(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
            !text.contains { $0 >= 0x80 } || String(validating: text, as: UTF8.self) != nil
        }
        guard pairs.allSatisfy({ isUTF8($0.key) && isUTF8($0.value) }) else {
            self = DeviceProperties(
                list: pairs.map { (String(decoding: $0.key, as: UTF8.self), String(decoding: $0.value, as: UTF8.self)) }
            )
            return
        }
        let order = pairs.indices.sorted { left, right in
            let (a, b) = (pairs[left].key, pairs[right].key)
            let common = Swift.min(a.count, b.count)
            let compared = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
            return compared != 0 ? compared < 0 : a.count != b.count ? a.count < b.count : left < right
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pairs.reduce(0) { $0 + $1.key.count + $1.value.count + 4 })
        for (position, index) in order.enumerated() {
            let next = position + 1 < order.count ? order[position + 1] : nil
            if let next, pairs[next].key.elementsEqual(pairs[index].key) { continue }
            Self.append(pairs[index].key, to: &bytes)
            Self.append(pairs[index].value, to: &bytes)
        }
        self.bytes = bytes
    }

    /// The properties of a literal.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(list: elements.map { (key: $0.0, value: $0.1) })
    }

    /// The value of `key`, `nil` when the device has no such property. Setting one makes a new buffer.
    public subscript(key: String) -> String? {
        get {
            var key = key
            return key.withUTF8 { wanted in
                bytes.withUnsafeBufferPointer { buffer in
                    var position = 0
                    while position < buffer.count {
                        let name = Self.field(buffer, &position)
                        let value = Self.field(buffer, &position)
                        if name.elementsEqual(wanted) { return String(decoding: value, as: UTF8.self) }
                    }
                    return nil
                }
            }
        }
        set {
            var dictionary = self.dictionary
            dictionary[key] = newValue
            self = DeviceProperties(dictionary)
        }
    }

    /// Whether the device has no properties.
    public var isEmpty: Bool { bytes.isEmpty }

    /// The keys, in their UTF-8 order.
    public var keys: [String] { map(\.key) }

    /// Calls `body` with each property's key and value as UTF-8 bytes, in the keys' order: for a writer that copies
    /// them (a report, a hook's JSON) without making a `String` of each. The bytes are valid only during the call.
    public func forEachUTF8(_ body: (_ key: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            var position = 0
            while position < buffer.count {
                let key = Self.field(buffer, &position)
                body(key, Self.field(buffer, &position))
            }
        }
    }

    /// The properties as a dictionary (for a report; each call builds one).
    public var dictionary: [String: String] {
        Dictionary(self.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }

    /// The properties as a dictionary prints.
    public var description: String { dictionary.description }

    /// The properties in their keys' UTF-8 order.
    public func makeIterator() -> Iterator {
        Iterator(bytes: bytes)
    }

    /// Reads the properties one by one out of the buffer.
    public struct Iterator: IteratorProtocol {
        let bytes: [UInt8]
        var position = 0

        /// The next property, `nil` after the last.
        public mutating func next() -> (key: String, value: String)? {
            guard position < bytes.count else { return nil }
            return bytes.withUnsafeBufferPointer { buffer in
                let key = DeviceProperties.field(buffer, &position)
                let value = DeviceProperties.field(buffer, &position)
                return (String(decoding: key, as: UTF8.self), String(decoding: value, as: UTF8.self))
            }
        }
    }

    /// Decodes a JSON object of strings.
    public init(from decoder: any Decoder) throws {
        self.init(try [String: String](from: decoder))
    }

    /// Encodes as a JSON object of strings.
    public func encode(to encoder: any Encoder) throws {
        try dictionary.encode(to: encoder)
    }

    private static func append(_ text: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        var length = text.count
        while length >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: length) | 0x80)
            length >>= 7
        }
        bytes.append(UInt8(length))
        bytes.append(contentsOf: text)
    }

    /// The field at `position` (a length, then that many bytes); moves `position` past it.
    private static func field(_ buffer: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> UnsafeBufferPointer<UInt8>
    {
        var length = 0
        var shift = 0
        while true {
            let byte = buffer[position]
            position += 1
            length |= Int(byte & 0x7F) << shift
            guard byte & 0x80 != 0 else { break }
            shift += 7
        }
        defer { position += length }
        return UnsafeBufferPointer(rebasing: buffer[position..<position + length])
    }
}
