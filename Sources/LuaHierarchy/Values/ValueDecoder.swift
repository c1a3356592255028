/// `Value`s as `Decodable` Swift types, without Foundation: the reading side of the Codable
/// bridge, and what typed Swift responders decode their input with (`handleError(MyError.self)
/// { error in ... }`).
///
/// Numbers read as Lua's rules read them: an integer field takes `500.0` (a double with an
/// exact integer value), a floating-point field takes `500`. A missing key is `nil` for an
/// optional and a `DecodingError.keyNotFound` otherwise; `.null` reads as nil. A number out of
/// the range of the type asked for is a `DecodingError.typeMismatch`, a finite double too large
/// for a `Float` included (infinity and NaN given as such read as themselves).
///
/// A map's keys (`allKeys`, which a `Dictionary` and any type that iterates its keys reads)
/// come sorted by their UTF-8 bytes, so that keys that read as the same key of the type decoded
/// (`"1"`, `"01"` and `"+1"` as an `Int`) give the same answer on every run: a `Dictionary`
/// keeps the last, here the plain spelling `"1"` when there is one.
///
/// An array or a map (or any value of a type other than the plain ones, which are read in
/// place) more than `depthLimit` keys inside the one decoded is a `DecodingError.dataCorrupted`
/// at the key that goes too deep: a recursive type does not overflow the stack.
public struct ValueDecoder: Sendable {
    /// How deep a decoding goes: the bound the Lua-to-Swift copy puts on tables
    /// (`LuaHost.maxPayloadDepth`, which a test holds equal to this: Values uses no other
    /// folder), so that every value the rules make decodes, while a value an embedder builds
    /// deeper does not recurse without end.
    public static let depthLimit = 200

    /// A decoder; it has no options.
    public init() {}

    /// Decodes `value` as a `T`.
    public func decode<T: Decodable>(_ type: T.Type, from value: Value) throws -> T {
        try ValueDecoding.decode(type, from: value, at: nil)
    }
}

extension Value {
    /// The value decoded as a `T` (`ValueDecoder`).
    public func decoded<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try ValueDecoder().decode(type, from: self)
    }
}

/// A `CodingKey` for array positions and for keys read from maps.
struct ValueCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// The keys that lead to the value being decoded, innermost first, as links: a nested value
/// costs one small link, and the array `codingPath` is made only when something reads it (an
/// error, a type that asks). Each link knows its depth, which bounds the decoding's recursion.
final class CodingPathLink {
    let parent: CodingPathLink?
    let key: any CodingKey
    /// How many keys lead here, this one included.
    let depth: Int

    private init(_ parent: CodingPathLink?, _ key: any CodingKey, depth: Int) {
        self.parent = parent
        self.key = key
        self.depth = depth
    }

    /// The link of `key` inside `parent`, or the error of a value nested deeper than
    /// `ValueDecoder.depthLimit`.
    static func nested(in parent: CodingPathLink?, _ key: any CodingKey) throws -> CodingPathLink {
        let depth = (parent?.depth ?? 0) + 1
        guard depth <= ValueDecoder.depthLimit else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: path(to: parent) + [key],
                debugDescription: "values nested deeper than \(ValueDecoder.depthLimit)"))
        }
        return CodingPathLink(parent, key, depth: depth)
    }

    /// The keys from the outermost to `link`'s.
    static func path(to link: CodingPathLink?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        var next = link
        while let at = next {
            keys.append(at.key)
            next = at.parent
        }
        return keys.reversed()
    }
}

