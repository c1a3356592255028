import Foundation
import Testing
@testable import LuaHierarchy

/// The C JSON reader (Sources/CJSONReader) against the Swift parser it replaced, kept below as
/// the oracle (ReferenceJSONParser, from commit d4f6232, unchanged but for its names): on
/// generated texts and every kind of edit of them (a byte dropped, inserted, replaced, a cut,
/// a swap), both must accept the same texts with the same values, and refuse the rest with the
/// same message at the same column. Both readings (Swift's nulls, Lua's nil), the member-by-
/// member reading of request lines, and the values the reader builds in Lua are compared.
@Suite("The JSON reader against the parser it replaced")
struct JSONReaderFuzzTests {
    static let cases = Int(ProcessInfo.processInfo.environment["JSON_FUZZ_CASES"] ?? "") ?? 6000
    static let seed = UInt64(ProcessInfo.processInfo.environment["FUZZ_SEED"] ?? "") ?? 0x150A_D0C5

    /// Texts: values of every kind, with the spellings JSON allows and some it does not.
    static func generate(_ random: inout SplitMix64, depth: Int = 0) -> String {
        let pick = Int.random(in: 0..<(depth >= 4 ? 7 : 10), using: &random)
        let space = [" ", "", "", "\n", "\t", "\r\n "].randomElement(using: &random)!
        switch pick {
        case 0: return ["null", "true", "false", "nul", "True"].randomElement(using: &random)!
        case 1:
            // A number of any shape: the reader's fast paths against strtod.
            func digits(_ count: Int) -> String {
                String((0..<count).map { _ in "0123456789".randomElement(using: &random)! })
            }
            var text = Bool.random(using: &random) ? "-" : ""
            text += Bool.random(using: &random) ? "0" : String("123456789".randomElement(using: &random)!) + digits(Int.random(in: 0...20, using: &random))
            if Bool.random(using: &random) { text += "." + digits(Int.random(in: 1...20, using: &random)) }
            if Int.random(in: 0..<4, using: &random) == 0 {
                text += ["e", "E", "e+", "e-"].randomElement(using: &random)! + digits(Int.random(in: 1...3, using: &random))
            }
            return text
        case 2:
            return [
                "0", "-0", "7", "-12", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                "-9223372036854775809", "00", "01", "1.5", "-0.0", "1e2", "1E+2", "2.5e-3", "1e400", "-1e309", "5e-324",
                "0.1", "1.", "-", ".5", "1e", "123456789012345678901234567890", "3.14159265358979323846",
            ].randomElement(using: &random)!
        case 3, 4, 5, 6:
            let pieces = [
                "a", "hello", " ", "é", "😀", "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\u0000",
                "\\b\\f\\r\\t", "\\ud800", "\\udc00", "\\u12", "\\x", "\u{7}", "\\uD834\\uDD1E", "\u{FFFF}", "key",
            ]
            let count = Int.random(in: 0...4, using: &random)
            return "\"" + (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined() + "\""
        case 7, 8:
            let count = Int.random(in: 0...4, using: &random)
            let items = (0..<count).map { _ in generate(&random, depth: depth + 1) }
            return "[" + space + items.joined(separator: "," + space) + space + "]"
        default:
            let count = Int.random(in: 0...4, using: &random)
            let keys = ["a", "b", "type", "id", "at", "event", "é", "a\\nb", "x"]
            let members = (0..<count).map { _ in
                "\"\(keys.randomElement(using: &random)!)\"" + space + ":" + space + generate(&random, depth: depth + 1)
            }
            return "{" + space + members.joined(separator: "," + space) + space + "}"
        }
    }

    /// One edit of `bytes`, of any kind.
    static func mutate(_ bytes: inout [UInt8], _ random: inout SplitMix64) {
        let interesting: [UInt8] = Array("{}[],:\"\\ntfu0123456789.-+eE ".utf8) + [0x00, 0x09, 0x1F, 0x7F, 0x80, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]
        let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<5, using: &random) {
        case 0 where !bytes.isEmpty: bytes.remove(at: position)
        case 1: bytes.insert(interesting.randomElement(using: &random)!, at: position)
        case 2 where !bytes.isEmpty: bytes[position] = interesting.randomElement(using: &random)!
        case 3 where !bytes.isEmpty: bytes.removeSubrange(position...)
        case 4 where bytes.count > 1:
            let other = Int.random(in: 0..<bytes.count, using: &random)
            bytes.swapAt(position, other)
        default: bytes.append(interesting.randomElement(using: &random)!)
        }
    }

