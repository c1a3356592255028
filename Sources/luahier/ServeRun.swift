import ArgumentParser
import Logging
import LuaHierarchy

/// What `luahier serve` is asked to do, however its command line was read: by the parser
/// (`Serve`), or as a `PlainCommandLine` (`ServeRun.plain`). The flags start from `defaults`,
/// and so does the plain reading, so both mean the same with an option left out.
struct ServeRun {
    var rules: RulesScript
    var arguments: [String] = []
    var host = "127.0.0.1"
    var port = 8080
    var workers = 1
    var maxBody = "1M"
    var maxBodiesInFlight = "64M"
    var maxAnswersUnsent = "64M"
    var maxWait: Double = 10
    var idleTimeout: Double = 30
    var maxConnections = 1024
    var shutdownGrace: Double = 30
    var shutdownDelay: Double = 0
    var trace = TraceOption.off
    var logFormat = LogFormat.text
    var logLevel = Logger.Level.info
    var watch = false
    var reloadEndpoint = false
    var tlsCert: String?
    var tlsKey: String?
    var dispatchTokenFile: String?
    var reloadTokenFile: String?
    var shadow: String?
    var shadowSample = 0.1
    var shadowWorkers = 1
    var bundleUrl: String?
    var bundleKey: String?
    var bundlePoll: Double = 30
    var requireRevision: String?
    var decisions = DecisionLogSettings.defaults
    var decisionLogURL: String?

    /// What `serve` does with no option given (and the flags' defaults).
    static let defaults = ServeRun(rules: RulesScript(file: "-"))

    /// The longest duration a flag takes, in seconds (a day): longer ones would overflow the
    /// timers they become (nanoseconds in 64 bits), and no wait of a server needs more.
    static let longestWait = 86_400.0

    /// serve's options a plain command line may give (`Serve`'s and its option groups', by
    /// long name), all but `--config` and `--print-config`: the config file's settings and
    /// the report of them are the parser's (`ServeConfiguration`).
    static let plainOptions = PlainCommandLine.hostOptions.merging([
        "host": .value, "port": .anyValue, "workers": .anyValue, "max-body": .anyValue, "max-bodies-in-flight": .anyValue, "max-answers-unsent": .anyValue, "max-wait": .anyValue,
        "idle-timeout": .anyValue, "max-connections": .anyValue, "shutdown-grace": .anyValue, "shutdown-delay": .anyValue,
        "trace": .value, "log-format": .value, "log-level": .value, "watch": .flag, "reload-endpoint": .flag,
        "tls-cert": .value, "tls-key": .value, "dispatch-token-file": .value, "reload-token-file": .value,
        "shadow": .value, "shadow-sample": .anyValue, "shadow-workers": .anyValue, "bundle-url": .value,
        "bundle-key": .value, "bundle-poll": .anyValue, "require-revision": .value,
        "decision-log": .value, "decision-log-max-bytes": .anyValue, "decision-log-keep": .anyValue,
        "decision-log-mask": .value, "decision-log-url": .value,
    ]) { $1 }

    /// `luahier serve RULES [options]` read without the argument parser (`PlainCommandLine`):
    /// the options spelled in full, each given once, before RULES or after it (as the docs
    /// write serve's command lines), every value read by the initializer the parser reads it
    /// with. Nil for any other command line (`--` and the script's arguments, a second
    /// positional word, `--config`), and for settings that do not validate: the parser reads
    /// those, and names what is wrong. (While a `LUAHIER_` variable is set, the words are the
    /// parser's too: `Luahier.plainCommand`.)
    static func plain(_ words: [String]) -> ServeRun? {
        // The options after RULES are read as if they came before it: the parser's reading
        // does not depend on where an option given once stands.
        guard let before = PlainCommandLine(words, options: plainOptions), let file = before.rest.first, !file.hasPrefix("-") else {
            return nil
        }
        let after = Array(before.rest.dropFirst())
        guard PlainCommandLine(after, options: plainOptions)?.rest.isEmpty == true,
            let words = PlainCommandLine(words.dropLast(before.rest.count) + after + [file], options: plainOptions),
            words.rest == [file], let host = words.hostSettings()
        else { return nil }
        var run = ServeRun.defaults
        run.rules = RulesScript(file: file, host: host)
        // Every option given must be taken below: one the table names but nothing reads makes
        // the words the parser's, never an option silently dropped.
        var taken: [String] = []
        func value(_ name: String) -> String? {
            taken.append(name)
            return words.values[name]
        }
        /// The option's value read by `initializer`, or `setting` when it is not given.
        func read<Value>(_ name: String, _ initializer: (String) -> Value?, _ setting: Value) throws(Unreadable) -> Value {
            guard let text = value(name) else { return setting }
            guard let parsed = initializer(text) else { throw Unreadable() }
            return parsed
        }
        do throws(Unreadable) {
            run.port = try read("port", Int.init(argument:), run.port)
            run.workers = try read("workers", Int.init(argument:), run.workers)
            run.maxWait = try read("max-wait", Double.init(argument:), run.maxWait)
            run.idleTimeout = try read("idle-timeout", Double.init(argument:), run.idleTimeout)
            run.maxConnections = try read("max-connections", Int.init(argument:), run.maxConnections)
            run.shutdownGrace = try read("shutdown-grace", Double.init(argument:), run.shutdownGrace)
            run.shutdownDelay = try read("shutdown-delay", Double.init(argument:), run.shutdownDelay)
            run.trace = try read("trace", TraceOption.init(argument:), run.trace)
            run.logFormat = try read("log-format", LogFormat.init(argument:), run.logFormat)
            run.logLevel = try read("log-level", Logger.Level.init(argument:), run.logLevel)
            run.shadowSample = try read("shadow-sample", Double.init(argument:), run.shadowSample)
            run.shadowWorkers = try read("shadow-workers", Int.init(argument:), run.shadowWorkers)
            run.bundlePoll = try read("bundle-poll", Double.init(argument:), run.bundlePoll)
            run.decisions.keep = try read("decision-log-keep", Int.init(argument:), run.decisions.keep)
        } catch {
            return nil
        }
        // Text as given (`String.init(argument:)` takes every word).
        run.host = value("host") ?? run.host
        run.maxBody = value("max-body") ?? run.maxBody
        run.maxBodiesInFlight = value("max-bodies-in-flight") ?? run.maxBodiesInFlight
        run.maxAnswersUnsent = value("max-answers-unsent") ?? run.maxAnswersUnsent
        run.tlsCert = value("tls-cert")
        run.tlsKey = value("tls-key")
        run.dispatchTokenFile = value("dispatch-token-file")
        run.reloadTokenFile = value("reload-token-file")
        run.shadow = value("shadow")
        run.bundleUrl = value("bundle-url")
        run.bundleKey = value("bundle-key")
        run.requireRevision = value("require-revision")
        run.decisions.file = value("decision-log")
        run.decisions.maxBytes = value("decision-log-max-bytes") ?? run.decisions.maxBytes
        run.decisionLogURL = value("decision-log-url")
        run.watch = value("watch") != nil
        run.reloadEndpoint = value("reload-endpoint") != nil
        // Given once here (the parser takes it again and again): one pointer.
        run.decisions.mask = value("decision-log-mask").map { [$0] } ?? []
        taken.append(contentsOf: PlainCommandLine.hostOptions.keys)  // read by `hostSettings()`
        guard words.values.keys.allSatisfy({ taken.contains($0) }) else { return nil }
        guard (try? run.rules.validate()) != nil, (try? run.decisions.validate()) != nil, (try? run.validate()) != nil else {
            return nil
        }
        return run
    }

