extension JSON {
    /// `value` as compact JSON text: object keys sorted (by bytes) so output is stable,
    /// floats with a '.' or an exponent so they read back as floats.
    public static func encode(_ value: Value) -> String {
        var writer = JSONWriter()
        writer.write(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// Appends compact JSON to a byte buffer.
///
/// Choices JSON forces: a float that is NaN or infinite is written as `null`; a Lua string
/// that is not valid UTF-8 (`.bytes`) is written with each bad sequence as U+FFFD.
struct JSONWriter {
    var bytes: [UInt8] = []
    /// The size `bytes` may reach while a script's value is written from Lua (its JSON can be
    /// far larger than the value: a string held ten times is written ten times); past it the
    /// value is not written, and `limitReached` says so.
    var limit = Int.max
    var limitReached = false

    mutating func write(_ value: Value) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(String(number))
        case .double(let number): writeDouble(number)
        case .string(let text): writeString(text)
        case .bytes(let raw): writeString(String(decoding: raw, as: UTF8.self))
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (position, item) in items.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .map(let map):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for key in map.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(map[key]!)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// `"key":` for hand-built objects: `{"key":` when `opening`, `,"key":` otherwise.
    mutating func writeKey(_ key: StaticString, opening: Bool = false) {
        bytes.append(UInt8(ascii: opening ? "{" : ","))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Constant JSON text (keys and values known when the code was written), in one copy.
    mutating func append(constant text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func writeDouble(_ number: Double) {
        append(Self.text(of: number))
    }

    /// A double's JSON: the shortest text that reads back as the same number, always with a
    /// `.` or an exponent (so it reads back as a double); `null` when it is not finite. The one
    /// place this is decided (the C writer of Lua values asks here too).
    static func text(of number: Double) -> String {
        guard number.isFinite else { return "null" }
        let text = number.description
        // Swift writes 1e+16 and 1.0 already; a bare integer form never occurs, but be sure.
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") }) { return text + ".0" }
        return text
    }

    mutating func writeString(_ text: String) {
        var text = text
        text.withUTF8 { _ = writeString(bytes: $0) }
    }

    /// A string from raw bytes. Bytes that are not UTF-8 are written with each bad sequence
    /// as U+FFFD, or refused (false, nothing written) with `refusingInvalid`.
    @discardableResult
    mutating func writeString(bytes utf8: UnsafeBufferPointer<UInt8>, refusingInvalid: Bool = false) -> Bool {
        if utf8.contains(where: { $0 >= 0x80 }), String(validating: utf8, as: UTF8.self) == nil {
            if refusingInvalid { return false }
            var repaired = String(decoding: utf8, as: UTF8.self)
            repaired.withUTF8 { writeEscaped($0) }
            return true
        }
        writeEscaped(utf8)
        return true
    }

    /// `"..."` around valid UTF-8, escaping what JSON requires.
    private mutating func writeEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        for (position, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<position]))
            runStart = position + 1
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            case 0x08: append("\\b")
            case 0x0C: append("\\f")
            default:
                append("\\u00")
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
