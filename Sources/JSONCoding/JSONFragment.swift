/// A JSON value taken as it came, to be written out again: a program that only passes a value on (`netdevctl --json`
/// printing a reply's `links`) keeps it as parsed instead of decoding it into types and encoding those again, which
/// at 20,000 links is most of the command's time.
///
/// The contract: encoding a fragment writes the value it was decoded from, with keys sorted as ``JSONTextEncoder``
/// sorts them and numbers with the digits they came with (a 64-bit counter is not rounded through `Double`).
/// Members no type names (a newer netdevd's) are kept, not dropped. Decoded by another decoder, it takes the value
/// through ``JSONValue`` (numbers as `Double`).
public struct JSONFragment: Codable, Sendable {
    let node: JSONNode

    init(_ node: JSONNode) {
        self.node = node
    }

    /// Takes the value as it is (from ``JSONTextDecoder`` without a copy).
    public init(from decoder: any Decoder) throws {
        if let decoder = decoder as? NodeDecoder {
            node = decoder.node
        } else {
            node = try JSONValue(from: decoder).node
        }
    }

    /// Writes the value back.
    public func encode(to encoder: any Encoder) throws {
        if let encoder = encoder as? NodeEncoder {
            encoder.storage = .done(node)
        } else {
            try JSONValue(node).encode(to: encoder)
        }
    }

    /// The value as compact JSON text.
    public var text: String {
        var writer = JSONWriter(pretty: false)
        writer.write(node)
        return String(decoding: writer.output, as: UTF8.self)
    }

}
