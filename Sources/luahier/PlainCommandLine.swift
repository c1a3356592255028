/// A subcommand's words read without the argument parser, for the commands that start a
/// script (`run`, `check`, `test`, `dispatch`). The parser's first parse spends most of a
/// short command's start in the Swift runtime's conformance lookups, once per type it
/// inspects, each a scan of every conformance record the binary holds (the server's too).
///
/// Only the plainest command line is read here: options first, each spelled in full
/// (`--timeout 5`, `--timeout=5`, `--trace`) and given once, then the positional words.
/// Anything else is nil, left to the parser, which reads it (and says what is wrong) as it
/// always has: a short, misspelled or repeated option, help, `--`, a flag given a value, an
/// option without one. Values are read into their types by the initializers the parser
/// uses; a value that does not read, or settings that do not validate, go to the parser too.
struct PlainCommandLine {
    /// How an option takes its value, as its declaration tells the parser.
    enum Kind {
        /// A `@Flag`: present or not.
        case flag
        /// An `@Option`: the next word, unless it starts with `-`.
        case value
        /// An `@Option(parsing: .unconditional)`: the next word, whatever it is.
        case anyValue
    }

    /// The options given, by long name without dashes; a flag's value is `true`.
    private(set) var values: [String: String] = [:]
    /// The words from the first that is not an option on.
    private(set) var rest: [String] = []

    /// `words` (after the subcommand's name), read with `options` (long name, without
    /// dashes, to kind); nil when the parser must read them.
    init?(_ words: [String], options: [String: Kind]) {
        var index = 0
        while index < words.count, words[index].hasPrefix("-"), words[index] != "-" {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--") else { return nil }
            let parts = word.dropFirst(2).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard let kind = options[name], values[name] == nil else { return nil }
            switch (kind, parts.count) {
            case (.flag, 1):
                values[name] = "true"
            case (.flag, _):
                return nil
            case (_, 2):
                guard !parts[1].isEmpty else { return nil }
                values[name] = String(parts[1])
            case (.value, _):
                guard index < words.count, !words[index].hasPrefix("-") else { return nil }
                values[name] = words[index]
                index += 1
            case (.anyValue, _):
                guard index < words.count else { return nil }
                values[name] = words[index]
                index += 1
            }
        }
        rest = Array(words[index...])
    }

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool { values[name] != nil }

    /// The sandbox and limit options (`HostOptions`), by name.
    static let hostOptions: [String: Kind] = [
        "unsafe": .flag, "max-instructions": .anyValue, "max-memory": .anyValue, "timeout": .anyValue,
        "dispatch-max-instructions": .anyValue, "dispatch-timeout": .anyValue,
    ]

    /// The sandbox and limit settings these words give, from the defaults; nil when a value
    /// does not read as its type (as `Int(argument:)` and `Double(argument:)` read it).
    func hostSettings() -> HostSettings? {
        var settings = HostSettings.defaults
        settings.unsafe = flag("unsafe")
        if let text = values["max-memory"] { settings.maxMemory = text }
        if let text = values["max-instructions"] {
            guard let number = Int(text) else { return nil }
            settings.maxInstructions = number
        }
        if let text = values["dispatch-max-instructions"] {
            guard let number = Int(text) else { return nil }
            settings.dispatchMaxInstructions = number
        }
        if let text = values["timeout"] {
            guard let seconds = Double(text) else { return nil }
            settings.timeout = seconds
        }
        if let text = values["dispatch-timeout"] {
            guard let seconds = Double(text) else { return nil }
            settings.dispatchTimeout = seconds
        }
        return settings
    }
}
