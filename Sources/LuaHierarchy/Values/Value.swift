/// A plain data value: what crosses between Lua and Swift, and what events and errors are
/// made of when they come from Swift.
///
/// Lua strings are byte strings: one that is valid UTF-8 arrives as `.string`, any other as
/// `.bytes`, and both go back to Lua as the same bytes (NUL included). Lua integers and
/// floats stay apart (`.int` / `.double`). A Lua table whose keys are exactly `1...n` is an
/// `.array`; one whose keys are all strings is a `.map`; the empty table is an empty `.map`.
public enum Value: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case array([Value])
    case map([String: Value])

    /// An event: `{type = type, ...fields}`.
    public static func event(_ type: String, _ fields: [String: Value] = [:]) -> Value {
        var map = fields
        map["type"] = .string(type)
        return .map(map)
    }

    /// An error: `{type = type, message = message, ...fields}`.
    public static func error(_ type: String = "Error", message: String, _ fields: [String: Value] = [:]) -> Value {
        var map = fields
        map["type"] = .string(type)
        map["message"] = .string(message)
        return .map(map)
    }

    /// The field `key` of a map, or nil.
    public subscript(key: String) -> Value? {
        if case .map(let map) = self { return map[key] }
        return nil
    }

    /// The text of a `.string`, or nil.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The `type` field of a map when it is a string.
    public var typeName: String? { self["type"]?.stringValue }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension Value: CustomStringConvertible {
    /// A compact, Lua-flavoured rendering with keys sorted, for messages and logs.
    public var description: String {
        switch self {
        case .null: return "nil"
        case .bool(let flag): return flag ? "true" : "false"
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .string(let text): return String(reflecting: text)
        case .bytes(let bytes): return "<\(bytes.count) bytes>"
        case .array(let items): return "{" + items.map(\.description).joined(separator: ", ") + "}"
        case .map(let map):
            let fields = map.keys.sorted().map { "\($0) = \(map[$0]!.description)" }
            return "{" + fields.joined(separator: ", ") + "}"
        }
    }
}
