extension RuleBundle {
    /// Why bytes were refused as a bundle, or a key as a key. Its `description` is the
    /// message the CLI prints.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The bytes do not start with the magic `LHBUNDLE`.
        case notABundle
        /// The bytes end before `what` does.
        case truncated(String)
        /// `size` bytes of `what`, more than `limit`.
        case oversized(what: String, size: Int, limit: Int)
        /// A format version this library does not read.
        case unknownVersion(Int)
        /// The header or manifest is inconsistent: what is wrong.
        case damaged(String)
        /// The file's bytes do not have the SHA-256 the manifest gives.
        case hashMismatch(String)
        /// A file name that is absolute, has `..` (or an empty or `.` component), or an entry
        /// in a folder.
        case unsafeName(String)
        /// A key was required and the bundle has no signature.
        case unsigned
        /// The signature does not verify with the key given.
        case badSignature
        /// A key file's text is not a key.
        case badKey(String)
        /// A module the rules required lies outside the rules file's folder (building only).
        case outsideFolder(module: String, folder: String)
        /// Offered in place of a running bundle numbered `running`, with a sequence that is
        /// not larger (`offered`, nil for none): an older bundle served again.
        case notNewer(offered: Int64?, running: Int64)

        /// The message, without the bundle's name.
        public var description: String {
            switch self {
            case .notABundle: return "not a rule bundle (it does not start with LHBUNDLE)"
            case .truncated(let what): return "truncated: the bytes end inside \(what)"
            case .oversized(let what, let size, let limit): return "oversized: \(what) has \(size) bytes, more than the limit of \(limit)"
            case .unknownVersion(let version):
                return "unknown bundle format version \(version) (this luahier reads version \(RuleBundle.formatVersion))"
            case .damaged(let what): return "damaged: \(what)"
            case .hashMismatch(let name): return "damaged: \(name) does not match its SHA-256 in the manifest"
            case .unsafeName(let name):
                return "unsafe file name '\(name)': names are relative paths without '..', and the rules file has no folder"
            case .unsigned: return "unsigned: a signature is required (a key was given) and the bundle has none"
            case .badSignature: return "the signature does not verify with the given public key"
            case .badKey(let what): return "bad key: \(what)"
            case .outsideFolder(let module, let folder):
                return "the module \(module) lies outside the rules file's folder \(folder): a bundle holds only files under it"
            case .notNewer(let offered, let running):
                let number = offered.map { "sequence \($0)" } ?? "no sequence"
                return "not newer: it has \(number), and the running bundle has sequence \(running) (an older bundle served again "
                    + "is refused; to roll back, build the old rules again, which numbers them anew)"
            }
        }
    }
}