    /// How a reading ended: the value, or the refusal.
    enum Reading: Equatable, CustomStringConvertible {
        case value(Value)
        case members([String], [Value])
        case refused(JSONError)
        case notAnObject
        var description: String {
            switch self {
            case .value(let value): "value \(JSON.encode(value))"
            case .members(let keys, let values): "members \(keys) \(values.map(JSON.encode))"
            case .refused(let error): "refused \(error)"
            case .notAnObject: "not an object"
            }
        }
    }

    static func document(_ bytes: [UInt8], nulls: ReferenceJSONParser.Nulls) -> (new: Reading, reference: Reading) {
        bytes.withUnsafeBufferPointer { buffer in
            let new = reading { () throws(JSONError) in
                .value(try JSONParser(buffer, depthLimit: 8, nulls: nulls == .keep ? .keep : .asLuaNil).parseDocument())
            }
            var reference = ReferenceJSONParser(buffer, depthLimit: 8, nulls: nulls)
            let old = reading { () throws(JSONError) in .value(try reference.parseDocument()) }
            return (new, old)
        }
    }

    /// A request line's reading: members, each value read on its own.
    static func members(_ bytes: [UInt8]) -> (new: Reading, reference: Reading) {
        bytes.withUnsafeBufferPointer { buffer in
            var keys: [String] = [], values: [Value] = []
            let new = reading { () throws(JSONError) in
                let parser = JSONParser(buffer, depthLimit: 8, nulls: .asLuaNil)
                let isObject = try parser.parseMembers { (key: String, parser: JSONParser) throws(JSONError) in
                    keys.append(key)
                    values.append(try parser.parseValue())
                }
                if isObject { try parser.expectEnd() }
                return isObject ? .members(keys, values) : .notAnObject
            }
            var oldKeys: [String] = [], oldValues: [Value] = []
            let old = reading { () throws(JSONError) in
                var reference = ReferenceJSONParser(buffer, depthLimit: 8, nulls: .asLuaNil)
                let isObject = try reference.parseMembers { (key: String, parser: inout ReferenceJSONParser) throws(JSONError) in
                    oldKeys.append(key)
                    oldValues.append(try parser.parseValue())
                }
                if isObject { try reference.expectEnd() }
                return isObject ? .members(oldKeys, oldValues) : .notAnObject
            }
            return (new, old)
        }
    }

    static func reading(_ body: () throws(JSONError) -> Reading) -> Reading {
        do { return try body() } catch { return .refused(error) }
    }

    /// Lua cannot tell an empty array from an empty object: both read back the same.
    static func luaShaped(_ value: Value) -> Value {
        switch value {
        case .array(let items) where items.isEmpty: return .map([:])
        case .array(let items): return .array(items.map(luaShaped))
        case .map(let map): return .map(map.mapValues(luaShaped))
        default: return value
        }
    }

