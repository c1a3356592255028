import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier serve --config FILE`: one JSON object whose keys are serve's long option names
/// (`{"max-body": "64K", "workers": 2, "watch": true, "rules": "alerts.lua"}`). An option
/// takes a string or a number (an array of them if it is repeatable), a flag true or false.
/// A key of no setting, or a value of the wrong type, is a usage error naming the file, the
/// line and the key.
struct ConfigFile {
    /// A config file bigger than this is refused: it is read whole, and a few hundred bytes is usual.
    static let maxBytes = 1 << 20

    /// Each key's values as argument text (a flag's: `true` or `false`), with its line.
    private(set) var entries: [(name: String, values: [String], line: Int?)] = []

    init(path: String, settings: [ServeSetting]) throws {
        let bytes = try Self.read(path)
        // The bytes, not a decoded String: invalid UTF-8 is refused by the reader, with its place.
        let parsed = bytes.withUnsafeBytes { buffer in Result { () throws(JSONError) in try JSON.parse(buffer) } }
        let text = String(decoding: bytes, as: UTF8.self)
        let document: Value
        switch parsed {
        case .success(let value): document = value
        case .failure(let error):
            let (line, column) = Self.position(ofByte: error.column, in: bytes)
            throw ValidationError("\(path):\(line):\(column): config file is not JSON: \(error.message)")
        }
        guard let object = document.mapValue else {
            throw ValidationError("\(path): a config file is one JSON object, its keys serve's long option names")
        }
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let line = Self.line(ofKey: key, in: text)
            let place = path + (line.map { ":\($0)" } ?? "")
            let values: [String]?
            if key == ServeConfiguration.rulesKey {
                values = value.stringValue.map { [$0] }
            } else if let setting = settings.first(where: { $0.name == key }) {
                values = Self.values(value, for: setting).map { texts in
                    // A number as written (`1e-400`, `-0`), as the command line would have it,
                    // so it is checked as a command line's word is (OptionWords).
                    texts.count == 1 ? [Self.numberAsWritten(key: key, value: value, in: text) ?? texts[0]] : texts
                }
            } else {
                let close = settings.map(\.name).filter { SubcommandSlip.editDistance(key, $0) <= 2 }
                let inverted = settings.first { $0.hasInverse && $0.inverseName == key }
                let hint = ServeSetting.commandLineOnly.contains(key)
                    ? " (--\(key) is for the command line only)"
                    : inverted.map { " (use \"\($0.name)\": false)" } ?? (close.isEmpty ? "" : " (did you mean \"\(close[0])\"?)")
                throw ValidationError("\(place): unknown key \"\(key)\" in the config file\(hint)")
            }
            guard let values else {
                throw ValidationError("\(place): \"\(key)\" takes \(Self.expected(for: key, settings)), not \(Self.describe(value))")
            }
            entries.append((key, values, line))
        }
    }

    /// `value` as argument text for `setting`, or nil if it is of the wrong type.
    private static func values(_ value: Value, for setting: ServeSetting) -> [String]? {
        if !setting.takesValue { return value.boolValue.map { [$0 ? "true" : "false"] } }
        if setting.isRepeating, let items = value.arrayValue {
            let texts = items.compactMap(text)
            return texts.count == items.count ? texts : nil
        }
        return text(value).map { [$0] }
    }

    /// A string or a number, as it would be typed on the command line.
    private static func text(_ value: Value) -> String? {
        switch value {
        case .string(let text): text
        case .int(let number): String(number)
        case .double(let number): String(number)
        default: nil
        }
    }

    /// The text of the number `value` of `key` as the file writes it, when it is found there
    /// (the last time the key is given, as the reader keeps the last) and reads as `value`.
    private static func numberAsWritten(key: String, value: Value, in text: String) -> String? {
        let number: Double
        switch value {
        case .int(let integer): number = Double(integer)
        case .double(let double): number = double
        default: return nil
        }
        var found: Substring?
        var rest = text[...]
        while let range = rest.firstRange(of: "\"\(key)\"") {
            rest = rest[range.upperBound...]
            let afterColon = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            guard afterColon.first == ":" else { continue }
            let token = afterColon.dropFirst().drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
                .prefix { $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }
            if !token.isEmpty { found = token }
        }
        guard let found, let written = Double(found), written == number else { return nil }
        return String(found)
    }

    private static func expected(for key: String, _ settings: [ServeSetting]) -> String {
        guard let setting = settings.first(where: { $0.name == key }) else { return "a path (a string)" }
        if !setting.takesValue { return "true or false" }
        return setting.isRepeating ? "a string or a number, or an array of them" : "a string or a number"
    }

    private static func describe(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .string(let text): "the string \"\(PrintableText.field(text))\""
        case .array: "an array"
        case .map: "an object"
        default: "a number"
        }
    }

    /// The whole file, or why it cannot be read.
    private static func read(_ path: String) throws -> [UInt8] {
        do {
            try Validate.readableFile(path)
        } catch let error as ValidationError {
            throw ValidationError("config file: \(error.message)")
        }
        // Non-blocking: opening a FIFO would wait for a writer; it is refused instead.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw ValidationError("cannot read \(path): \(String(cString: strerror(errno)))") }
        var status = stat()
        if fstat(descriptor, &status) != 0 || status.st_mode & S_IFMT != S_IFREG {
            close(descriptor)
            throw ValidationError("config file: cannot read \(path): not a regular file")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw ValidationError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += buffer[..<count]
            guard bytes.count <= maxBytes else { throw ValidationError("\(path): a config file of more than 1M is refused") }
        }
        return bytes
    }

    /// The line and column (1-based) of the byte at `offset` (1-based) of `bytes`.
    private static func position(ofByte offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        let before = bytes.prefix(max(0, offset - 1))
        let line = before.count(where: { $0 == UInt8(ascii: "\n") }) + 1
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        return (line, before.count - lineStart + 1)
    }

    /// The line of the first `"key":` in `text`; nil if the key is written with escapes.
    private static func line(ofKey key: String, in text: String) -> Int? {
        var rest = text[...]
        while let range = rest.firstRange(of: "\"\(key)\"") {
            let after = rest[range.upperBound...].drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            if after.first == ":" {
                return text[..<range.lowerBound].count(where: { $0 == "\n" }) + 1
            }
            rest = rest[range.upperBound...]
        }
        return nil
    }
}
