#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a JSON text was refused: what is wrong and the byte where it was seen.
public struct JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    /// 1-based byte column in the text.
    public var column: Int

    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    public var description: String { "column \(column): \(message)" }
}

/// JSON (RFC 8259) to and from `Value`, strictly: integers stay `.int` and numbers with a
/// fraction or an exponent become `.double`; an integer outside 64 bits or a float that
/// overflows is refused (never silently rounded); strings must be valid UTF-8 (escapes
/// included: a lone surrogate is refused); `\u0000` survives; nesting is bounded.
/// Duplicate object keys: the last one wins (as in most parsers).
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
        var parser = JSONParser(bytes.bindMemory(to: UInt8.self), depthLimit: depthLimit, nulls: .keep)
        return try parser.parseDocument()
    }

    /// Parses a value bound for Lua, where nil cannot be stored: a `null` member of an
    /// object is dropped (an absent field, as in Lua), a `null` in an array is refused
    /// (it would be a hole in a sequence).
    static func parseForLua(_ bytes: UnsafeRawBufferPointer, depthLimit: Int = defaultDepthLimit) throws(JSONError) -> Value {
        var parser = JSONParser(bytes.bindMemory(to: UInt8.self), depthLimit: depthLimit, nulls: .asLuaNil)
        return try parser.parseDocument()
    }
}

/// A recursive-descent parser over bytes; recursion is bounded by `depthLimit`.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let depthLimit: Int
    private let nulls: Nulls
    private var index = 0
    /// Reused for strings with escapes.
    private var scratch: [UInt8] = []

    /// What `null` becomes: `.null`, or Lua's nil (see `JSON.parseForLua`).
    enum Nulls {
        case keep, asLuaNil
    }

    init(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int, nulls: Nulls) {
        self.bytes = bytes
        self.depthLimit = depthLimit
        self.nulls = nulls
    }

    mutating func parseDocument() throws(JSONError) -> Value {
        skipWhitespace()
        let value = try parseValue(depth: 1)
        skipWhitespace()
        if index < bytes.count { throw failure("unexpected \(describeByte(at: index)) after the value") }
        return value
    }

    // MARK: Values

    private mutating func parseValue(depth: Int) throws(JSONError) -> Value {
        guard index < bytes.count else { throw failure("unexpected end of input, expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected \(describeByte(at: index)), expected a value")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONError) -> Value {
        guard depth <= depthLimit else { throw failure("nesting deeper than \(depthLimit)") }
        index += 1
        var map: [String: Value] = [:]
        skipWhitespace()
        if peek == UInt8(ascii: "}") { index += 1; return .map(map) }
        while true {
            guard peek == UInt8(ascii: "\"") else { throw failure("expected a string key, found \(describeByte(at: index))") }
            let key = try parseString()
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw failure("expected ':' after key \(String(reflecting: key)), found \(describeByte(at: index))") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth + 1)
            if value != .null || nulls == .keep { map[key] = value }
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1; skipWhitespace()
            case UInt8(ascii: "}"): index += 1; return .map(map)
            default: throw failure("expected ',' or '}' in an object, found \(describeByte(at: index))")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONError) -> Value {
        guard depth <= depthLimit else { throw failure("nesting deeper than \(depthLimit)") }
        index += 1
        var items: [Value] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            let start = index
            let item = try parseValue(depth: depth + 1)
            if item == .null && nulls == .asLuaNil {
                throw failure("null in an array (a Lua sequence cannot hold nil)", at: start)
            }
            items.append(item)
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1; skipWhitespace()
            case UInt8(ascii: "]"): index += 1; return .array(items)
            default: throw failure("expected ',' or ']' in an array, found \(describeByte(at: index))")
            }
        }
    }

    // MARK: Strings

    /// A string starting at the opening quote. Plain runs are validated in one go; escapes go
    /// through `scratch`.
    private mutating func parseString() throws(JSONError) -> String {
        let start = index
        index += 1
        let runStart = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[runStart..<index])
                index += 1
                if ascii { return String(decoding: run, as: UTF8.self) }
                return try validated(run, from: runStart)
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: runStart, openedAt: start) }
            if byte < 0x20 { throw failure("control character \(hex(byte)) in a string: escape it", at: index) }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        throw failure("unterminated string", at: start)
    }

    private mutating func parseEscapedString(from runStart: Int, openedAt start: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: bytes[runStart..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try scratch.withUnsafeBufferPointer { run throws(JSONError) in try validated(run, from: start + 1) }
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

    private func validated(_ run: UnsafeBufferPointer<UInt8>, from start: Int) throws(JSONError) -> String {
        if let text = String(validating: run, as: UTF8.self) { return text }
        // Find the first bad byte for the message.
        var offset = 0
        var decoder = UTF8()
        var iterator = run.makeIterator()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: break loop
            case .error: break loop
            }
        }
        throw failure("invalid UTF-8 in a string", at: start + offset)
    }

    // MARK: Numbers

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: an integer when there is neither a
    /// fraction nor an exponent.
    private mutating func parseNumber() throws(JSONError) -> Value {
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
            if let integer = Self.integer(text) { return .int(integer) }
            throw failure("integer \(String(decoding: text, as: UTF8.self)) is out of range (64-bit)", at: start)
        }
        let number = Self.double(text)
        guard number.isFinite else {
            throw failure("number \(String(decoding: text, as: UTF8.self)) is out of range", at: start)
        }
        return .double(number)
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
