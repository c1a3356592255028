/// One loaded version of a rule set: what answered an outcome (contract §9, hot reload).
///
/// `number` counts the revisions a pool has loaded, from 1. `hash` is the SHA-256 of the
/// rules file's text and of every module it loaded with `require`, each named relative to the
/// rules file's folder (the rules file by its base name, a module by its path under that
/// folder; a module found outside it, through a module path, by its path as found): two
/// pools on the same files have the same hash wherever the files lie, a bundle of them too,
/// and a reload that changed nothing keeps the running revision. Outcomes carry `number` and
/// the first 16 digits of `hash`.
public struct Revision: Sendable, Hashable, CustomStringConvertible {
    /// Which revision of its pool this is, counting from 1.
    public let number: Int
    /// 64 lowercase hex digits.
    public let hash: String
    /// The rules file, then the modules it loaded, sorted: what `--watch` watches.
    public let files: [String]
    /// When it was loaded (seconds since 1970).
    public let loadedAt: Double

    /// Whether `text` can name a revision by its hash: 16 to 64 hex digits (all of it, or at
    /// least the prefix outcomes carry).
    package static func isHashPrefix(_ text: String) -> Bool {
        (16...64).contains(text.utf8.count) && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0 | 0x20) }
    }

    /// The hash as outcomes and logs show it.
    public var shortHash: String { String(hash.prefix(16)) }

    /// `2 (sha256 9f86d081884c7d65)`
    public var description: String { "\(number) (sha256 \(shortHash))" }

    /// `,"revision":{"number":2,"hash":"9f86d081884c7d65"}`: the member outcomes carry,
    /// with the comma before it.
    var stamp: [UInt8] {
        Array(#","revision":{"number":\#(number),"hash":"\#(shortHash)"}"#.utf8)
    }

    /// The hash of `rules` (the file `path`) and `modules` (texts by path). Each file is named
    /// in it as `hashedName` names it, relative to the rules file's folder, so the same rules
    /// in two folders (or a bundle of them) have the same hash.
    static func hash(path: String, rules: [UInt8], modules: [String: [UInt8]]) -> String {
        let folder = folder(of: path)
        let named = modules.map { (hashedName(module: $0.key, folder: folder), $0.value) }.sorted { $0.0 < $1.0 }
        var digest = ContentHash()
        for (name, text) in [(baseName(of: path), rules)] + named {
            digest.update(Array(name.utf8) + [0] + Array(String(text.count).utf8) + [0])
            digest.update(text)
        }
        return digest.hexDigest()
    }

    /// The folder `require` searches first for the rules file `path`, as `Hierarchy` names
    /// it: `.` for a bare name.
    package static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    /// `path`'s last component: how the hash names the rules file.
    static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// How the hash names the module at `path` (as `require` found it) for rules in `folder`:
    /// its path relative to `folder` when it lies under it; otherwise (a module path outside
    /// the folder) its path as found, which then depends on where the rules live.
    static func hashedName(module path: String, folder: String) -> String {
        let relative: Substring
        if folder == "." {
            relative = path.hasPrefix("./") ? path.dropFirst(2) : path[...]
        } else {
            let prefix = folder.hasSuffix("/") ? folder : folder + "/"
            guard path.hasPrefix(prefix) else { return path }
            relative = path.dropFirst(prefix.count)
        }
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        if relative.hasPrefix("/") || parts.contains("..") { return path }
        return String(relative)
    }
}
