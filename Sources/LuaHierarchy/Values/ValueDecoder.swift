/// `Value`s as `Decodable` Swift types, without Foundation: the reading side of the Codable
/// bridge, and what typed Swift responders decode their input with (`handleError(MyError.self)
/// { error in ... }`).
///
/// Numbers read as Lua's rules read them: an integer field takes `500.0` (a double with an
/// exact integer value), a floating-point field takes `500`. A missing key is `nil` for an
/// optional and a `DecodingError.keyNotFound` otherwise; `.null` reads as nil.
public struct ValueDecoder: Sendable {
    /// A decoder; it has no options.
    public init() {}

    /// Decodes `value` as a `T`.
    public func decode<T: Decodable>(_ type: T.Type, from value: Value) throws -> T {
        try T(from: ValueDecoding(value: value, codingPath: []))
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

struct ValueDecoding: Decoder {
    let value: Value
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .map(let fields) = value else { throw mismatch([String: Value].self) }
        return KeyedDecodingContainer(KeyedValues<Key>(fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let items): return UnkeyedValues(items: items, codingPath: codingPath)
        // The empty table reads as an empty map: it is an empty array too.
        case .map(let fields) where fields.isEmpty: return UnkeyedValues(items: [], codingPath: codingPath)
        default: throw mismatch([Value].self)
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(value: value, codingPath: codingPath) }

    func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value)"))
    }
}

private struct KeyedValues<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: Value]
    let codingPath: [any CodingKey]
    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    func decodeNil(forKey key: Key) throws -> Bool { (fields[key.stringValue] ?? .null) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let field = fields[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no field \(key.stringValue)"))
        }
        return try T(from: ValueDecoding(value: field, codingPath: codingPath + [key]))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoding(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoding(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ValueDecoding(value: .map(fields), codingPath: codingPath) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoding(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedValues: UnkeyedDecodingContainer {
    let items: [Value]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [Value], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    private mutating func next() throws -> ValueDecoding {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Value.self, .init(codingPath: codingPath, debugDescription: "no item \(currentIndex)"))
        }
        defer { currentIndex += 1 }
        return ValueDecoding(value: items[currentIndex], codingPath: codingPath + [ValueCodingKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct SingleValue: SingleValueDecodingContainer {
    let value: Value
    let codingPath: [any CodingKey]

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

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

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
        try T(from: ValueDecoding(value: value, codingPath: codingPath))
    }

    /// An integer as the rules read it (`500.0` is `500`), in range for `T`.
    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let number = value.intValue, let exact = T(exactly: number) else { throw mismatch(type) }
        return exact
    }

    private func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value)"))
    }
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