struct ValueDecoding: Decoder {
    /// The value, held so that a decoder fits in an `any Decoder`'s inline room (three words)
    /// and is not boxed on the heap for each `init(from:)`: a map, the common case, as its
    /// fields, any other value in a box of its own.
    private let held: Held
    let link: CodingPathLink?
    var codingPath: [any CodingKey] { CodingPathLink.path(to: link) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private enum Held {
        case map([String: Value])
        indirect case other(Value)
    }

    var value: Value {
        switch held {
        case .map(let fields): return .map(fields)
        case .other(let value): return value
        }
    }

    init(value: Value, link: CodingPathLink?) {
        if case .map(let fields) = value { held = .map(fields) } else { held = .other(value) }
        self.link = link
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .map(let fields) = held else { throw mismatch([String: Value].self) }
        return KeyedDecodingContainer(KeyedValues<Key>(fields: fields, link: link))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let items): return UnkeyedValues(items: items, link: link)
        // The empty table reads as an empty map: it is an empty array too.
        case .map(let fields) where fields.isEmpty: return UnkeyedValues(items: [], link: link)
        default: throw mismatch([Value].self)
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(value: value, link: link) }

    func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value)"))
    }

    /// The field `name` of `fields`. A small map is searched key by key: comparing a few keys
    /// costs less than hashing the one looked for. (By `==` alone, as the map's own lookup
    /// compares: a key equal to `name` may be spelled with other scalars, the kelvin sign
    /// for `K`.)
    static func field(_ name: String, of fields: [String: Value]) -> Value? {
        guard fields.count <= 6 else { return fields[name] }
        for (candidate, field) in fields where candidate == name { return field }
        return nil
    }

    /// `value` as a `T`: the plain types read directly (no container), others by their
    /// `init(from:)`.
    static func decode<T: Decodable>(_ type: T.Type, from value: Value, at link: CodingPathLink?) throws -> T {
        // A field of type `Value` takes the value as it is.
        if T.self == Value.self { return unsafeBitCast(value, to: T.self) }
        return try T(from: ValueDecoding(value: value, link: link))
    }

    /// `value`, found at `key`, as a `T` (`key` added to the path).
    static func decode<T: Decodable, Key: CodingKey>(_ type: T.Type, from value: Value, at link: CodingPathLink?, _ key: Key) throws -> T {
        if T.self == Value.self { return unsafeBitCast(value, to: T.self) }
        return try T(from: ValueDecoding(value: value, link: CodingPathLink.nested(in: link, key)))
    }
}

/// The plain types' readings, shared by the containers: each returns nil when the value is not
/// one (the caller throws the mismatch, which it alone knows the path of).
extension Value {
    func decodedInteger<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        guard let number = intValue else { return nil }
        return T(exactly: number)
    }

    /// The number, rounded to a `Float`; nil when a finite number is too large for one.
    var decodedFloat: Float? {
        guard let number = doubleValue else { return nil }
        let rounded = Float(number)
        return rounded.isInfinite && number.isFinite ? nil : rounded
    }

    func mismatch(_ type: Any.Type, at link: CodingPathLink?, _ key: (any CodingKey)?) -> DecodingError {
        var path = CodingPathLink.path(to: link)
        if let key { path.append(key) }
        let description = type == Float.self && doubleValue != nil
            ? "\(self) does not fit in Float" : "expected \(type), found \(self)"
        return .typeMismatch(type, .init(codingPath: path, debugDescription: description))
    }
}

private struct UnkeyedValues: UnkeyedDecodingContainer {
    let items: [Value]
    let link: CodingPathLink?
    var codingPath: [any CodingKey] { CodingPathLink.path(to: link) }
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [Value], link: CodingPathLink?) {
        self.items = items
        self.link = link
    }

    /// A decoder of the next item, read as a `type`.
    private mutating func next(_ type: Any.Type) throws -> ValueDecoding {
        guard !isAtEnd else { throw atEnd(type) }
        let decoder = ValueDecoding(
            value: items[currentIndex], link: try CodingPathLink.nested(in: link, ValueCodingKey(intValue: currentIndex)))
        currentIndex += 1
        return decoder
    }

    /// The error of reading a `type` past the last item: it names the type asked for.
    private func atEnd(_ type: Any.Type) -> DecodingError {
        .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "no item \(currentIndex)"))
    }

    /// The next item read as a plain type, or the mismatch (the index stays where it was).
    private mutating func nextRead<T>(_ type: T.Type, _ reading: (Value) -> T?) throws -> T {
        guard !isAtEnd else { throw atEnd(type) }
        let item = items[currentIndex]
        guard let read = reading(item) else { throw item.mismatch(type, at: link, ValueCodingKey(intValue: currentIndex)) }
        currentIndex += 1
        return read
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try nextRead(type) { $0.boolValue } }
    mutating func decode(_ type: String.Type) throws -> String { try nextRead(type) { $0.stringValue } }
    mutating func decode(_ type: Double.Type) throws -> Double { try nextRead(type) { $0.doubleValue } }
    mutating func decode(_ type: Int.Type) throws -> Int { try nextRead(type) { $0.decodedInteger(type) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try nextRead(type) { $0.decodedInteger(type) } }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Value.self, !isAtEnd {
            defer { currentIndex += 1 }
            return unsafeBitCast(items[currentIndex], to: T.self)
        }
        return try T(from: next(type))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next((any Decoder).self) }
}

