/// How a call reaches its method: the interfaces served, `org.varlink.service` built in, and the check of every
/// call's parameters against the description that is published.
extension VarlinkServer {
    /// Answers one message as a connection from `peer` would have it answered, without a socket: `replies`
    /// receives each reply message (NUL-terminated), in order, and none for a `oneway` call. The caller counts as
    /// gone once the method has returned (a `Monitor` sends its first state only). Returns why the message is not a
    /// call (a connection is closed for that), or `nil`. For fuzzing the whole path from bytes to replies, and for
    /// in-process callers.
    public func answer(
        _ message: [UInt8], from peer: VarlinkPeer, replies: @escaping @Sendable ([UInt8]) -> Void
    ) -> VarlinkCall.NotACall? {
        let call: VarlinkCall
        switch VarlinkCall.decode(message) {
        case .success(let decoded): call = decoded
        case .failure(let problem): return problem
        }
        let replier = VarlinkReplier(call: call) { replier, message, _ in
            guard !replier.call.oneway else { return }
            // One delivery may hold several replies (``VarlinkReplier/reply(continuingWith:)``): one each.
            for reply in message.split(separator: 0) { replies(Array(reply) + [0]) }
        }
        dispatch(call, peer: peer, replier: replier)
        replier.cancel()
        return nil
    }

    /// Routes one call: on the server queue for a connection's call, on the caller's thread for
    /// ``answer(_:from:replies:)`` (it reads only what never changes after init). A call's parameters are checked
    /// against its interface's description first (``MethodSignature``), `org.varlink.service`'s as any other's.
    func dispatch(_ call: VarlinkCall, peer: VarlinkPeer, replier: VarlinkReplier) {
        guard let interface = interfaces[call.interface] else {
            replier.error(VarlinkStandardError.interfaceNotFound, ["interface": .string(call.interface)])
            return
        }
        let method = interface.methods[call.member]
        let builtIn = call.interface == "org.varlink.service" && interface.signatures[call.member] != nil
        guard method != nil || builtIn else {
            replier.error(VarlinkStandardError.methodNotFound, ["method": .string(call.method)])
            return
        }
        if let invalid = interface.signatures[call.member]?.invalidParameter(in: call.parameters) {
            replier.error(VarlinkStandardError.invalidParameter, ["parameter": .string(invalid)])
            return
        }
        if let method {
            method(call, peer, replier)
        } else if call.member == "GetInfo" {
            replier.reply(info)
        } else {
            // GetInterfaceDescription: `interface` is a string, checked above.
            let name = call.parameters["interface"]?.stringValue ?? ""
            guard let described = interfaces[name] else {
                replier.error(VarlinkStandardError.interfaceNotFound, ["interface": .string(name)])
                return
            }
            replier.reply(["description": .string(described.description)])
        }
    }

    static let serviceDescription = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()
        """
}
