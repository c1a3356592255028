import CJSONReader

/// Why a JSON text was refused: what is wrong and the byte where it was seen.
public struct JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong with the text.
    public var message: String
    /// 1-based byte column in the text.
    public var column: Int

    /// An error saying `message`, seen at byte `column` (1-based).
    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    /// `column N: message`.
    public var description: String { "column \(column): \(message)" }
}

/// JSON (RFC 8259) to and from `Value`, strictly: integers stay `.int` and numbers with a
/// fraction or an exponent become `.double`; an integer outside 64 bits or a float that
/// overflows is refused (never silently rounded); strings must be valid UTF-8 (escapes
/// included: a lone surrogate is refused); `\u0000` survives; nesting is bounded.
/// Duplicate object keys: the last one wins (as in most parsers).
///
/// Reading is the C reader's (Sources/CJSONReader), the one the Lua bridge reads JSON into Lua
/// values with: one set of rules and messages for every JSON text the host takes in.
public enum JSON {
    /// Deeper nesting than this is refused (the same bound Lua-to-Swift conversion uses).
    public static let defaultDepthLimit = 200

    /// Parses one JSON text (surrounding whitespace allowed).
    public static func parse(_ text: String, depthLimit: Int = defaultDepthLimit) throws(JSONError) -> Value {
        var text = text
        let result = text.withUTF8 { bytes in
            Result { () throws(JSONError) in try parse(UnsafeRawBufferPointer(bytes), depthLimit: depthLimit) }
        }
        return try result.get()
    }

    /// Parses one JSON text held in `bytes`.
    public static func parse(_ bytes: UnsafeRawBufferPointer, depthLimit: Int = defaultDepthLimit) throws(JSONError) -> Value {
        try JSONParser(bytes.bindMemory(to: UInt8.self), depthLimit: depthLimit, nulls: .keep).parseDocument()
    }
}

/// A JSON text read by the C reader (luahier_jsonread.h), built into `Value`s, or handed
/// member by member (a request line) to code that reads each member's value as it likes (the
/// Lua bridge reads payloads straight into Lua: `LuaHost.parseMessage`).
final class JSONParser {
    /// The C reader (about 5 kB: the containers it follows), over bytes the caller keeps alive.
    let reader: UnsafeMutablePointer<luahier_JSONReader>
    private let nulls: Nulls

    /// What `null` becomes: `.null`, or Lua's nil: a `null` object member is dropped (an
    /// absent field, as in Lua) and a `null` in an array refused (a hole in a sequence).
    enum Nulls {
        case keep, asLuaNil
    }

    init(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int, nulls: Nulls) {
        self.nulls = nulls
        reader = .allocate(capacity: 1)
        luahier_jsoninit(reader, bytes.baseAddress, bytes.count, Int32(clamping: depthLimit), nulls == .asLuaNil ? 1 : 0)
    }

    deinit {
        luahier_jsonfree(reader)
        reader.deallocate()
    }

    /// Why the reader refused the text.
    var error: JSONError {
        JSONError(String(cString: reader.pointee.message), column: Int(reader.pointee.column))
    }

    /// The text as one value, with only whitespace around it.
    func parseDocument() throws(JSONError) -> Value {
        let value = try parseValue()
        try expectEnd()
        return value
    }

    /// After the last value: only whitespace may follow.
    func expectEnd() throws(JSONError) {
        guard luahier_jsonexpectend(reader) != 0 else { throw error }
    }

    /// The members of a top-level object, each handed to `member` with the parser placed at
    /// its value, which `member` must read (`parseValue`, or straight into Lua). False when
    /// the text is not an object (nothing read).
    func parseMembers(_ member: (String, JSONParser) throws(JSONError) -> Void) throws(JSONError) -> Bool {
        guard luahier_jsonmember(reader) == LUAHIER_JSON_BEGIN_OBJECT else { return false }
        while true {
            switch luahier_jsonmember(reader) {
            case Int32(LUAHIER_JSON_KEY): try member(currentString, self)
            case Int32(LUAHIER_JSON_END_OBJECT): return true
            default: throw error
            }
        }
    }

    /// The string the last token holds.
    private var currentString: String {
        let token = reader.pointee
        return String(decoding: UnsafeRawBufferPointer(start: token.string, count: token.string_length), as: UTF8.self)
    }

    /// An open container: its items or members so far, and the key whose value comes next.
    /// Added to in place (`frames[last]`), so a container of n values is built in O(n).
    private struct Frame {
        var isArray: Bool
        var items: [Value] = []
        var map: [String: Value] = [:]
        var key = ""
    }

    /// One value (whitespace before it skipped) as a `Value`, reading `null` as the parser
    /// does, or kept wherever it is (`keepingNulls`: a request's `id`, echoed as it came).
    func parseValue(keepingNulls: Bool = false) throws(JSONError) -> Value {
        guard keepingNulls, nulls == .asLuaNil else { return try parseValue(nulls: nulls) }
        reader.pointee.nulls_as_nil = 0
        defer { reader.pointee.nulls_as_nil = 1 }
        return try parseValue(nulls: .keep)
    }

    /// Whether the value at the parser's place is `null`; if so it is read.
    func skipNull() throws(JSONError) -> Bool {
        luahier_jsonskipspace(reader)
        let r = reader.pointee
        guard r.index + 4 <= r.length, let bytes = r.bytes,
            bytes[r.index] == UInt8(ascii: "n"), bytes[r.index + 1] == UInt8(ascii: "u"),
            bytes[r.index + 2] == UInt8(ascii: "l"), bytes[r.index + 3] == UInt8(ascii: "l")
        else { return false }
        _ = try parseValue(keepingNulls: true)
        return true
    }

    private func parseValue(nulls: Nulls) throws(JSONError) -> Value {
        luahier_jsonbegin(reader, 1)
        var frames: [Frame] = []
        while true {
            var value: Value
            switch luahier_jsonnext(reader) {
            case Int32(LUAHIER_JSON_BEGIN_OBJECT): frames.append(Frame(isArray: false)); continue
            case Int32(LUAHIER_JSON_BEGIN_ARRAY): frames.append(Frame(isArray: true)); continue
            case Int32(LUAHIER_JSON_KEY):
                if !frames.isEmpty { frames[frames.count - 1].key = currentString }
                continue
            case Int32(LUAHIER_JSON_NULL): value = .null
            case Int32(LUAHIER_JSON_TRUE): value = .bool(true)
            case Int32(LUAHIER_JSON_FALSE): value = .bool(false)
            case Int32(LUAHIER_JSON_INTEGER): value = .int(reader.pointee.integer)
            case Int32(LUAHIER_JSON_DOUBLE): value = .double(reader.pointee.number)
            case Int32(LUAHIER_JSON_STRING): value = .string(currentString)
            case Int32(LUAHIER_JSON_END_OBJECT), Int32(LUAHIER_JSON_END_ARRAY):
                guard let frame = frames.popLast() else { continue }
                value = frame.isArray ? .array(frame.items) : .map(frame.map)
            default:
                throw error
            }
            guard !frames.isEmpty else { return value }
            let last = frames.count - 1
            if frames[last].isArray {
                frames[last].items.append(value)
            } else if value != .null || nulls == .keep {
                let key = frames[last].key
                frames[last].map[key] = value
            }
        }
    }
}
