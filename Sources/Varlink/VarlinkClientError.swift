import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Why a call failed: the service could not be reached, the connection broke, or the service answered with an
/// error.
public enum VarlinkClientError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Connecting to the socket failed (errno): usually the service is not running.
    case unreachable(path: String, errno: Int32)
    /// The connection closed before the reply was complete.
    case disconnected
    /// A reply could not be read (not JSON, or too long).
    case malformedReply(String)
    /// The service answered with this error.
    case error(name: String, parameters: [String: JSONValue])

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .unreachable(let path, let code):
            "cannot connect to \(path): \(String(cString: strerror(code)))"
        case .disconnected:
            "the service closed the connection"
        case .malformedReply(let reason):
            "unreadable reply: \(reason)"
        case .error(let name, let parameters):
            parameters.isEmpty ? name : "\(name) \(JSONValue.object(parameters))"
        }
    }
}
