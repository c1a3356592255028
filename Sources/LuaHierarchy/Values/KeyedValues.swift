/// A map's fields as `ValueDecoder`'s keyed container, and the containers a dispatch engine's
/// typed responders keep for reuse.

/// What a keyed container reads: a map's fields and where the map is in the value decoded.
/// Not generic, so that a kept container is pointed at the next map's fields without knowing
/// its key type.
class KeyedFields {
    @exclusivity(unchecked) final var fields: [String: Value]
    @exclusivity(unchecked) final var link: CodingPathLink?

    init(fields: [String: Value], link: CodingPathLink?) {
        self.fields = fields
        self.link = link
    }
}

/// A map's fields as a keyed container. A class: the container's box lends it to each reading
/// without copying its fields, and a kept one is pointed at the next map's fields.
final class KeyedValues<Key: CodingKey>: KeyedFields, KeyedDecodingContainerProtocol {
    var codingPath: [any CodingKey] { CodingPathLink.path(to: link) }
    /// Sorted by their UTF-8 bytes, not in the map's own order, which differs from process to
    /// process: keys that read as the same key of the type decoded (`"1"` and `"01"` as an
    /// `Int`) come in one order on every run. (Sorted only here: a type's own fields are
    /// looked up by key.)
    var allKeys: [Key] {
        fields.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool { ValueDecoding.field(key.stringValue, of: fields) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { (ValueDecoding.field(key.stringValue, of: fields) ?? .null) == .null }

    private func field(_ key: Key) throws -> Value {
        guard let field = ValueDecoding.field(key.stringValue, of: fields) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no field \(key.stringValue)"))
        }
        return field
    }

    /// The field, or nil when it is missing or nil (one lookup, where the default
    /// `decodeIfPresent` makes three).
    private func presentField(_ key: Key) -> Value? {
        guard let field = ValueDecoding.field(key.stringValue, of: fields), field != .null else { return nil }
        return field
    }

    // The plain types are read by `Value`'s readers (a non-generic type's, so specialized for
    // each): this container runs unspecialized (its `Key` is the caller's type), where a helper
    // generic over the read type would look up `T?` at run time on every field; `read` and
    // `readIfPresent` are inlined into each reading, where the type is known. The key becomes
    // an `any CodingKey` (a box made at run time) only for an error.

    /// The field at `key` as `reading` reads it, or the mismatch.
    @inline(__always)
    private func read<T>(_ type: T.Type, _ key: Key, _ reading: (Value) -> T?) throws -> T {
        let field = try field(key)
        guard let read = reading(field) else { throw mismatch(type, field, key) }
        return read
    }

    /// The field at `key` as `reading` reads it; nil when it is missing or nil.
    @inline(__always)
    private func readIfPresent<T>(_ type: T.Type, _ key: Key, _ reading: (Value) -> T?) throws -> T? {
        guard let field = presentField(key) else { return nil }
        guard let read = reading(field) else { throw mismatch(type, field, key) }
        return read
    }

    private func mismatch(_ type: Any.Type, _ field: Value, _ key: Key) -> DecodingError { field.mismatch(type, at: link, key) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try read(type, key) { $0.boolValue } }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try read(type, key) { $0.stringValue } }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try read(type, key) { $0.doubleValue } }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try read(type, key) { $0.decodedFloat } }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try read(type, key) { $0.decodedInteger(type) } }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try read(type, key) { $0.decodedInteger(type) } }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ValueDecoding.decode(type, from: field(key), at: link, key)
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try readIfPresent(type, key) { $0.boolValue } }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try readIfPresent(type, key) { $0.stringValue } }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try readIfPresent(type, key) { $0.doubleValue } }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try readIfPresent(type, key) { $0.decodedFloat } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try readIfPresent(type, key) { $0.decodedInteger(type) } }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try readIfPresent(type, key) { $0.decodedInteger(type) } }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let field = presentField(key) else { return nil }
        return try ValueDecoding.decode(type, from: field, at: link, key)
    }

    /// A decoder of the field at `key` (nil when it is missing).
    private func fieldDecoder(_ key: Key) throws -> ValueDecoding {
        ValueDecoding(value: ValueDecoding.field(key.stringValue, of: fields) ?? .null, link: try CodingPathLink.nested(in: link, key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try fieldDecoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try fieldDecoder(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder { ValueDecoding(value: .map(fields), link: link) }

    func superDecoder(forKey key: Key) throws -> any Decoder { try fieldDecoder(key) }
}

/// The keyed containers one dispatch engine's typed responders decode the maps they are
/// offered with, one per key type, each lent again once no one else holds it. A container made
/// per map costs two types and a conformance looked up at run time and an allocation (code
/// generic over the caller's key type runs unspecialized); a kept one, one type looked up (its
/// own, to return it). Lent on the engine's thread, while it decodes (`decode`); maps nested in
/// the value get containers of their own.
final class KeptContainers {
    /// A class, so that the box is checked for uniqueness where it is kept.
    private final class Entry {
        let key: ObjectIdentifier
        /// The container's box: the kept container is this one reference (`box(of:)`); nil
        /// when it is not. An optional also because an `AnyObject` passed `inout` to a generic
        /// function is opened into a copy, which `isKnownUniquelyReferenced` would count.
        @exclusivity(unchecked) var box: AnyObject?
        let values: KeyedFields

        init(key: ObjectIdentifier, box: AnyObject?, values: KeyedFields) {
            self.key = key
            self.box = box
            self.values = values
        }
    }

    /// Key types kept at most: a search of more would cost what it saves.
    private static let most = 16
    @exclusivity(unchecked) private var entries: [Entry] = []
    /// Whether a decoding is under way: a decoder kept past its `init(from:)` makes containers
    /// of its own.
    @exclusivity(unchecked) private var lending = false
    /// How many times a kept container was lent again (for tests).
    private(set) var reuses = 0

    /// `value` decoded as a `T`, a map's keyed container one of those kept. A kept container
    /// goes on holding the fields it was last lent for until it is lent again (as the engine
    /// holds the value it was last offered); one an `init(from:)` stored is never lent again.
    func decode<T: Decodable>(_ type: T.Type, from value: Value) throws -> T {
        guard T.self != Value.self, case .map(let fields) = value else { return try ValueDecoding.decode(type, from: value, at: nil) }
        let outer = lending
        lending = true
        defer { lending = outer }
        return try T(from: KeptContainerDecoding(fields: fields, kept: self))
    }

    /// A container of `fields`: the one kept for `Key` when no one else holds it, else a new one
    /// (kept, when none is kept for `Key` yet).
    func container<Key: CodingKey>(keyedBy type: Key.Type, fields: [String: Value]) -> KeyedDecodingContainer<Key> {
        guard lending else { return KeyedDecodingContainer(KeyedValues<Key>(fields: fields, link: nil)) }
        let key = ObjectIdentifier(type)
        var known = false
        for entry in entries where entry.key == key {
            known = true
            // Held by a decoding still under way (the map's decoder asked twice).
            guard isKnownUniquelyReferenced(&entry.box) else { break }
            entry.values.fields = fields
            reuses &+= 1
            return unsafeBitCast(entry.box.unsafelyUnwrapped, to: KeyedDecodingContainer<Key>.self)
        }
        let values = KeyedValues<Key>(fields: fields, link: nil)
        let container = KeyedDecodingContainer(values)
        // Kept, or, when the layout is not the one checked for, noted as never to be kept (so
        // that the check runs once per key type).
        if !known, entries.count < Self.most {
            entries.append(Entry(key: key, box: Self.box(of: container), values: values))
        }
        return container
    }

    /// How many key types have a container kept (for tests).
    var keptCount: Int { entries.count }

    /// The box of `container`, when the container is that one reference and nothing else, as
    /// the standard library lays it out today; nil otherwise (its containers are then not kept).
    private static func box<Key: CodingKey>(of container: KeyedDecodingContainer<Key>) -> AnyObject? {
        guard MemoryLayout<KeyedDecodingContainer<Key>>.size == MemoryLayout<AnyObject>.size else { return nil }
        let stored = Mirror(reflecting: container).children
        guard stored.count == 1, let only = stored.first, type(of: only.value) is AnyClass else { return nil }
        let box = unsafeBitCast(container, to: AnyObject.self)
        return (only.value as AnyObject) === box ? box : nil
    }
}

/// The decoder of the map a typed responder is offered: its keyed container is the one kept
/// for the key type. (A decoder of its own, not a `ValueDecoding`, which has no room left in
/// an `any Decoder`'s three words.)
struct KeptContainerDecoding: Decoder {
    let fields: [String: Value]
    let kept: KeptContainers
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        kept.container(keyedBy: type, fields: fields)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try ValueDecoding(value: .map(fields), link: nil).unkeyedContainer()
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try ValueDecoding(value: .map(fields), link: nil).singleValueContainer()
    }
}
