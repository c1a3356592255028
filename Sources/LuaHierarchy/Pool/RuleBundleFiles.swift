#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bundles to and from the disk: built by loading rules once, as a pool's first state does,
/// and read from a file under the size cap.
extension RuleBundle {
    /// An unsigned bundle of the rules file `rulesFile` and the modules it requires when it
    /// runs once in the sandbox (as a pool's first state runs it, with `hierarchy`'s limits
    /// and module paths, and `arguments`): the modules it actually required, so one it
    /// requires only while answering a request, or only on some path, is not in the bundle.
    /// The manifest is numbered `sequence` (``init(entry:rules:modules:sequence:)``).
    /// Throws the rules' `ScriptError` when they fail to load, and ``Refusal/outsideFolder(module:folder:)``
    /// for a module found outside the rules file's folder (a bundle holds only files under it).
    public init(
        building rulesFile: String, hierarchy: Hierarchy.Options = Hierarchy.Options(), arguments: [String] = [], sequence: Int64? = nil
    ) throws {
        var options = hierarchy
        options.libraries = .sandboxed
        let text = try readRulesFile(rulesFile, limit: options.limits.memory).get()
        let loader = try Hierarchy(options: options)
        let read = try loader.run(file: rulesFile, text: text, modules: [:], arguments: arguments)
        let folder = Revision.folder(of: rulesFile)
        var modules: [String: [UInt8]] = [:]
        for (path, bytes) in read {
            let name = Revision.hashedName(module: path, folder: folder)
            do {
                try Self.checkName(name)
            } catch {
                throw Refusal.outsideFolder(module: path, folder: folder)
            }
            // Named under the folder, but a symbolic link may lead out of it: followed, it too
            // must stay under the folder (followed as well).
            guard FolderPaths.resolve(path, under: folder) != nil else { throw Refusal.outsideFolder(module: path, folder: folder) }
            modules[name] = bytes
        }
        try self.init(entry: Revision.baseName(of: rulesFile), rules: text, modules: modules, sequence: sequence)
    }

    /// Reads the bundle file at `path` (a regular file of at most `maxBytes`) as
    /// `init(bytes:publicKey:maxBytes:)` does. Throws ``Refusal/oversized(what:size:limit:)``
    /// for a larger file, the `ScriptError` `CannotRead` when it cannot be read, and any
    /// other refusal of its bytes.
    public init(contentsOf path: String, publicKey: String? = nil, maxBytes: Int = RuleBundle.defaultMaxBytes) throws {
        var status = stat()
        if stat(path, &status) == 0, Int(status.st_size) > maxBytes {
            throw Refusal.oversized(what: "the bundle", size: Int(status.st_size), limit: maxBytes)
        }
        let bytes = try readRulesFile(path, limit: maxBytes, kind: .bundle).get()
        try self.init(bytes: bytes, publicKey: publicKey, maxBytes: maxBytes)
    }

    /// The bundle on standard input, when it starts with a bundle's magic: read (at most
    /// `maxBytes`) and checked as `init(contentsOf:)` reads a file. Nil when it does not:
    /// the bytes read to tell are given back, and `Hierarchy.run(file: "-")` reads the
    /// script from its first byte. Throws the `ScriptError` `CannotRead` for a read that
    /// failed (or a signal cut short), ``Refusal/oversized(what:size:limit:)`` (with the
    /// bytes read when the read stopped) past `maxBytes`, and any refusal of its bytes.
    package static func fromStandardInput(publicKey: String? = nil, maxBytes: Int = RuleBundle.defaultMaxBytes) throws -> RuleBundle? {
        guard looksLikeBundle(try StandardInput.peek(magic.count)) else { return nil }
        let (bytes, whole) = try StandardInput.readAll(limit: maxBytes)
        guard whole else { throw Refusal.oversized(what: "the bundle on stdin", size: bytes.count, limit: maxBytes) }
        return try RuleBundle(bytes: bytes, publicKey: publicKey, maxBytes: maxBytes)
    }

    /// Whether the file at `path` starts with a bundle's magic (false when it cannot be read).
    public static func isBundleFile(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return false }
        var prefix = [UInt8](repeating: 0, count: magic.count)
        let count = prefix.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        return count == magic.count && looksLikeBundle(prefix)
    }

    /// A small text file (a key), read whole: at most `limit` bytes.
    package static func readSmallFile(_ path: String, limit: Int = 4096) -> Result<[UInt8], ScriptError> {
        readRulesFile(path, limit: limit, kind: .key)
    }
}
