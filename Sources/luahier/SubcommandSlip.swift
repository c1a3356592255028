import Glibc

/// `luahier disptach rules.lua`: a misspelled subcommand reads as a script to run (`luahier
/// FILE` runs one), which is not there. Only asked once that run has failed, so the fast
/// path of `luahier FILE` does no work for it.
enum SubcommandSlip {
    /// The names a slip is compared with (`help` included: it is a subcommand too).
    static let names = ["run", "dispatch", "serve", "check", "tree", "test", "explain", "replay", "help"]

    /// `no such file or subcommand: disptach (did you mean 'dispatch'?)` when the first word
    /// of the command line was taken for a script, is no file, and is close to a
    /// subcommand's name; nil otherwise (the run's own error stands).
    static func suggestion(arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> String? {
        guard let word = arguments.first, !CommandLineWords.subcommands.contains(word), !word.hasPrefix("-") else {
            return nil
        }
        var status = stat()
        guard stat(word, &status) != 0, errno == ENOENT else { return nil }
        let close = closest(to: word)
        guard !close.isEmpty else { return nil }
        let quoted = close.map { "'\($0)'" }
        let choices = quoted.count == 1 ? quoted[0] : quoted.dropLast().joined(separator: ", ") + " or " + quoted.last!
        return "no such file or subcommand: \(word) (did you mean \(choices)?)"
    }

    /// The subcommands `word` is a prefix of, or else those within two edits of it (the
    /// nearest ones), in the order of `names`.
    static func closest(to word: String) -> [String] {
        let lowered = word.lowercased()
        let prefixed = names.filter { $0.hasPrefix(lowered) }
        if !prefixed.isEmpty { return prefixed }
        let distances = names.map { (name: $0, distance: editDistance(lowered, $0)) }
        guard let nearest = distances.map(\.distance).min(), nearest <= 2 else { return [] }
        return distances.filter { $0.distance == nearest }.map(\.name)
    }

    /// Levenshtein distance (insertions, deletions, substitutions), one row at a time.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
