import ArgumentParser
import Glibc
import LuaHierarchy

/// `luahier bundle build|sign|verify|keygen`: signed rule bundles (docs/bundles.md).
struct Bundle: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Build, sign and verify rule bundles: a rules file and its modules in one file, with a manifest of hashes.",
        discussion: """
            A bundle holds a rules file and the modules it requires, with a manifest of their \
            SHA-256 hashes and the revision hash a pool running them reports, optionally \
            signed with Ed25519. dispatch and run take a bundle in place of a rules file \
            (told by its first bytes, not its name); --bundle-key PUB requires a signature \
            that verifies. Keys are files of one line: the base64 of the 32-byte Ed25519 key. \
            Exit 0 on success, 1 when a bundle is refused or the rules fail to load, 2 on \
            usage errors.
            """,
        subcommands: [BundleBuild.self, BundleSign.self, BundleVerify.self, BundleKeygen.self]
    )
}

/// `luahier bundle build DIR|RULES.lua -o FILE`
struct BundleBuild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Pack a rules file and the modules it requires into an unsigned bundle.",
        discussion: """
            The rules run once in the sandbox, as a pool's first state runs them; the modules \
            they required then go into the bundle (one required only while answering a \
            request is not found). A module found outside the rules file's folder is refused. \
            DIR stands for DIR/rules.lua. The manifest is numbered --sequence, by default the \
            time of the build in milliseconds: a replica pulling bundles refuses one that does \
            not come after the bundle it runs.
            """
    )

    @Argument(help: ArgumentHelp("The rules file, or a folder holding rules.lua.", valueName: "dir|rules.lua"))
    var rules: String

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("The bundle file to write.", valueName: "file"))
    var output: String

    @Option(help: ArgumentHelp(
        "The release number in the manifest, 0 or more; each release needs a larger one (default: now, in milliseconds since 1970).",
        valueName: "n"))
    var sequence: Int64?

    @OptionGroup(title: "Sandbox and limits")
    var host: HostOptions

    @Argument(parsing: .postTerminator, help: "Arguments for the rules script, after --.")
    var arguments: [String] = []

    /// RULES.lua, or DIR/rules.lua.
    var rulesFile: String {
        var status = stat()
        guard stat(rules, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return rules }
        return (rules.hasSuffix("/") ? rules : rules + "/") + "rules.lua"
    }

    func validate() throws {
        try Validate.readableFile(rulesFile)
        if host.unsafe { throw ValidationError("a bundle's rules run in the sandbox: --unsafe does not apply") }
        if let sequence, sequence < 0 { throw ValidationError("--sequence must be 0 or more") }
    }

    /// `--sequence`, else the time now in milliseconds: a later build gets a larger number.
    private var releaseNumber: Int64 {
        if let sequence { return sequence }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    func run() throws {
        let options = try host.hierarchyOptions()
        let bundle: RuleBundle
        do {
            bundle = try RuleBundle(building: rulesFile, hierarchy: options, arguments: arguments, sequence: releaseNumber)
        } catch let error as ScriptError {
            Console.scriptFailed(error)
            throw ExitCode(ExitStatus.failed(error))
        } catch {
            throw BundleFiles.refused(rulesFile, error)
        }
        try BundleFiles.write(bundle.bytes, to: output)
        Console.out("\(output): \(bundle.entry) and \(bundle.files.count - 1) module\(bundle.files.count == 2 ? "" : "s"), unsigned, \(Self.numbered(bundle)), revision \(bundle.revisionHash)")
        try ExitStatus.finishCommand()
    }

    /// `sequence N`, or `no sequence` for a bundle built without one.
    static func numbered(_ bundle: RuleBundle) -> String {
        bundle.sequence.map { "sequence \($0)" } ?? "no sequence"
    }
}

/// `luahier bundle sign FILE --key PRIVATE [-o OUT]`
struct BundleSign: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign", abstract: "Sign a bundle's manifest with an Ed25519 private key (in place, or to -o).")

    @Argument(help: ArgumentHelp("The bundle.", valueName: "file"))
    var bundle: String

    @Option(help: ArgumentHelp("The private key file (from bundle keygen).", valueName: "private-key"))
    var key: String

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Where to write the signed bundle (default: over FILE).", valueName: "file"))
    var output: String?

    func validate() throws {
        try Validate.readableFile(bundle)
        try Validate.readableFile(key)
    }

    func run() throws {
        let privateKey = try BundleFiles.readKey(key)
        let signed: RuleBundle
        do {
            signed = try RuleBundle(contentsOf: bundle).signed(privateKey: privateKey)
        } catch {
            throw BundleFiles.refused(bundle, error)
        }
        let target = output ?? bundle
        try BundleFiles.write(signed.bytes, to: target)
        Console.out("\(target): signed, \(BundleBuild.numbered(signed)), revision \(signed.revisionHash)")
        try ExitStatus.finishCommand()
    }
}

/// `luahier bundle verify FILE [--key PUBLIC]`
struct BundleVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a bundle: header, manifest, every file's hash, the revision and, with --key, its signature.",
        discussion: "Prints the entry, each file with its size and SHA-256, and the revision. Without --key the signature is not checked, and the output says so.")

    @Argument(help: ArgumentHelp("The bundle.", valueName: "file"))
    var bundle: String

    @Option(help: ArgumentHelp("The public key file: the bundle must be signed by its private key.", valueName: "public-key"))
    var key: String?

    func validate() throws {
        try Validate.readableFile(bundle)
        if let key { try Validate.readableFile(key) }
    }

    func run() throws {
        let publicKey = try key.map(BundleFiles.readKey)
        let read: RuleBundle
        do {
            read = try RuleBundle(contentsOf: bundle, publicKey: publicKey)
        } catch {
            throw BundleFiles.refused(bundle, error)
        }
        let signature = publicKey != nil ? "signed, signature verified" : read.isSigned ? "signed, signature not checked (no --key)" : "unsigned"
        var lines = ["\(bundle): \(signature)", "entry: \(read.entry)"]
        for file in read.files { lines.append("file: \(file.name) \(file.bytes.count) bytes sha256 \(file.sha256)") }
        lines.append(read.sequence.map { "sequence: \($0)" } ?? "sequence: none")
        lines.append("revision: \(read.revisionHash)")
        for line in lines { Console.out(PrintableText.field(line)) }
        try ExitStatus.finishCommand()
    }
}

