/// One loaded version of a rule set: what answered an outcome (contract §9, hot reload).
///
/// `number` counts the revisions a pool has loaded, from 1. `hash` is the SHA-256 of the
/// rules file's text and of every module it loaded with `require` (each named by its path):
/// two pools on the same files have the same hash, and a reload that changed nothing keeps
/// the running revision. Outcomes carry `number` and the first 16 digits of `hash`.
public struct Revision: Sendable, Hashable, CustomStringConvertible {
    /// Which revision of its pool this is, counting from 1.
    public let number: Int
    /// 64 lowercase hex digits.
    public let hash: String
    /// The rules file, then the modules it loaded, sorted: what `--watch` watches.
    public let files: [String]
    /// When it was loaded (seconds since 1970).
    public let loadedAt: Double

    /// The hash as outcomes and logs show it.
    public var shortHash: String { String(hash.prefix(16)) }

    /// `2 (sha256 9f86d081884c7d65)`
    public var description: String { "\(number) (sha256 \(shortHash))" }

    /// `,"revision":{"number":2,"hash":"9f86d081884c7d65"}`: the member outcomes carry,
    /// with the comma before it.
    var stamp: [UInt8] {
        Array(#","revision":{"number":\#(number),"hash":"\#(shortHash)"}"#.utf8)
    }

    /// The hash of `rules` (the file `path`) and `modules` (texts by path).
    static func hash(path: String, rules: [UInt8], modules: [String: [UInt8]]) -> String {
        var digest = ContentHash()
        for (name, text) in [(path, rules)] + modules.sorted(by: { $0.key < $1.key }).map({ ($0.key, $0.value) }) {
            digest.update(Array(name.utf8) + [0] + Array(String(text.count).utf8) + [0])
            digest.update(text)
        }
        return digest.hexDigest()
    }
}
