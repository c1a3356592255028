#if Server
internal import Logging

/// Where Hummingbird's own records go (its warnings and errors): to stderr, as swift-log's
/// default `StreamLogHandler` writes them, formatted by it when a record is written.
///
/// Hummingbird gives every request a copy of this logger with the request's own id in its
/// metadata; a `StreamLogHandler` formats its metadata each time it is set, so every request
/// paid for text that is read only for a warning. Here the metadata is kept as it is and
/// handed to a `StreamLogHandler` only when a record is written.
struct FrameworkLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    /// A logger at `level` with this handler.
    static func logger(label: String, level: Logger.Level) -> Logger {
        var logger = Logger(label: label) { label in FrameworkLogHandler(label: label) }
        logger.logLevel = level
        return logger
    }

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var stream = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
        stream.logLevel = logLevel
        stream.metadata = metadata
        stream.log(event: event)
    }
}
#endif
