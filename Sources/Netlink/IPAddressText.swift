#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The address family of an address or route.
public enum AddressFamily: String, Sendable, Codable, CaseIterable {
    /// IPv4 (AF_INET).
    case ipv4
    /// IPv6 (AF_INET6).
    case ipv6

    init?(kernel family: UInt8) {
        switch Int32(family) {
        case AF_INET: self = .ipv4
        case AF_INET6: self = .ipv6
        default: return nil
        }
    }

    /// The kernel's AF_* number.
    var kernelValue: UInt8 {
        switch self {
        case .ipv4: UInt8(AF_INET)
        case .ipv6: UInt8(AF_INET6)
        }
    }

    /// Bytes in an address of this family.
    var addressLength: Int {
        self == .ipv4 ? 4 : 16
    }
}

/// The textual form of a raw IPv4 or IPv6 address (`inet_ntop`: `192.0.2.1`, `2001:db8::1`).
func addressText(
    _ bytes: ArraySlice<UInt8>,
    family: AddressFamily,
    offset: Int
) throws(NetlinkParseError) -> String {
    guard bytes.count == family.addressLength else {
        throw NetlinkParseError(
            offset: offset,
            reason: "\(family.rawValue) address of \(bytes.count) bytes, expected \(family.addressLength)"
        )
    }
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    let converted = Array(bytes).withUnsafeBytes { raw in
        inet_ntop(family == .ipv4 ? AF_INET : AF_INET6, raw.baseAddress, &text, socklen_t(text.count))
    }
    guard converted != nil else {
        throw NetlinkParseError(offset: offset, reason: "unprintable \(family.rawValue) address")
    }
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
