import ArgumentParser

/// Checks of the option words themselves, made before either reading of the command line
/// (`PlainCommandLine` or the parser) and after serve's environment and config file became
/// words (`ServeConfiguration`), so every reading refuses the same words with the same message.
///
/// Two slips neither reading can see once a value is read: an empty value after `=`
/// (`--timeout=`), which the parser would fill with the next word; and a number that reads as
/// 0 without being written as 0 (`1e-400`, `-0`), where 0 often means "no limit".
enum OptionWords {
    /// The options that take a number (an `Int` or a `Double`), by long name without dashes.
    /// Every one is `.unconditional`: its value is the next word, whatever it is.
    /// (Sizes, such as `--max-memory`, are read by `Size.bytes`, which refuses a minus sign.)
    static let numbers = [
        "max-instructions", "timeout", "dispatch-max-instructions", "dispatch-timeout",
        "jobs", "line-offset", "max-explained", "decision-log-keep",
        "port", "workers", "max-wait", "idle-timeout", "max-connections", "shutdown-grace", "shutdown-delay",
        "shadow-sample", "shadow-workers", "bundle-poll",
    ]

    /// Throws a `ValidationError` naming the first option word that is refused.
    /// `arguments` are the subcommand's (its name first). Words after `--`, and `run`'s words
    /// from FILE on (the script's own), are not luahier's and are not looked at.
    static func check(_ arguments: [String]) throws {
        let runsScript = arguments.first == "run"
        var index = 1
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if word == "--" { return }
            guard word.hasPrefix("--") else {
                // run: FILE (or `-`) ends luahier's options.
                if runsScript && (word == "-" || !word.hasPrefix("-")) { return }
                continue
            }
            let parts = word.dropFirst(2).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            if parts.count == 2 {
                guard !parts[1].isEmpty else {
                    throw ValidationError("'\(word)' has an empty value: give --\(name)=VALUE or --\(name) VALUE (a flag: --\(name) alone)")
                }
                try checkNumber(String(parts[1]), option: name)
            } else if numbers.contains(name), index < arguments.count {
                try checkNumber(arguments[index], option: name)
                index += 1
            } else if runsScript, let kind = ScriptRun.plainOptions[name], kind != .flag {
                // run's other options with a value: that word is not FILE.
                if index < arguments.count, kind == .anyValue || !arguments[index].hasPrefix("-") { index += 1 }
            }
        }
    }

    /// Refuses a number option's `text` that reads as 0 without being written as 0: a minus
    /// sign (`-0`, `-1e-400`), or a value too small for a `Double` (`1e-400`). Any other text
    /// is left to the readings, which say what is wrong with it (`-5`, `soon`, `nan`).
    static func checkNumber(_ text: String, option: String) throws {
        guard numbers.contains(option), let number = Double(text), number == 0 else { return }
        if text.hasPrefix("-") {
            throw ValidationError("--\(option) must be 0 or more, written without a minus sign, not '\(text)'")
        }
        guard isWrittenAsZero(text) else {
            throw ValidationError("--\(option) '\(text)' is too small: it would read as 0; give 0 itself for 0")
        }
    }

    /// Whether `text` (which `Double` reads as 0) is a zero as written: every digit of its
    /// significand 0 (`0`, `0.0`, `00`, `0e5`, `0x0p3`), not a nonzero value that underflows.
    static func isWrittenAsZero(_ text: String) -> Bool {
        var significand = text.lowercased()[...]
        if significand.first == "+" { significand = significand.dropFirst() }
        let hexadecimal = significand.hasPrefix("0x")
        if hexadecimal { significand = significand.dropFirst(2) }
        let exponent: Character = hexadecimal ? "p" : "e"
        return significand.prefix { $0 != exponent }.allSatisfy { $0 == "0" || $0 == "." }
    }
}