    @Test func readsEveryTextAsTheParserItReplacedDid() throws {
        var random = SplitMix64(state: Self.seed)
        let hierarchy = try Hierarchy()
        var accepted = 0, refused = 0
        for index in 0..<Self.cases {
            var bytes = Array(Self.generate(&random).utf8)
            for _ in 0..<Int.random(in: 0...3, using: &random) { Self.mutate(&bytes, &random) }
            let text = String(decoding: bytes, as: UTF8.self)
            for nulls in [ReferenceJSONParser.Nulls.keep, .asLuaNil] {
                let (new, reference) = Self.document(bytes, nulls: nulls)
                #expect(new == reference, "case \(index), \(nulls): \(text.debugDescription): \(new) vs \(reference)")
                if case .value = reference { accepted += 1 } else { refused += 1 }
            }
            let (new, reference) = Self.members(bytes)
            #expect(new == reference, "case \(index), members: \(text.debugDescription): \(new) vs \(reference)")
            // In Lua: the same refusals, and the reading with nulls as nil (the last of a
            // repeated key wins, as in the reference, unless it is null, which Lua cannot keep).
            let lua: Reading
            do { lua = .value(try bytes.withUnsafeBytes { try hierarchy.readJSONThroughLua($0) }) } catch let error as JSONError {
                lua = .refused(error)
            } catch {
                lua = .refused(JSONError("\(error)", column: 0))
            }
            var luaReference = Self.document(bytes, nulls: .asLuaNil).reference
            if case .value(let value) = luaReference { luaReference = .value(Self.luaShaped(value)) }
            var bothRead = false
            if case .value = lua, case .value = luaReference { bothRead = true }
            // A repeated key whose last value is null: Lua drops the earlier one too (the only
            // way the two readings may differ).
            #expect(lua == luaReference || (bothRead && text.contains("null")),
                    "case \(index), Lua: \(text.debugDescription): \(lua) vs \(luaReference)")
        }
        // The generator reaches both sides.
        #expect(accepted > Self.cases / 4 && refused > Self.cases / 4, "accepted \(accepted), refused \(refused)")
    }

    @Test func deepTextsAreRefusedAtTheSameDepth() {
        for depth in [7, 8, 9, 200, 1500] {
            for open in ["[", "{\"a\":"] {
                let text = String(repeating: open, count: depth) + "1" + String(repeating: open == "[" ? "]" : "}", count: depth)
                let (new, reference) = Self.document(Array(text.utf8), nulls: .keep)
                #expect(new == reference, "\(open) x \(depth): \(new) vs \(reference)")
            }
        }
    }
}

/// (Reference) Receives a JSON value as the parser reads it, depth first. Containers: `beginObject`,
/// then per member `key` + the value + `endMember`, then `endObject`; `beginArray`, then
/// per item the value + `endItem(position)`, then `endArray`. Strings arrive as validated
/// UTF-8 bytes that live only for the call.
protocol ReferenceJSONSink {
    mutating func null()
    mutating func bool(_ flag: Bool)
    mutating func int(_ number: Int64)
    mutating func double(_ number: Double)
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>)
    mutating func beginObject()
    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>)
    mutating func endMember()
    mutating func endObject()
    mutating func beginArray()
    mutating func endItem(_ position: Int)
    mutating func endArray()
}

/// Builds a `Value`.
struct ReferenceValueSink: ReferenceJSONSink {
    private enum Frame {
        case array([Value])
        case object([String: Value], key: String)
    }
    private var frames: [Frame] = []
    private var last: Value = .null
    let dropsNullMembers: Bool

    init(dropsNullMembers: Bool) {
        self.dropsNullMembers = dropsNullMembers
    }

    /// The value built.
    var value: Value { last }

