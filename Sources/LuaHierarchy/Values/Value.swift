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

    /// The number as an integer, read as Lua's rules read it: an `.int`, or a `.double` with an
    /// exact integer value (`500.0` is `500`, as `500.0 == 500` in Lua); nil otherwise.
    public var intValue: Int64? {
        switch self {
        case .int(let number): return number
        case .double(let number):
            guard number.rounded(.towardZero) == number, number >= -0x1p63, number < 0x1p63 else { return nil }
            return Int64(number)
        default: return nil
        }
    }

    /// The number as a double: a `.double`, or an `.int` converted (as Lua converts it).
    public var doubleValue: Double? {
        switch self {
        case .double(let number): return number
        case .int(let number): return Double(number)
        default: return nil
        }
    }

    /// The flag of a `.bool`, or nil (a Lua test would read any other non-nil value as true:
    /// this reads only booleans).
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The items of an `.array`, or nil.
    public var arrayValue: [Value]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The fields of a `.map`, or nil.
    public var mapValue: [String: Value]? {
        if case .map(let fields) = self { return fields }
        return nil
    }

    /// Whether two values are equal as Lua's `==` compares plain data: numbers by value
    /// (`.int(500)` equals `.double(500.0)`), everything else as `==` does (tables by content,
    /// since plain data has no identity).
    public func equalsAsLua(_ other: Value) -> Bool {
        switch (self, other) {
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)):
            return Double(a) == b && Value.double(b).intValue == a
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.equalsAsLua($1) }
        case (.map(let a), .map(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map(value.equalsAsLua) ?? false }
        default:
            return self == other
        }
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// `nil` is `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// A boolean literal is `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal is `.int`.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A floating-point literal is `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal is `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal is `.array`.
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    /// A dictionary literal is `.map`; of repeated keys, the last one wins.
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
