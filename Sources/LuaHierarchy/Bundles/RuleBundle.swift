#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto

/// A rules file and the modules it requires, in one file with a manifest of their hashes,
/// optionally signed with Ed25519: how rules are shipped to replicas (`luahier bundle`,
/// docs/bundles.md).
///
/// The bytes are a 20-byte header (the magic `LHBUNDLE`, then three big-endian 32-bit
/// numbers: the format version, the manifest's length, the signature's length, 0 or 64),
/// the manifest (compact JSON: `format`, `entry`, `files` with each file's `name`, `sha256`
/// and `size`, `revision`, the content hash a pool running the files reports, and
/// optionally `sequence`, the publisher's release number), the
/// signature (Ed25519, over the manifest's exact bytes), then each file's bytes in the
/// manifest's order, and nothing after. Reading is bounded by `maxBytes` and checks
/// everything: any byte string either reads as a whole, consistent bundle or is refused
/// with a ``Refusal`` naming what is wrong.
///
/// ```swift
/// let bundle = try RuleBundle(bytes: received, publicKey: trustedKey)
/// let pool = try RulesPool(options: .init(bundle: bundle, workers: 4))
/// ```
public struct RuleBundle: Sendable, Equatable {
    /// One file of a bundle.
    public struct File: Sendable, Equatable {
        /// Its path relative to the rules file's folder (`rules.lua`, `lib/prices.lua`).
        public let name: String
        /// Its bytes.
        public let bytes: [UInt8]

        /// The SHA-256 of its bytes, 64 hex digits, as the manifest lists it.
        public var sha256: String { ContentHash.of(bytes) }
    }

    /// The first bytes of every bundle: how a bundle is told from a rules file.
    public static let magic: [UInt8] = Array("LHBUNDLE".utf8)
    /// The format version this library writes and reads.
    public static let formatVersion = 1
    /// The largest bundle read unless told otherwise: 64 MiB.
    public static let defaultMaxBytes = 64 << 20

    /// The rules file's name (a base name: the rules sit at the bundle's root).
    public let entry: String
    /// Every file, the rules file first, then the modules by name.
    public let files: [File]
    /// The content hash of the files (64 hex digits): the `Revision.hash` of a pool running them.
    public let revisionHash: String
    /// The manifest's exact bytes: what the signature covers.
    public let manifest: [UInt8]
    /// The Ed25519 signature of the manifest (64 bytes), or nil when unsigned.
    public let signature: [UInt8]?
    /// The publisher's release number, in the manifest (so under its signature): a replica
    /// pulling bundles refuses one that does not come after the bundle it runs, as an older
    /// bundle served again would not (``Refusal/notNewer(offered:running:)``). Nil for a
    /// bundle built without one.
    public let sequence: Int64?

    /// Whether it carries a signature (checked only when a key was given).
    public var isSigned: Bool { signature != nil }

    /// The rules file's text.
    public var rulesText: [UInt8] { files[0].bytes }

    /// The modules' texts by name: every file but the rules file.
    public var modules: [String: [UInt8]] {
        Dictionary(uniqueKeysWithValues: files.dropFirst().map { ($0.name, $0.bytes) })
    }

    /// An unsigned bundle of the rules file `entry` (a base name) and `modules` (texts by
    /// path relative to the rules file's folder), numbered `sequence` (0 or more; give each
    /// release a larger one, so replicas can refuse an older one served again). Refuses a
    /// name with `..`, an absolute one, or an entry with a folder.
    public init(entry: String, rules: [UInt8], modules: [String: [UInt8]], sequence: Int64? = nil) throws(Refusal) {
        try Self.checkName(entry)
        if entry.contains("/") { throw .unsafeName(entry) }
        for name in modules.keys { try Self.checkName(name) }
        if modules[entry] != nil { throw .damaged("the rules file \(entry) is named twice") }
        let files = [File(name: entry, bytes: rules)] + modules.keys.sorted().map { File(name: $0, bytes: modules[$0]!) }
        let revision = Revision.hash(path: entry, rules: rules, modules: modules)
        if let sequence, sequence < 0 { throw .damaged("a sequence of \(sequence): it is 0 or more") }
        var manifest: [String: Value] = [
            "format": .int(Int64(Self.formatVersion)),
            "entry": .string(entry),
            "revision": .string(revision),
            "files": .array(files.map { file in
                .map(["name": .string(file.name), "sha256": .string(ContentHash.of(file.bytes)), "size": .int(Int64(file.bytes.count))])
            }),
        ]
        if let sequence { manifest["sequence"] = .int(sequence) }
        self.init(
            entry: entry, files: files, revisionHash: revision, sequence: sequence, manifest: Array(JSON.encode(.map(manifest)).utf8),
            signature: nil)
    }