    mutating func null() { last = .null }
    mutating func bool(_ flag: Bool) { last = .bool(flag) }
    mutating func int(_ number: Int64) { last = .int(number) }
    mutating func double(_ number: Double) { last = .double(number) }
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) { last = .string(String(decoding: utf8, as: UTF8.self)) }
    mutating func beginObject() { frames.append(.object([:], key: "")) }
    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard case .object(let map, _) = frames.removeLast() else { return }
        frames.append(.object(map, key: String(decoding: utf8, as: UTF8.self)))
    }
    mutating func endMember() {
        guard case .object(var map, let key) = frames.removeLast() else { return }
        if last != .null || !dropsNullMembers { map[key] = last }
        frames.append(.object(map, key: ""))
    }
    mutating func endObject() {
        guard case .object(let map, _) = frames.removeLast() else { return }
        last = .map(map)
    }
    mutating func beginArray() { frames.append(.array([])) }
    mutating func endItem(_ position: Int) {
        guard case .array(var items) = frames.removeLast() else { return }
        items.append(last)
        frames.append(.array(items))
    }
    mutating func endArray() {
        guard case .array(let items) = frames.removeLast() else { return }
        last = .array(items)
    }
}

/// A recursive-descent parser over bytes; recursion is bounded by `depthLimit`.
struct ReferenceJSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let depthLimit: Int
    private let nulls: Nulls
    private var index = 0
    /// Reused for strings with escapes.
    private var scratch: [UInt8] = []

    /// What `null` becomes: `.null`, or Lua's nil: a `null` object member is dropped (an
    /// absent field, as in Lua) and a `null` in an array refused (a hole in a sequence).
    enum Nulls {
        case keep, asLuaNil
    }

    init(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int, nulls: Nulls) {
        self.bytes = bytes
        self.depthLimit = depthLimit
        self.nulls = nulls
    }

    mutating func parseDocument() throws(JSONError) -> Value {
        var sink = ReferenceValueSink(dropsNullMembers: nulls == .asLuaNil)
        skipWhitespace()
        try parseValue(into: &sink, depth: 1)
        try expectEnd()
        return sink.value
    }

    /// After the last value: only whitespace may follow.
    mutating func expectEnd() throws(JSONError) {
        skipWhitespace()
        if index < bytes.count { throw failure("unexpected \(describeByte(at: index)) after the value") }
    }

    /// The members of a top-level object, each handed to `member` with the parser placed at
    /// its value, which `member` must parse (with `parseValue`).
    mutating func parseMembers(_ member: (String, inout ReferenceJSONParser) throws(JSONError) -> Void) throws(JSONError) -> Bool {
        skipWhitespace()
        guard peek == UInt8(ascii: "{") else { return false }
        index += 1
        skipWhitespace()
        if peek == UInt8(ascii: "}") { index += 1; return true }
        while true {
            guard peek == UInt8(ascii: "\"") else { throw failure("expected a string key, found \(describeByte(at: index))") }
            let keyStart = index
            let key = try parseString { String(decoding: $0, as: UTF8.self) }
            try expectColon(afterKeyAt: keyStart)
            try member(key, &self)
            guard try endOfMember() else { return true }
        }
    }

    // MARK: Values

    /// One value as a `Value`.
    mutating func parseValue() throws(JSONError) -> Value {
        var sink = ReferenceValueSink(dropsNullMembers: nulls == .asLuaNil)
        try parseValue(into: &sink)
        return sink.value
    }

    /// One value (whitespace before it skipped), handed to `sink`.
    mutating func parseValue<Sink: ReferenceJSONSink>(into sink: inout Sink, depth: Int = 1) throws(JSONError) {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of input, expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try parseObject(into: &sink, depth: depth)
        case UInt8(ascii: "["): try parseArray(into: &sink, depth: depth)
        case UInt8(ascii: "\""): try parseString { sink.string($0) }
        case UInt8(ascii: "t"): try expectWord("true"); sink.bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); sink.bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); sink.null()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(into: &sink)
        default: throw failure("unexpected \(describeByte(at: index)), expected a value")
        }
    }

    private mutating func parseObject<Sink: ReferenceJSONSink>(into sink: inout Sink, depth: Int) throws(JSONError) {
        guard depth <= depthLimit else { throw failure("nesting deeper than \(depthLimit)") }
        index += 1
        sink.beginObject()
        skipWhitespace()
        if peek == UInt8(ascii: "}") { index += 1; sink.endObject(); return }
        while true {
            guard peek == UInt8(ascii: "\"") else { throw failure("expected a string key, found \(describeByte(at: index))") }
            let keyStart = index
            try parseString { sink.key($0) }
            try expectColon(afterKeyAt: keyStart)
            try parseValue(into: &sink, depth: depth + 1)
            sink.endMember()
            guard try endOfMember() else { sink.endObject(); return }
        }
    }

    /// Input quoted in a message: its first 40 bytes, then "..." when there is more.
    static func quoted(_ text: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: text.prefix(40), as: UTF8.self) + (text.count > 40 ? "..." : "")
    }

    /// The ':' after the key whose opening quote is at `keyStart` (named in the message).
    private mutating func expectColon(afterKeyAt keyStart: Int) throws(JSONError) {
        let keyEnd = index
        skipWhitespace()
        guard peek == UInt8(ascii: ":") else {
            let key = Self.quoted(UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd]))
            throw failure("expected ':' after key \(key), found \(describeByte(at: index))")
        }
        index += 1
    }

    /// After a member: true at ',' (another follows), false at '}'.
    private mutating func endOfMember() throws(JSONError) -> Bool {
        skipWhitespace()
        switch peek {
        case UInt8(ascii: ","): index += 1; skipWhitespace(); return true
        case UInt8(ascii: "}"): index += 1; return false
        default: throw failure("expected ',' or '}' in an object, found \(describeByte(at: index))")
        }
    }

    private mutating func parseArray<Sink: ReferenceJSONSink>(into sink: inout Sink, depth: Int) throws(JSONError) {
        guard depth <= depthLimit else { throw failure("nesting deeper than \(depthLimit)") }
        index += 1
        sink.beginArray()
        skipWhitespace()
        if peek == UInt8(ascii: "]") { index += 1; sink.endArray(); return }
        var position = 0
        while true {
            skipWhitespace()
            if nulls == .asLuaNil && peek == UInt8(ascii: "n") {
                throw failure("null in an array (a Lua sequence cannot hold nil)")
            }
            try parseValue(into: &sink, depth: depth + 1)
            position += 1
            sink.endItem(position)
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; sink.endArray(); return
            default: throw failure("expected ',' or ']' in an array, found \(describeByte(at: index))")
            }
        }
    }

    // MARK: Strings

    /// A string starting at the opening quote, handed to `body` as validated UTF-8 (the
    /// bytes live only for the call). Plain runs come straight from the input; escapes go
    /// through `scratch`.
    private mutating func parseString<T>(_ body: (UnsafeBufferPointer<UInt8>) -> T) throws(JSONError) -> T {
        let start = index
        index += 1
        let runStart = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[runStart..<index])
                index += 1
                if !ascii { try validate(run, from: runStart) }
                return body(run)
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: runStart, openedAt: start, body) }
            if byte < 0x20 { throw failure("control character \(hex(byte)) in a string: escape it", at: index) }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        throw failure("unterminated string", at: start)
    }

    private mutating func parseEscapedString<T>(
        from runStart: Int, openedAt start: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T
    ) throws(JSONError) -> T {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: bytes[runStart..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                let result = scratch.withUnsafeBufferPointer { run in
                    Result { () throws(JSONError) in
                        try validate(run, from: start + 1)
                        return body(run)
                    }
                }
                return try result.get()
            case UInt8(ascii: "\\"):
                try appendEscape()
            case 0..<0x20:
                throw failure("control character \(hex(byte)) in a string: escape it", at: index)
            default:
                scratch.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string", at: start)
    }

    /// One escape at `index` (the backslash), appended to `scratch` as UTF-8.
    private mutating func appendEscape() throws(JSONError) {
        let at = index
        index += 1
        guard index < bytes.count else { throw failure("unterminated string", at: at) }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(letter)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hexQuad(escapeAt: at)
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw failure("lone surrogate \\u\(String(scalar, radix: 16, uppercase: true)) in a string", at: at)
                }
                let secondAt = index
                index += 2
                let low = try hexQuad(escapeAt: secondAt)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw failure("lone surrogate \\u\(String(scalar, radix: 16, uppercase: true)) in a string", at: at)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("lone surrogate \\u\(String(scalar, radix: 16, uppercase: true)) in a string", at: at)
            }
            scratch.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
        default:
            throw failure("invalid escape \\\(describeLetter(letter)) in a string", at: at)
        }
    }

    /// Four hex digits after `\u` (the `u` is consumed).
    private mutating func hexQuad(escapeAt at: Int) throws(JSONError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("\\u needs four hex digits", at: at) }
        var scalar: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("\\u needs four hex digits", at: at)
            }
            scalar = scalar << 4 | UInt32(digit)
            index += 1
        }
        return scalar
    }

    private func validate(_ run: UnsafeBufferPointer<UInt8>, from start: Int) throws(JSONError) {
        if String(validating: run, as: UTF8.self) != nil { return }
        // Find the first bad byte for the message.
        var offset = 0
        var decoder = UTF8()
        var iterator = run.makeIterator()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: break loop
            }
        }
        throw failure("invalid UTF-8 in a string", at: start + offset)
    }

    // MARK: Numbers

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: an integer when there is neither a
    /// fraction nor an exponent.
    private mutating func parseNumber<Sink: ReferenceJSONSink>(into sink: inout Sink) throws(JSONError) {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peekDigit else { throw failure("'-' must be followed by digits", at: start) }
        index += 1
        if first == 0, peekDigit != nil { throw failure("leading zero in a number", at: start) }
        while peekDigit != nil { index += 1 }
        var isInteger = true
        if peek == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard peekDigit != nil else { throw failure("a '.' must be followed by digits", at: start) }
            while peekDigit != nil { index += 1 }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard peekDigit != nil else { throw failure("an exponent must have digits", at: start) }
            while peekDigit != nil { index += 1 }
        }
        let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if isInteger {
            if let integer = Self.integer(text) { sink.int(integer); return }
            throw failure("integer \(Self.quoted(text)) is out of range (64-bit)", at: start)
        }
        let number = Self.double(text)
        guard number.isFinite else {
            throw failure("number \(Self.quoted(text)) is out of range", at: start)
        }
        sink.double(number)
    }

    /// Digits with an optional '-', or nil on overflow.
    private static func integer(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = text[0] == UInt8(ascii: "-")
        var magnitude: UInt64 = 0
        for byte in text.dropFirst(negative ? 1 : 0) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            magnitude = sum
        }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// Correctly rounded (strtod in the C locale's format: JSON numbers have no other).
    private static func double(_ text: UnsafeBufferPointer<UInt8>) -> Double {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: text.count + 1) { buffer in
            for (offset, byte) in text.enumerated() { buffer[offset] = CChar(bitPattern: byte) }
            buffer[text.count] = 0
            return strtod(buffer.baseAddress!, nil)
        }
    }

    // MARK: Helpers

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private var peekDigit: UInt8? {
        guard let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        return byte - UInt8(ascii: "0")
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expectWord(_ word: StaticString) throws(JSONError) {
        let start = index
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
              memcmp(bytes.baseAddress! + index, word.utf8Start, count) == 0 else {
            throw failure("unexpected \(describeByte(at: start)), expected a value", at: start)
        }
        index += count
    }

    private func describeByte(at position: Int) -> String {
        guard position < bytes.count else { return "end of input" }
        return describeLetter(bytes[position])
    }

    private func describeLetter(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte \(hex(byte))"
    }

    private func hex(_ byte: UInt8) -> String {
        "0x" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
    }

    private func failure(_ message: String, at position: Int? = nil) -> JSONError {
        JSONError(message, column: (position ?? index) + 1)
    }
}
