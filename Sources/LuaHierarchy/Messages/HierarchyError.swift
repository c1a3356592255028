/// Why a `Hierarchy` call failed before any dispatch ran.
public enum HierarchyError: Error, Hashable, Sendable, CustomStringConvertible {
    case luaStateUnavailable
    case preludeFailed(String)
    case noSuchNode(String)
    case foreignNode
    case invalidEvent(String)
    case invalidError(String)

    /// What went wrong, in one line for a person.
    public var description: String {
        switch self {
        case .luaStateUnavailable: return "could not create a Lua state (out of memory?)"
        case .preludeFailed(let message): return "could not set up the Lua host: \(message)"
        case .noSuchNode(let path): return "no node at \(path)"
        case .foreignNode: return "that node belongs to another hierarchy"
        case .invalidEvent(let value):
            return "not an event: \(value) (an event is a string or a table with a string 'type')"
        case .invalidError(let value):
            return "not an error: \(value) (an error is a string or a table whose 'type' is a string)"
        }
    }
}

/// A script that failed to load or run: a syntax error, or an error raised at its top level.
public struct ScriptError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `SyntaxError`, `LuaError`, or the `type` of the error table the script raised.
    public var type: String
    /// What went wrong, without the place.
    public var message: String
    /// `file:line`, when known.
    public var location: String?
    /// Lua's traceback of where it was raised, when there is one.
    public var traceback: String?
    /// The whole error value (with `cause`, payload fields, ...).
    public var value: Value

    init(_ message: Message) {
        let value = message.describedValue(bounded: true)
        self.type = message.type
        self.message = ErrorText.message(of: value) ?? ""
        self.location = value["where"]?.stringValue
        self.traceback = value["traceback"]?.stringValue
        self.value = value
    }

    /// A failure of the host itself (no Lua error behind it).
    init(type: String, message: String) {
        self.type = type
        self.message = message
        self.value = .error(type, message: message)
    }

    /// `file:line: message` (type first when it is not a plain Lua error).
    public var description: String {
        let text =
            (type == "LuaError" || type == "SyntaxError" || type == Message.interruptedType) ? message
            : message.isEmpty ? type : "\(type): \(message)"
        return location.map { "\($0): \(text)" } ?? text
    }
}
