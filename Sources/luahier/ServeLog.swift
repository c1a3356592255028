import ArgumentParser
import Glibc
import Logging
import LuaHierarchy

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
        var fields = metadata
        if let more = event.metadata { fields.merge(more) { $1 } }
        printer.write(line: Self.line(format: format, level: event.level, message: "\(event.message)", fields: fields))
    }

    static func line(format: LogFormat, level: Logger.Level, message: String, fields: Logger.Metadata, time: String = now()) -> String {
        let keys = fields.keys.sorted()
        switch format {
        case .text:
            var line = "\(time) \(level) luahier: \(PrintableText.field(message))"
            for key in keys { line += " \(key)=\(text(fields[key]!))" }
            return line
        case .json:
            var object: [String: Value] = ["time": .string(time), "level": .string("\(level)"), "message": .string(message)]
            for key in keys where object[key] == nil { object[key] = value(fields[key]!) }
            return JSON.encode(.map(object))
        }
    }

    /// A field's value in a text line: as it is when it is one plain word, else a JSON string.
    private static func text(_ field: Logger.Metadata.Value) -> String {
        switch field {
        case .dictionary, .array: return JSON.encode(value(field))
        case .string, .stringConvertible:
            let plain = "\(field)"
            let safe = !plain.isEmpty && plain.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") }
            return safe ? plain : JSON.encode(.string(plain))
        }
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

    /// `2026-11-27T00:18:22.123Z`.
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(spec.tv_nsec / 1_000_000)
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}
