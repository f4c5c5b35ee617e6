import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A blocking Varlink client on an AF_UNIX stream socket: one call at a time, replies read to the end.
public final class VarlinkClient {
    private let fd: Int32
    private var framing = VarlinkFraming(maximumMessageBytes: 64 << 20)
    private var pending: [[UInt8]] = []

    /// Connects to the service at `path`.
    public init(path: String) throws(VarlinkClientError) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .unreachable(path: path, errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw .unreachable(path: path, errno: code)
        }
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Calls `method` and returns the reply's parameters; an error reply is thrown.
    public func call(
        _ method: String, _ parameters: [String: JSONValue] = [:]
    ) throws(VarlinkClientError)
        -> [String: JSONValue]
    {
        try send(VarlinkCall(method: method, parameters: parameters))
        let reply = try receive()
        if let error = reply.error {
            throw .error(name: error, parameters: reply.parameters)
        }
        return reply.parameters
    }

    /// Calls `method` and decodes the reply's parameters straight into `Parameters`, without a ``JSONValue`` tree
    /// in between (at 1,000 links that tree costs more than the call); an error reply is thrown.
    public func call<Parameters: Decodable>(
        _ method: String, _ parameters: [String: JSONValue] = [:], as type: Parameters.Type
    ) throws(VarlinkClientError) -> Parameters {
        try send(VarlinkCall(method: method, parameters: parameters))
        let message = try receiveMessage()
        let reply: TypedReply<Parameters>
        do {
            reply = try JSONTextDecoder().decode(TypedReply<Parameters>.self, from: message)
        } catch {
            throw .malformedReply(String(decoding: message.prefix(200), as: UTF8.self))
        }
        return try reply.result.get()
    }

    /// Calls `method` with `more` and hands each reply's parameters to `body` until the last reply, or until
    /// `body` returns `false`.
    public func callWithMore(
        _ method: String,
        _ parameters: [String: JSONValue] = [:],
        _ body: ([String: JSONValue]) -> Bool
    ) throws(VarlinkClientError) {
        try send(VarlinkCall(method: method, parameters: parameters, more: true))
        while true {
            let reply = try receive()
            if let error = reply.error {
                throw .error(name: error, parameters: reply.parameters)
            }
            guard body(reply.parameters), reply.continues else { return }
        }
    }

    /// The replies of a `more` call as an AsyncSequence, read on a queue of their own (its thread blocks in recv).
    public static func stream(
        path: String,
        _ method: String,
        _ parameters: [String: JSONValue] = [:]
    ) -> AsyncThrowingStream<[String: JSONValue], any Error> {
        AsyncThrowingStream { continuation in
            DispatchQueue(label: "varlink.stream").async {
                do {
                    let client = try VarlinkClient(path: path)
                    try client.callWithMore(method, parameters) { reply in
                        if case .terminated = continuation.yield(reply) { return false }
                        return true
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }

    private func send(_ call: VarlinkCall) throws(VarlinkClientError) {
        guard let bytes = try? VarlinkFraming.encode(call) else { throw .malformedReply("cannot encode the call") }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                // Whatever failed (the service closed first: EPIPE), a receive follows and reports it: what the
                // service sent before closing, such as the error saying why it refused the connection, is still
                // there to read, and otherwise the disconnection is.
                return
            }
            offset += written
        }
    }

    private func receive() throws(VarlinkClientError) -> VarlinkReply {
        let message = try receiveMessage()
        do {
            return try JSONTextDecoder().decode(VarlinkReply.self, from: message)
        } catch {
            throw .malformedReply(String(decoding: message.prefix(200), as: UTF8.self))
        }
    }

    private func receiveMessage() throws(VarlinkClientError) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while pending.isEmpty {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .disconnected }
            do {
                pending += try framing.append(chunk[0..<count])
            } catch {
                throw .malformedReply("a reply longer than 64 MiB")
            }
        }
        return pending.removeFirst()
    }
}

/// A reply whose parameters decode into `Parameters`, or an error reply (whose parameters stay JSON values).
private struct TypedReply<Parameters: Decodable>: Decodable {
    let result: Result<Parameters, VarlinkClientError>

    private enum CodingKeys: String, CodingKey {
        case parameters, error
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let error = try container.decodeIfPresent(String.self, forKey: .error) {
            let parameters = try container.decodeIfPresent([String: JSONValue].self, forKey: .parameters) ?? [:]
            result = .failure(.error(name: error, parameters: parameters))
        } else {
            result = .success(try container.decode(Parameters.self, forKey: .parameters))
        }
    }
}
