@_exported public import JSONCoding

/// The errors of `org.varlink.service`, which every Varlink service answers with.
public enum VarlinkStandardError {
    /// The interface is not served here.
    public static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
    /// The interface has no such method.
    public static let methodNotFound = "org.varlink.service.MethodNotFound"
    /// The method exists but is not implemented.
    public static let methodNotImplemented = "org.varlink.service.MethodNotImplemented"
    /// A parameter is missing or of the wrong type.
    public static let invalidParameter = "org.varlink.service.InvalidParameter"
    /// The call needs more rights.
    public static let permissionDenied = "org.varlink.service.PermissionDenied"
    /// The call needs `more`.
    public static let expectedMore = "org.varlink.service.ExpectedMore"
}