    /// The checks of serve's own flags (`ScriptArguments` and `DecisionLogOptions` make theirs).
    func validate() throws {
        if rules.file == "-" { throw ValidationError("serve reads its rules from a file, not stdin") }
        if decisionLogURL != nil && decisions.file != nil {
            throw ValidationError("give one of --decision-log and --decision-log-url")
        }
        guard (1...256).contains(workers) else { throw ValidationError("--workers must be between 1 and 256") }
        guard (1...workers).contains(shadowWorkers) else {
            throw ValidationError("--shadow-workers must be between 1 and --workers (\(workers)): each state holds up to the memory cap")
        }
        guard (0...1).contains(shadowSample) else { throw ValidationError("--shadow-sample must be a fraction from 0 to 1") }
        if bundleUrl != nil && bundleKey == nil {
            throw ValidationError("--bundle-url takes signed bundles only: give the public key with --bundle-key")
        }
        if let bundleUrl, !(bundleUrl.hasPrefix("http://") || bundleUrl.hasPrefix("https://")) {
            throw ValidationError("--bundle-url must be an http:// or https:// URL")
        }
        guard bundlePoll >= 0.01, bundlePoll <= Self.longestWait else {
            throw ValidationError("--bundle-poll must be from 0.01 to \(Int(Self.longestWait)) seconds")
        }
        if let bundleKey { try Validate.readableFile(bundleKey) }
        if let requireRevision, !Revision.isHashPrefix(requireRevision) {
            throw ValidationError("--require-revision takes 16 to 64 hex digits of a revision's hash, not '\(requireRevision)'")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard try maxBodyBytes() > 0 else { throw ValidationError("--max-body must be more than 0") }
        guard try maxBodiesInFlightBytes() >= maxBodyBytes() else {
            throw ValidationError("--max-bodies-in-flight (\(maxBodiesInFlight)) must be at least --max-body (\(maxBody)): no body that size could come")
        }
        guard try maxAnswersUnsentBytes() > 0 else { throw ValidationError("--max-answers-unsent must be more than 0") }
        guard maxWait > 0, maxWait <= Self.longestWait else { throw ValidationError("--max-wait must be more than 0 seconds, and at most \(Int(Self.longestWait))") }
        guard idleTimeout > 0, idleTimeout <= Self.longestWait else {
            throw ValidationError("--idle-timeout must be more than 0 seconds, and at most \(Int(Self.longestWait))")
        }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be more than 0") }
        guard shutdownGrace >= 0, shutdownGrace <= Self.longestWait else {
            throw ValidationError("--shutdown-grace must be 0 or more seconds, and at most \(Int(Self.longestWait))")
        }
        guard shutdownDelay >= 0, shutdownDelay <= Self.longestWait else {
            throw ValidationError("--shutdown-delay must be 0 or more seconds, and at most \(Int(Self.longestWait))")
        }
        #if Server
        try validateSecurity()
        #endif
    }

    /// A value of the plain command line that its type does not read.
    private struct Unreadable: Error {}

    /// `--max-bodies-in-flight` in bytes.
    func maxBodiesInFlightBytes() throws -> Int {
        try Size.bytes(maxBodiesInFlight, of: "max-bodies-in-flight", example: "16M or 1G")
    }

    /// `--max-answers-unsent` in bytes.
    func maxAnswersUnsentBytes() throws -> Int {
        try Size.bytes(maxAnswersUnsent, of: "max-answers-unsent", example: "16M or 1G")
    }

    /// `--max-body` in bytes.
    func maxBodyBytes() throws -> Int {
        try Size.bytes(maxBody, of: "max-body", example: "64K or 1M")
    }
}
