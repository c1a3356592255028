import ArgumentParser
import Logging
import LuaHierarchy

/// `--decision-log FILE` and its companions, for `dispatch` and `serve` (docs/decision-log.md).
struct DecisionLogOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Record every answered request, one JSON line each, in this file (rotated by size).", valueName: "file"))
    var decisionLog: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Size at which the decision log file is rotated (FILE becomes FILE.1), e.g. 64M.", valueName: "size"))
    var decisionLogMaxBytes = DecisionLogSettings.defaults.maxBytes

    @Option(parsing: .unconditional, help: ArgumentHelp("Decision log files kept, FILE included (FILE, FILE.1, ...).", valueName: "count"))
    var decisionLogKeep = DecisionLogSettings.defaults.keep

    @Option(help: ArgumentHelp("A JSON pointer into each decision record whose value is written \"<masked>\" (repeatable), e.g. /request/event/user/email.", valueName: "pointer"))
    var decisionLogMask: [String] = []

    func validate() throws {
        try settings.validate()
    }

    /// What these flags ask for.
    var settings: DecisionLogSettings {
        DecisionLogSettings(file: decisionLog, maxBytes: decisionLogMaxBytes, keep: decisionLogKeep, mask: decisionLogMask)
    }

    /// The file sink `--decision-log` asks for, if it does.
    func fileSink() throws -> DecisionFileSink? { try settings.fileSink() }

    /// A log over `sink`, its records naming `source`, its sink's failures logged to `logger`.
    func log(to sink: any DecisionSink, source: String, logger: Logger) -> DecisionLog {
        settings.log(to: sink, source: source, logger: logger)
    }
}

/// The decision log's settings, however the command line was read; the defaults are none.
struct DecisionLogSettings {
    var file: String?
    var maxBytes = "64M"
    var keep = 5
    var mask: [String] = []

    static let defaults = DecisionLogSettings()

    /// The checks of the flags (`DecisionLogOptions`), for a command line read either way.
    func validate() throws {
        guard (Size.bytes(maxBytes) ?? 0) > 0 else {
            throw ValidationError("--decision-log-max-bytes takes a size such as 64M, not '\(maxBytes)'")
        }
        guard keep >= 1 && keep <= DecisionFileSink.keepLimit else {
            throw ValidationError("--decision-log-keep takes 1 to \(DecisionFileSink.keepLimit) files, not \(keep)")
        }
        for pointer in mask where !pointer.hasPrefix("/") {
            throw ValidationError("--decision-log-mask takes a JSON pointer such as /request/event/user/email, not '\(pointer)'")
        }
    }

    /// The file sink `--decision-log` asks for, if it does.
    func fileSink() throws -> DecisionFileSink? {
        guard let file else { return nil }
        do {
            return try DecisionFileSink(path: file, maxBytes: Size.bytes(maxBytes) ?? 64 << 20, keep: keep)
        } catch {
            throw ValidationError("--decision-log: \(error)")
        }
    }

    /// A log over `sink`, its records naming `source`, its sink's failures logged to `logger`.
    func log(to sink: any DecisionSink, source: String, logger: Logger) -> DecisionLog {
        DecisionLog(sink: sink, mask: mask, source: source, logger: logger)
    }
}