private struct SingleValue: SingleValueDecodingContainer {
    let value: Value
    let link: CodingPathLink?
    var codingPath: [any CodingKey] { CodingPathLink.path(to: link) }

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard let flag = value.boolValue else { throw mismatch(type) }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard let text = value.stringValue else { throw mismatch(type) }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard let number = value.doubleValue else { throw mismatch(type) }
        return number
    }

    func decode(_ type: Float.Type) throws -> Float {
        guard let number = value.decodedFloat else { throw mismatch(type) }
        return number
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ValueDecoding.decode(type, from: value, at: link)
    }

    /// An integer as the rules read it (`500.0` is `500`), in range for `T`.
    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let exact = value.decodedInteger(type) else { throw mismatch(type) }
        return exact
    }

    private func mismatch(_ type: Any.Type) -> DecodingError { value.mismatch(type, at: link, nil) }
}

/// `Value` itself is `Codable`: a field of type `Value` in a typed responder's type takes
/// whatever is there, and `Value`s encode to any encoder as the plain data they are.
extension Value: Codable {
    /// Reads whatever the decoder holds: nil, a boolean, a number, a string, a keyed or an
    /// unkeyed container.
    public init(from decoder: any Decoder) throws {
        if let values = decoder as? ValueDecoding {
            self = values.value
            return
        }
        if let map = decoder as? KeptContainerDecoding {
            self = .map(map.fields)
            return
        }
        if let single = try? decoder.singleValueContainer() {
            if single.decodeNil() { self = .null; return }
            if let flag = try? single.decode(Bool.self) { self = .bool(flag); return }
            if let number = try? single.decode(Int64.self) { self = .int(number); return }
            if let number = try? single.decode(Double.self) { self = .double(number); return }
            if let text = try? single.decode(String.self) { self = .string(text); return }
        }
        if let keyed = try? decoder.container(keyedBy: ValueCodingKey.self) {
            var fields: [String: Value] = [:]
            for key in keyed.allKeys { fields[key.stringValue] = try keyed.decode(Value.self, forKey: key) }
            self = .map(fields)
            return
        }
        var unkeyed = try decoder.unkeyedContainer()
        var items: [Value] = []
        while !unkeyed.isAtEnd { items.append(try unkeyed.decode(Value.self)) }
        self = .array(items)
    }

    /// Writes the value as the plain data it is: a single value, a keyed or an unkeyed container.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let flag):
            var single = encoder.singleValueContainer()
            try single.encode(flag)
        case .int(let number):
            var single = encoder.singleValueContainer()
            try single.encode(number)
        case .double(let number):
            var single = encoder.singleValueContainer()
            try single.encode(number)
        case .string(let text):
            var single = encoder.singleValueContainer()
            try single.encode(text)
        case .bytes(let bytes):
            var single = encoder.singleValueContainer()
            try single.encode(String(decoding: bytes, as: UTF8.self))
        case .array(let items):
            var unkeyed = encoder.unkeyedContainer()
            for item in items { try unkeyed.encode(item) }
        case .map(let fields):
            var keyed = encoder.container(keyedBy: ValueCodingKey.self)
            for (key, field) in fields { try keyed.encode(field, forKey: ValueCodingKey(stringValue: key)) }
        }
    }
}
