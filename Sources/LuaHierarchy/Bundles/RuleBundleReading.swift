extension RuleBundle {
    /// The header: magic, version, manifest length, signature length.
    static let headerSize = 20
    /// The largest manifest read: 1 MiB, some thousands of files.
    static let maxManifestBytes = 1 << 20
    /// The most files a bundle may hold.
    static let maxFiles = 10_000

    /// Reads `bytes` as a bundle, checking everything: the header, the manifest, every
    /// file's size and SHA-256, the revision hash, and, when `publicKey` is given (a key
    /// file's text), that it is signed and the signature verifies. Never more than
    /// `maxBytes`; any other byte string is refused with the first thing wrong.
    public init(bytes: [UInt8], publicKey: String? = nil, maxBytes: Int = RuleBundle.defaultMaxBytes) throws(Refusal) {
        guard bytes.count <= maxBytes else { throw .oversized(what: "the bundle", size: bytes.count, limit: maxBytes) }
        guard bytes.prefix(Self.magic.count).elementsEqual(Self.magic.prefix(min(bytes.count, Self.magic.count))) else {
            throw .notABundle
        }
        guard bytes.count >= Self.headerSize else { throw .truncated("the header (\(Self.headerSize) bytes)") }
        func number(at offset: Int) -> Int {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        }
        let version = number(at: 8), manifestSize = number(at: 12), signatureSize = number(at: 16)
        guard version == Self.formatVersion else { throw .unknownVersion(version) }
        guard manifestSize <= Self.maxManifestBytes else {
            throw .oversized(what: "the manifest", size: manifestSize, limit: Self.maxManifestBytes)
        }
        guard signatureSize == 0 || signatureSize == 64 else {
            throw .damaged("a signature of \(signatureSize) bytes (an Ed25519 signature has 64, an unsigned bundle 0)")
        }
        let manifestEnd = Self.headerSize + manifestSize, signatureEnd = manifestEnd + signatureSize
        guard bytes.count >= manifestEnd else { throw .truncated("the manifest") }
        guard bytes.count >= signatureEnd else { throw .truncated("the signature") }
        let manifest = Array(bytes[Self.headerSize..<manifestEnd])
        let signature = signatureSize == 0 ? nil : Array(bytes[manifestEnd..<signatureEnd])
        // The signature first: with a key, nothing unsigned is even parsed.
        let unverified = RuleBundle(entry: "", files: [], revisionHash: "", sequence: nil, manifest: manifest, signature: signature)
        if let publicKey { try unverified.verify(publicKey: publicKey) }
        let listing = try Self.readManifest(manifest)
        var files: [File] = []
        var offset = signatureEnd
        for entry in listing.files {
            guard bytes.count - offset >= entry.size else { throw .truncated("the file \(entry.name)") }
            let file = File(name: entry.name, bytes: Array(bytes[offset..<offset + entry.size]))
            offset += entry.size
            guard ContentHash.of(file.bytes) == entry.sha256 else { throw .hashMismatch(entry.name) }
            files.append(file)
        }
        guard offset == bytes.count else { throw .damaged("\(bytes.count - offset) bytes after the last file") }
        let revision = Revision.hash(
            path: listing.entry, rules: files[0].bytes,
            modules: Dictionary(uniqueKeysWithValues: files.dropFirst().map { ($0.name, $0.bytes) }))
        guard revision == listing.revision else { throw .damaged("the manifest's revision is not the hash of its files") }
        self.init(
            entry: listing.entry, files: files, revisionHash: revision, sequence: listing.sequence, manifest: manifest, signature: signature)
    }

    /// What a manifest lists.
    struct Listing {
        var entry: String
        var revision: String
        var sequence: Int64?
        var files: [(name: String, sha256: String, size: Int)]
    }

    /// The manifest's JSON, checked: the format, the entry first among the files, each name
    /// safe and named once, sizes and hashes well formed, the sequence, if any, a whole
    /// number of 0 or more.
    static func readManifest(_ manifest: [UInt8]) throws(Refusal) -> Listing {
        guard let value = manifest.withUnsafeBytes({ try? JSON.parse($0, depthLimit: 4) }), value.mapValue != nil else {
            throw .damaged("the manifest is not a JSON object")
        }
        guard value["format"]?.intValue == Int64(formatVersion) else {
            throw .damaged("the manifest's format is not \(formatVersion), the header's")
        }
        guard let entry = value["entry"]?.stringValue else { throw .damaged("the manifest names no entry") }
        guard let revision = value["revision"]?.stringValue, isHexDigest(revision) else {
            throw .damaged("the manifest has no revision hash of 64 hex digits")
        }
        guard let items = value["files"]?.arrayValue, !items.isEmpty else { throw .damaged("the manifest lists no files") }
        guard items.count <= maxFiles else { throw .oversized(what: "the file list", size: items.count, limit: maxFiles) }
        var sequence: Int64?
        if let member = value["sequence"] {
            guard case .int(let number) = member, number >= 0 else { throw .damaged("the manifest's sequence is not a whole number of 0 or more") }
            sequence = number
        }
        var listing = Listing(entry: entry, revision: revision, sequence: sequence, files: [])
        var names = Set<String>()
        for (index, item) in items.enumerated() {
            guard let name = item["name"]?.stringValue, let sha256 = item["sha256"]?.stringValue, isHexDigest(sha256),
                case .int(let size)? = item["size"], size >= 0, size <= Int64(Int32.max)
            else { throw .damaged("file \(index + 1) of the manifest lacks a name, a sha256 of 64 hex digits or a size") }
            try checkName(name)
            guard names.insert(name).inserted else { throw .damaged("\(name) is listed twice") }
            listing.files.append((name, sha256, Int(size)))
        }
        if entry.contains("/") { throw .unsafeName(entry) }
        guard listing.files[0].name == entry else { throw .damaged("the first file is not the entry \(entry)") }
        return listing
    }

    static func isHexDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
