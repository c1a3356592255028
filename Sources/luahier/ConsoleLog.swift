import Logging
import LuaHierarchy

/// The CLI's end of the library's logging: a warning the library logs (a relaxed-safety
/// warning from a pool's state) is written as the CLI writes its own, one escaped line on
/// stderr (`luahier: warning: ...`); other levels are the CLI's own business and go nowhere
/// (the rules' `print` is wired to its printer directly).
struct ConsoleLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.level >= .warning else { return }
        let prefix = event.level == .warning ? "warning: " : ""
        Console.error("luahier: \(prefix)\(PrintableText.field("\(event.message)"))")
    }

    /// The logger the CLI hands the library.
    static let logger = Logger(label: "luahier") { _ in ConsoleLogHandler() }
}
