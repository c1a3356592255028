/// A Swift error that knows how it reads as a reported error. Any other thrown Swift error is
/// reported with its Swift type name as `type` and its description as `message`.
public protocol ReportableError: Error {
    /// The reported error's `type`.
    var errorType: String { get }
    var errorMessage: String { get }
    /// More fields for the reported error.
    var errorFields: [String: Value] { get }
}

extension ReportableError {
    /// No more fields, by default.
    public var errorFields: [String: Value] { [:] }
}

/// A dispatch nested deeper than the hierarchy's limit (contract §4): thrown by `trigger` and
/// `report`, raised in Lua by `triggerEvent` and `reportError`.
public struct DispatchDepthExceeded: ReportableError, CustomStringConvertible {
    /// The hierarchy's nesting limit that was passed.
    public var limit: Int
    /// `DispatchDepthExceeded`.
    public var errorType: String { "DispatchDepthExceeded" }
    /// Names the limit and the likely cause: a responder that triggers or reports what reaches it.
    public var errorMessage: String {
        "dispatch nested deeper than the limit of \(limit) (a responder that triggers or reports what reaches itself?)"
    }
    /// The `limit`, as an integer field.
    public var errorFields: [String: Value] { ["limit": .int(Int64(limit))] }
    /// `DispatchDepthExceeded: ` and the message.
    public var description: String { "\(errorType): \(errorMessage)" }
}

extension Message {
    /// The reported error for a thrown Swift error.
    init(swiftError error: any Error, where location: String) {
        if let error = error as? ScriptError {
            self.init(domain: .error, type: error.type, payload: .value(error.value))
        } else if let error = error as? any ReportableError {
            self = .hostError(error.errorType, error.errorMessage, where: location, error.errorFields)
        } else if let error = error as? PayloadError {
            self = .hostError("PayloadError", error.description, where: location)
        } else {
            self = .hostError(String(describing: Swift.type(of: error)), String(describing: error), where: location)
        }
    }
}