/// `luahier bundle keygen NAME`: NAME.key and NAME.pub.
struct BundleKeygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Write a new Ed25519 key pair: NAME.key (private, mode 0600) and NAME.pub, each one line of base64.",
        discussion: "Existing files are never overwritten.")

    @Argument(help: ArgumentHelp("The key files' name, without .key or .pub.", valueName: "name"))
    var name: String

    func run() throws {
        let pair = RuleBundle.makeKeyPair()
        try BundleFiles.create(Array((pair.privateKey + "\n").utf8), at: name + ".key", mode: 0o600)
        try BundleFiles.create(Array((pair.publicKey + "\n").utf8), at: name + ".pub", mode: 0o644)
        Console.out("\(name).key: private key (keep it secret; mode 0600)\n\(name).pub: public key")
        try ExitStatus.finishCommand()
    }
}

/// The bundle commands' files: keys read, bundles and keys written, refusals reported.
enum BundleFiles {
    /// `luahier: PATH: why`, and exit 1.
    static func refused(_ path: String, _ error: Error) -> ExitCode {
        Console.error("luahier: \(PrintableText.field(path)): \(PrintableText.field("\(error)"))")
        return ExitCode(ExitStatus.scriptFailed)
    }

    /// Rules that are not a bundle, given with `--bundle-key`: refused as an unsigned bundle
    /// is, exit 1. It is the input that fails the key, not the command line: the same words
    /// run a bundle on stdin and refuse a script there.
    static func notABundle(_ path: String) -> ExitCode {
        refused(path, RuleBundle.Refusal.notABundle)
    }

    /// The bundle at `path` (`-`: stdin) when it is one (told by its first bytes), read and
    /// checked, with a signature that verifies with the public key file `key` when given;
    /// nil for a rules file, which `key` then refuses. A refused bundle is exit 1.
    static func load(_ path: String, key: String?) throws -> RuleBundle? {
        guard path != "-" else { return try loadStandardInput(key: key) }
        guard RuleBundle.isBundleFile(path) else {
            if key != nil { throw notABundle(path) }
            return nil
        }
        let publicKey = try key.map(readKey)
        do {
            return try RuleBundle(contentsOf: path, publicKey: publicKey)
        } catch {
            throw refused(path, error)
        }
    }

    /// `run -`: the bundle on stdin when it starts as one, checked as a file's is; nil for a
    /// script, which is then read from its first byte. A failed read of stdin is reported as
    /// a script's is (`luahier: cannot read stdin: ...`, 130/143 when a signal cut it short).
    private static func loadStandardInput(key: String?) throws -> RuleBundle? {
        let publicKey = try key.map(readKey)
        let bundle: RuleBundle?
        do {
            bundle = try RuleBundle.fromStandardInput(publicKey: publicKey)
        } catch let error as ScriptError {
            Console.error("luahier: \(PrintableText.field(error.message))")
            throw ExitCode(ExitStatus.failed(error))
        } catch {
            throw refused("stdin", error)
        }
        if bundle == nil && key != nil { throw notABundle("stdin") }
        return bundle
    }

    /// A key file's text.
    static func readKey(_ path: String) throws -> String {
        switch RuleBundle.readSmallFile(path) {
        case .success(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .failure(let error):
            Console.error("luahier: \(PrintableText.field(error.message))")
            throw ExitCode(ExitStatus.scriptFailed)
        }
    }

    /// Writes `bytes` to `path` whole or not at all: to a file beside it, then renamed over it.
    /// A path that is there already must be a regular file: the rename would put the bundle
    /// in place of a device or a symbolic link (not through it).
    static func write(_ bytes: [UInt8], to path: String) throws {
        var status = stat()
        if lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            Console.error("luahier: \(PrintableText.field(path)) is not a regular file: a bundle is written only as one")
            throw ExitCode(ExitStatus.scriptFailed)
        }
        let temporary = path + ".tmp-\(getpid())"
        try create(bytes, at: temporary, mode: 0o644)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            Console.error("luahier: cannot write \(PrintableText.field(path)): \(reason)")
            throw ExitCode(ExitStatus.scriptFailed)
        }
    }

    /// Creates the file `path` (never over an existing one) with `mode`, holding `bytes`.
    static func create(_ bytes: [UInt8], at path: String, mode: mode_t) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            Console.error("luahier: cannot create \(PrintableText.field(path)): \(String(cString: strerror(errno)))")
            throw ExitCode(ExitStatus.scriptFailed)
        }
        // The mode as asked, whatever the umask (a private key must not be readable by others).
        fchmod(descriptor, mode)
        let failure = bytes.withUnsafeBytes { OutputWriter.writeAll($0, to: descriptor) }
        let closed = close(descriptor) == 0
        guard failure == nil, closed else {
            unlink(path)
            Console.error("luahier: cannot write \(PrintableText.field(path)): \(String(cString: strerror(failure ?? errno)))")
            throw ExitCode(ExitStatus.scriptFailed)
        }
    }
}
