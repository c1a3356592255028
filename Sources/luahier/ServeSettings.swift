import ArgumentParser
import LuaHierarchy

/// One long option or flag of `luahier serve`, as the parser itself describes it: what the
/// environment and the config file may set (`ServeConfiguration`).
struct ServeSetting {
    /// The long name, without dashes: `max-body`. It is the config file's key.
    var name: String
    /// Every spelling on a command line: `--max-body`, and `-m` if it had a short name.
    var spellings: [String]
    /// An option (`--port 8080`) rather than a flag (`--watch`).
    var takesValue: Bool
    /// An option given any number of times (`[String]`), or a flag counted.
    var isRepeating: Bool
    /// As `--help` shows it; nil for a flag off by default or an option without a default.
    var defaultValue: String?
    /// A flag declared with an inversion (`--watch/--no-watch`): false sets the inverse.
    var hasInverse = false

    /// `LUAHIER_MAX_BODY` for `--max-body`.
    var variable: String { ServeSetting.variable(for: name) }

    static func variable(for name: String) -> String {
        "LUAHIER_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 })
    }

    /// The flag that turns this one off, when the flag was declared with an inversion:
    /// `no-watch` for `watch`, `disable-x` for `enable-x`.
    var inverseName: String {
        name.hasPrefix("enable-") ? "disable-" + name.dropFirst("enable-".count) : "no-" + name
    }

    /// Meant for the command line alone: one-off actions, and the config file's own name
    /// (which the environment gives as `LUAHIER_CONFIG`).
    static let commandLineOnly: Set<String> = ["help", "version", "experimental-dump-help", "config", "print-config"]

    /// serve's settings, in the order `--help` lists them: its options and flags, and those
    /// of the option groups it includes. Read from the parser's own description
    /// (`--experimental-dump-help`), so a new `@Option` or `@Flag` is among them unasked.
    static func all() -> [ServeSetting] {
        var settings = described()
        // A flag's inverse is the same setting, false: one variable and key for both.
        let flags = Set(settings.filter { !$0.takesValue }.map(\.name))
        let inverses = Set(settings.filter { !$0.takesValue }.map(\.inverseName)).intersection(flags)
        settings.removeAll { inverses.contains($0.name) }
        for index in settings.indices where inverses.contains(settings[index].inverseName) {
            settings[index].hasInverse = true
            settings[index].spellings += ["--" + settings[index].inverseName]
        }
        return settings
    }

    /// Each option and flag the parser describes, an inverse flag as one of its own.
    private static func described() -> [ServeSetting] {
        let description: String
        do {
            _ = try Luahier.parseAsRoot(["serve", "--experimental-dump-help"])
            return []
        } catch {
            description = Luahier.fullMessage(for: error)
        }
        guard let arguments = (try? JSON.parse(description))?["command"]?["arguments"]?.arrayValue else { return [] }
        return arguments.compactMap { argument in
            let kind = argument["kind"]?.stringValue
            guard kind == "option" || kind == "flag" else { return nil }
            let names = argument["names"]?.arrayValue ?? []
            let spellings = names.compactMap { name -> String? in
                guard let text = name["name"]?.stringValue else { return nil }
                switch name["kind"]?.stringValue {
                case "long": return "--" + text
                case "short", "longWithSingleDash": return "-" + text
                default: return nil
                }
            }
            guard let long = names.first(where: { $0["kind"]?.stringValue == "long" })?["name"]?.stringValue,
                !commandLineOnly.contains(long)
            else { return nil }
            return ServeSetting(
                name: long, spellings: spellings, takesValue: kind == "option",
                isRepeating: argument["isRepeating"]?.boolValue ?? false,
                defaultValue: argument["defaultValue"]?.stringValue)
        }
    }
}

/// What a command line of serve sets, read as the parser reads it: each setting named, with
/// its value (a flag's: `true`, or `false` for its inverse), and the positional words; words
/// after `--` are the script's.
struct ServeWords {
    var named: [(name: String, value: String?)] = []
    var positionals: [String] = []

    /// `words` are serve's (after the word `serve`). `--config` is read too, as any option.
    init(_ words: [String], settings: [ServeSetting]) {
        var bySpelling: [String: ServeSetting] = [:]
        for setting in settings {
            for spelling in setting.spellings { bySpelling[spelling] = setting }
        }
        bySpelling["--config"] = ServeSetting(name: "config", spellings: ["--config"], takesValue: true, isRepeating: false)
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            if word == "--" { break }
            guard word.hasPrefix("-"), word != "-" else {
                positionals.append(word)
                continue
            }
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let setting = bySpelling[String(parts[0])] else { continue }
            if !setting.takesValue {
                // The value of a flag read: whether it turns the setting on, not its inverse.
                named.append((setting.name, parts[0] == "--" + setting.inverseName ? "false" : "true"))
            } else if parts.count == 2 {
                named.append((setting.name, String(parts[1])))
            } else if index < words.count {
                named.append((setting.name, words[index]))
                index += 1
            }
        }
    }

    /// Whether the command line names `setting` (a flag: either way).
    func names(_ setting: ServeSetting) -> Bool {
        named.contains { $0.name == setting.name }
    }

    /// The last value given to `name`.
    func value(of name: String) -> String? {
        named.last { $0.name == name }?.value
    }
}