    init(entry: String, files: [File], revisionHash: String, sequence: Int64?, manifest: [UInt8], signature: [UInt8]?) {
        self.entry = entry
        self.files = files
        self.revisionHash = revisionHash
        self.sequence = sequence
        self.manifest = manifest
        self.signature = signature
    }

    /// Refuses this bundle as the successor of a running bundle numbered `running` unless
    /// its sequence is larger: an older signed bundle, served again by whoever answers the
    /// poll, would roll the replica back (an attacker's find). A running bundle without a
    /// sequence refuses none; one with a sequence refuses a bundle without. Asked only of a
    /// bundle whose files differ from the running one's (the same files change nothing).
    package func checkOrder(after running: Int64?) throws(Refusal) {
        guard let running else { return }
        guard let sequence, sequence > running else { throw .notNewer(offered: sequence, running: running) }
    }

    /// The bundle as bytes: header, manifest, signature, files.
    public var bytes: [UInt8] {
        var bytes = Self.magic
        for number in [Self.formatVersion, manifest.count, signature?.count ?? 0] {
            bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: number >> $0) }
        }
        bytes += manifest
        bytes += signature ?? []
        for file in files { bytes += file.bytes }
        return bytes
    }

    /// The same bundle signed with `privateKey` (a key file's text: base64 of the 32-byte
    /// Ed25519 private key); a signature it had is replaced.
    public func signed(privateKey: String) throws(Refusal) -> RuleBundle {
        let key = try Self.signingKey(privateKey)
        guard let signature = try? key.signature(for: manifest) else { throw .badKey("the private key could not sign") }
        return RuleBundle(
            entry: entry, files: files, revisionHash: revisionHash, sequence: sequence, manifest: manifest, signature: Array(signature))
    }

    /// Checks the signature with `publicKey` (a key file's text: base64 of the 32-byte Ed25519
    /// public key): `unsigned` without one, `badSignature` when it does not verify.
    public func verify(publicKey: String) throws(Refusal) {
        let bytes = try Self.keyBytes(publicKey, what: "public")
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: bytes) else { throw .badKey("not an Ed25519 public key") }
        guard let signature else { throw .unsigned }
        guard key.isValidSignature(signature, for: manifest) else { throw .badSignature }
    }

    /// A new Ed25519 key pair, each as its key file holds it: base64 of its 32 bytes.
    public static func makeKeyPair() -> (privateKey: String, publicKey: String) {
        let key = Curve25519.Signing.PrivateKey()
        return (key.rawRepresentation.base64EncodedString(), key.publicKey.rawRepresentation.base64EncodedString())
    }

    /// The public key of `privateKey`, both as key files hold them.
    public static func publicKey(ofPrivateKey privateKey: String) throws(Refusal) -> String {
        try signingKey(privateKey).publicKey.rawRepresentation.base64EncodedString()
    }

    /// Whether `bytes` start as a bundle does (its magic): how `dispatch` and `run` tell a
    /// bundle from a rules file, whatever its name.
    public static func looksLikeBundle(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }

    /// The private key a key file's `text` holds.
    static func signingKey(_ text: String) throws(Refusal) -> Curve25519.Signing.PrivateKey {
        let bytes = try keyBytes(text, what: "private")
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes) else {
            throw .badKey("not an Ed25519 private key")
        }
        return key
    }

    /// The 32 bytes a key file's `text` holds (surrounding white space ignored).
    static func keyBytes(_ text: String, what: String) throws(Refusal) -> Data {
        let trimmed = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" })
        guard trimmed.count == 1, let data = Data(base64Encoded: String(trimmed[0])) else {
            throw .badKey("the \(what) key is not one line of base64")
        }
        guard data.count == 32 else { throw .badKey("the \(what) key has \(data.count) bytes, not the 32 of an Ed25519 key") }
        return data
    }

    /// Refuses a file name that could point outside the bundle's folder: empty, absolute,
    /// with an empty, `.` or `..` component, a backslash or a NUL.
    static func checkName(_ name: String) throws(Refusal) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 1024, !name.hasPrefix("/"), !name.contains("\\"), !name.utf8.contains(0),
            parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." })
        else { throw .unsafeName(name) }
    }
}
