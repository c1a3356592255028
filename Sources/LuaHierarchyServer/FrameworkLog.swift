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
    var metadataProvider: Logger.MetadataProvider?
    /// The one key a request's copy is given (its id), kept apart: the dictionary is made only
    /// for a second key.
    private var single: (key: String, value: Logger.Metadata.Value)?
    private var more: Logger.Metadata = [:]

    var metadata: Logger.Metadata {
        get {
            guard let single else { return more }
            var all = more
            all[single.key] = single.value
            return all
        }
        set {
            single = nil
            more = newValue
        }
    }

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
        get { single?.key == key ? single?.value : more[key] }
        set {
            if single?.key == key || (single == nil && more.isEmpty) {
                single = newValue.map { (key, $0) }
            } else {
                more[key] = newValue
            }
        }
    }

    func log(event: LogEvent) {
        var stream = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
        stream.logLevel = logLevel
        stream.metadata = metadata
        stream.log(event: event)
    }
}
#endif
