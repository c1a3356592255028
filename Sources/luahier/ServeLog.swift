import ArgumentParser
import Glibc
import Logging
import LuaHierarchy
import Synchronization

/// How `serve` writes its log: `text` (one line a record: time, level, `luahier:`, message,
/// then `key=value` fields) or `json` (one object a record: `time`, `level`, `message`, and
/// the fields beside them).
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// `serve`'s log handler: records as lines of `format`, stamped with the UTC time to the
/// millisecond, handed to a `DetachedPrinter` so that no state and no request ever waits for
/// stderr's reader (lines past its buffer are dropped and counted in
/// `luahier_print_dropped_total`). The server's access lines, its start, reload and stop
/// lines, the library's warnings and the rules' `print` (with its request's id) all go here,
/// in one stream.
struct ServeLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    let format: LogFormat
    let printer: DetachedPrinter

    init(format: LogFormat, level: Logger.Level, printer: DetachedPrinter) {
        self.format = format
        self.logLevel = level
        self.printer = printer
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = event.metadata ?? [:]
        if !metadata.isEmpty { fields.merge(metadata) { given, _ in given } }
        printer.write(line: Self.line(format: format, level: event.level, message: event.message.description, fields: fields))
    }

    static func line(format: LogFormat, level: Logger.Level, message: String, fields: Logger.Metadata, time: String = now()) -> String {
        switch format {
        case .text:
            // Bytes, then one String: an access line is made per request.
            var line: [UInt8] = []
            line.reserveCapacity(320)
            line += time.utf8
            line.append(UInt8(ascii: " "))
            line += level.rawValue.utf8
            line += " luahier: ".utf8
            line += LogText.inert(PrintableText.field(message)).utf8
            // Sorted as pairs: no lookup per key.
            for (key, field) in fields.sorted(by: { $0.key < $1.key }) {
                line.append(UInt8(ascii: " "))
                line += key.utf8
                line.append(UInt8(ascii: "="))
                appendText(field, to: &line)
            }
            return String(decoding: line, as: UTF8.self)
        case .json:
            var object: [String: Value] = ["time": .string(time), "level": .string(level.rawValue), "message": .string(message)]
            for (key, field) in fields where object[key] == nil { object[key] = value(field) }
            return LogText.inert(JSON.encode(.map(object)))
        }
    }

    /// A field's value in a text line: as it is when it is one plain word, else a JSON string.
    private static func appendText(_ field: Logger.Metadata.Value, to line: inout [UInt8]) {
        let plain: String
        switch field {
        case .dictionary, .array:
            line += LogText.inert(JSON.encode(value(field))).utf8
            return
        case .string(let text): plain = text
        case .stringConvertible(let convertible): plain = convertible.description
        }
        var text = plain
        let safe = text.withUTF8 { bytes in
            guard !bytes.isEmpty else { return false }
            for byte in bytes where byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "=") {
                return false
            }
            line.append(contentsOf: bytes)
            return true
        }
        if !safe { line += LogText.inert(JSON.encode(.string(plain))).utf8 }
    }

    private static func value(_ field: Logger.Metadata.Value) -> Value {
        switch field {
        case .string(let text): .string(text)
        case .stringConvertible(let number as Int): .int(Int64(number))
        case .stringConvertible(let number as Double): .double(number)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let items): .array(items.map(value))
        case .dictionary(let entries): .map(entries.mapValues(value))
        }
    }

    /// The last second `now` wrote, and its text to the second (`2026-11-27T00:18:22.`): a
    /// second's lines share it, and only their milliseconds are written.
    private static let lastSecond = Mutex<(second: Int, text: [UInt8])>((-1, []))

    /// `2026-11-27T00:18:22.123Z`.
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var text = lastSecond.withLock { last in
            if last.second != spec.tv_sec { last = (spec.tv_sec, secondText(spec.tv_sec)) }
            return last.text
        }
        var millis = spec.tv_nsec / 1_000_000
        for index in stride(from: 22, through: 20, by: -1) {
            text[index] = UInt8(ascii: "0") + UInt8(millis % 10)
            millis /= 10
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `2026-11-27T00:18:22.000Z` for `second` (since 1970, UTC).
    private static func secondText(_ second: Int) -> [UInt8] {
        var seconds = second
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text = [UInt8](repeating: UInt8(ascii: "0"), count: 24)
        func put(_ value: Int, at offset: Int, digits: Int) {
            var rest = value
            for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, at: 0, digits: 4)
        put(Int(parts.tm_mon) + 1, at: 5, digits: 2)
        put(Int(parts.tm_mday), at: 8, digits: 2)
        put(Int(parts.tm_hour), at: 11, digits: 2)
        put(Int(parts.tm_min), at: 14, digits: 2)
        put(Int(parts.tm_sec), at: 17, digits: 2)
        for (offset, mark) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (23, "Z")] as [(Int, Unicode.Scalar)] {
            text[offset] = UInt8(ascii: mark)
        }
        return text
    }
}

/// Text a terminal or a log viewer would act on rather than show, made inert: DEL, the C1
/// controls (U+0080–U+009F: U+009B starts a terminal command as ESC [ does), the line and
/// paragraph separators, and the bidirectional overrides and isolates (which reorder what a
/// reader sees) are written `\uXXXX`, as JSON writes the C0 controls. In a JSON string that
/// is the same text; elsewhere it is a visible escape.
enum LogText {
    static func inert(_ text: String) -> String {
        // Most lines are ASCII without DEL: nothing to do.
        guard text.utf8.contains(where: { $0 >= 0x7F }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            if isActive(scalar) {
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isActive(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C: true
        default: false
        }
    }
}
