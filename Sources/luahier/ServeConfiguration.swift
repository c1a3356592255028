import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier serve`'s settings from the environment and a JSON config file as well as from its
/// flags (docs/serve.md, Configuration). Highest first: the command line, the environment
/// (`LUAHIER_MAX_BODY=64K`), the file (`--config FILE` or `LUAHIER_CONFIG`), the default.
///
/// Every setting is one of serve's long options, as the parser describes them
/// (`ServeSetting.all()`), so one added to serve is covered unasked. The environment's and
/// the file's values become argument words put before the command line's own: the parser
/// reads them with its own checks, and the command line, read last, wins (the parser keeps
/// the last value of a single-valued option). A repeatable option named on the command line
/// takes the command line's values only. The words are this process's: nothing is added to
/// its real argv, so a secret set this way is not shown by `ps`.
struct ServeConfiguration {
    /// Where a setting's value came from.
    enum Source: Equatable {
        case commandLine
        case environment(String)
        case file(path: String, line: Int?)
        case builtIn

        var description: String {
            switch self {
            case .commandLine: "command line"
            case .environment(let variable): variable
            case .file(let path, let line): path + (line.map { ":\($0)" } ?? "")
            case .builtIn: "default"
            }
        }
    }

    /// The end of `luahier serve --help`'s discussion.
    static let discussion = """


        Settings also come from the environment and a config file. LUAHIER_ and the long \
        option's name in capitals, - as _: LUAHIER_MAX_BODY=64K, LUAHIER_WATCH=1 (a flag: \
        1, true, yes, on or 0, false, no, off); LUAHIER_RULES for the rules file. --config FILE \
        (or LUAHIER_CONFIG): a JSON object keyed by long option name, {"rules": "alerts.lua", \
        "max-body": "64K", "workers": 2, "watch": true}. The command line wins over the \
        environment, which wins over the file; --print-config shows each setting's value and \
        source.
        """

    /// The config file's key and environment variable suffix of the rules file, serve's
    /// positional argument; it applies when the command line gives none.
    static let rulesKey = "rules"

    let settings: [ServeSetting]
    /// serve's arguments, `serve` first, with the environment's and the file's in front.
    private(set) var arguments: [String]
    /// The settings the environment or the file gave, with their values and sources.
    private(set) var given: [(name: String, values: [String], source: Source)] = []
    /// The config file's path and where it was named, if one was.
    private(set) var configFile: (path: String, source: Source)?
    let commandLine: ServeWords

    /// Whether `arguments` (the subcommand's) run serve, rather than ask for its help or
    /// version, which answer whatever the environment holds.
    static func applies(to arguments: [String]) -> Bool {
        guard arguments.first == "serve" else { return false }
        let own = arguments.dropFirst().prefix { $0 != "--" }
        return !own.contains { ["-h", "--help", "-help", "--version", "--experimental-dump-help"].contains($0) }
    }

    /// Whether a setting could come from anywhere but the command line: a `LUAHIER_`
    /// variable is set, or one of serve's words starts `--config`. Without either, the words
    /// stay as they are, and the settings (read from the parser's description of serve, the
    /// costliest part of its start) need not be read.
    static func hasOtherSources(_ arguments: [String]) -> Bool {
        if arguments.dropFirst().prefix(while: { $0 != "--" }).contains(where: { $0.hasPrefix("--config") }) { return true }
        var variable = environ
        while let entry = variable.pointee {
            if strncmp(entry, "LUAHIER_", 8) == 0 { return true }
            variable += 1
        }
        return false
    }

    /// `arguments` (the subcommand's: `serve ...`) with the environment's and the config
    /// file's settings put before serve's own words. A bad value, a key of no setting, a file
    /// that cannot be read: a `ValidationError` naming the variable, or the file and key.
    init(_ arguments: [String], environment: (String) -> String? = ServeConfiguration.variable) throws {
        settings = ServeSetting.all()
        let words = Array(arguments.dropFirst())
        commandLine = ServeWords(words, settings: settings)
        if let path = commandLine.value(of: "config") {
            configFile = (path, .commandLine)
        } else if let path = environment("LUAHIER_CONFIG"), !path.isEmpty {
            configFile = (path, .environment("LUAHIER_CONFIG"))
        }
        var chosen: [String: (values: [String], source: Source)] = [:]
        if let (path, source) = configFile {
            let file: ConfigFile
            do {
                file = try ConfigFile(path: path, settings: settings)
            } catch let error as ValidationError where source != .commandLine {
                throw ValidationError("\(error.message) (named by \(source.description))")
            }
            for entry in file.entries {
                chosen[entry.name] = (entry.values, .file(path: path, line: entry.line))
            }
        }
        for setting in settings {
            guard let text = environment(setting.variable) else { continue }
            let value = setting.takesValue ? text : try Self.flag(text, variable: setting.variable)
            chosen[setting.name] = ([value], .environment(setting.variable))
        }
        if let rules = environment(ServeSetting.variable(for: Self.rulesKey)) {
            chosen[Self.rulesKey] = ([rules], .environment(ServeSetting.variable(for: Self.rulesKey)))
        }
        var front: [String] = []
        if let rules = chosen[Self.rulesKey], commandLine.positionals.isEmpty {
            // A path, never an option: `-x.lua` is read as `./-x.lua`, as a shell user writes it.
            front += rules.values.map { $0.hasPrefix("-") ? "./" + $0 : $0 }
            given.append((Self.rulesKey, rules.values, rules.source))
        }
        for setting in settings {
            guard let (values, source) = chosen[setting.name] else { continue }
            if setting.isRepeating && commandLine.names(setting) { continue }
            front += Self.words(for: setting, values: values)
            given.append((setting.name, values, source))
        }
        self.arguments = Array(arguments.prefix(1)) + front + words
    }

    /// The argument words that give `setting` these values (`--max-body=64K`; `--watch`).
    private static func words(for setting: ServeSetting, values: [String]) -> [String] {
        guard !setting.takesValue else { return values.map { "--\(setting.name)=\($0)" } }
        if values.last == "true" { return ["--" + setting.name] }
        // Off: the flag's inverse if it has one; else it is off already, unless set again.
        return setting.hasInverse ? ["--" + setting.inverseName] : []
    }

    /// `true` or `false` for a flag's environment value.
    static func flag(_ text: String, variable: String) throws -> String {
        switch text.lowercased() {
        case "1", "true", "yes", "on": return "true"
        case "0", "false", "no", "off": return "false"
        default:
            throw ValidationError("\(variable) takes 1, true, yes, on, 0, false, no or off, not '\(text)'")
        }
    }

    /// The process's environment variable `name`, if it is set.
    static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// `--print-config`: each setting's effective value and where it came from, one a line
    /// (`max-body         64K        LUAHIER_MAX_BODY`); the value of a setting whose name
    /// says it holds a secret (a token, a password) reads `(redacted)`.
    func effectiveSettings() -> [String] {
        var rows: [(name: String, value: String, source: String)] = []
        if let configFile { rows.append(("config", configFile.path, configFile.source.description)) }
        if let rules = commandLine.positionals.first {
            rows.append((Self.rulesKey, rules, Source.commandLine.description))
        } else if let rules = given.first(where: { $0.name == Self.rulesKey }) {
            rows.append((Self.rulesKey, rules.values[0], rules.source.description))
        }
        for setting in settings {
            var (values, source) = effective(setting)
            if Self.holdsSecret(setting.name), source != .builtIn { values = ["(redacted)"] }
            rows.append((setting.name, values.joined(separator: ", "), source.description))
        }
        let nameWidth = rows.map(\.name.count).max() ?? 0
        let valueWidth = min(40, rows.map(\.value.count).max() ?? 0)
        func padded(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        return rows.map { padded($0.name, nameWidth) + "  " + padded(PrintableText.field($0.value), valueWidth) + "  " + $0.source }
    }

    /// What `setting` ends up as (a flag: `true` or `false`), and where that came from.
    private func effective(_ setting: ServeSetting) -> (values: [String], source: Source) {
        let values = commandLine.named.filter { $0.name == setting.name }.compactMap(\.value)
        if let last = values.last { return (setting.isRepeating && setting.takesValue ? values : [last], .commandLine) }
        if let entry = given.first(where: { $0.name == setting.name }) { return (entry.values, entry.source) }
        if !setting.takesValue {
            // The parser shows a flag on by default as `true`, or as its own spelling.
            let on = setting.defaultValue == "true" || setting.defaultValue == "--" + setting.name
            return ([on ? "true" : "false"], .builtIn)
        }
        return ([setting.defaultValue ?? "(none)"], .builtIn)
    }

    /// A setting that holds a secret itself, not the path of a file holding one.
    private static func holdsSecret(_ name: String) -> Bool {
        !name.hasSuffix("-file") && ["token", "secret", "password"].contains { name.contains($0) }
    }

    /// The parser's `message`, with where the option it names was set, when that was the
    /// environment or the config file: `--port must be between 0 and 65535 (--port came
    /// from LUAHIER_PORT)`.
    func explain(_ message: String) -> String {
        for entry in given.sorted(by: { $0.name.count > $1.name.count }) {
            let named = entry.name == Self.rulesKey
                ? entry.values.contains { message.contains($0) }
                : Self.mentions(message, "--" + entry.name)
            if named { return message + " (\(entry.name == Self.rulesKey ? "the rules file" : "--" + entry.name) came from \(entry.source.description))" }
        }
        return message
    }

    /// Whether `message` names `option` itself, not a longer one it begins (`--max` in
    /// `--max-body`).
    private static func mentions(_ message: String, _ option: String) -> Bool {
        var rest = message[...]
        while let range = rest.firstRange(of: option) {
            let next = rest[range.upperBound...].first
            if next.map({ !($0.isLetter || $0.isNumber || $0 == "-") }) ?? true { return true }
            rest = rest[range.upperBound...]
        }
        return false
    }
}
