import Foundation
import Testing
@testable import LuaHierarchy

/// Rule bundles: built from rules as a pool loads them, read back only when whole and
/// consistent, signed and verified with Ed25519, and run by a pool from their own files.
@Suite("Rule bundles")
struct RuleBundleTests {
    static let keys = RuleBundle.makeKeyPair()

    /// The rules of `RulesPoolTests.folder` (rules.lua requiring version.lua), as a bundle.
    static func built(version: Int = 1) throws -> (bundle: RuleBundle, folder: URL) {
        let folder = try RulesPoolTests.folder(version: version)
        return (try RuleBundle(building: folder.appendingPathComponent("rules.lua").path), folder)
    }

    /// Bytes in the bundle layout with any `manifest` and file bytes (for refusals the
    /// writer never makes).
    static func layout(version: Int = 1, manifest: String, signature: [UInt8] = [], files: [[UInt8]]) -> [UInt8] {
        var bytes = RuleBundle.magic
        for number in [version, manifest.utf8.count, signature.count] {
            bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: number >> $0) }
        }
        return bytes + Array(manifest.utf8) + signature + files.flatMap { $0 }
    }

    /// A manifest listing `files` (name, bytes) with their true hashes and sizes.
    static func manifest(entry: String, files: [(String, [UInt8])], revision: String? = nil) -> String {
        let listed = files.map { #"{"name":\#(JSON.encode(.string($0.0))),"sha256":"\#(ContentHash.of($0.1))","size":\#($0.1.count)}"# }
        let hash = revision ?? String(repeating: "0", count: 64)
        return #"{"entry":\#(JSON.encode(.string(entry))),"files":[\#(listed.joined(separator: ","))],"format":1,"revision":"\#(hash)"}"#
    }

    func refusal(_ bytes: [UInt8], publicKey: String? = nil, maxBytes: Int = RuleBundle.defaultMaxBytes) -> RuleBundle.Refusal? {
        do {
            _ = try RuleBundle(bytes: bytes, publicKey: publicKey, maxBytes: maxBytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func aBuiltBundleHoldsTheRequiredModulesAndThePoolsHash() async throws {
        let (bundle, folder) = try Self.built()
        #expect(bundle.entry == "rules.lua")
        #expect(bundle.files.map(\.name) == ["rules.lua", "version.lua"])
        #expect(bundle.modules["version.lua"] == Array("return 1\n".utf8))
        #expect(!bundle.isSigned)
        let onDisk = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path))
        #expect(bundle.revisionHash == onDisk.revision.hash)
        let fromBundle = try RulesPool(options: .init(bundle: bundle, workers: 2))
        #expect(fromBundle.revision.hash == bundle.revisionHash)
        #expect(fromBundle.revision.files == ["rules.lua", "version.lua"])
        let answer = try await fromBundle.dispatch(#"{"at": "/app", "event": {"type": "Ask", "n": 1}}"#)
        #expect(RulesPoolTests.version(answer) == 1)
        #expect(answer.value["revision"]?["hash"]?.stringValue == String(bundle.revisionHash.prefix(16)))
        // A reload of a bundle's pool loads the same files: nothing changed.
        #expect(await fromBundle.reload() == .unchanged(fromBundle.revision))
        await onDisk.shutDown()
        await fromBundle.shutDown()
    }

    @Test func bytesReadBackAsTheSameBundle() throws {
        let bundle = try Self.built().bundle
        #expect(try RuleBundle(bytes: bundle.bytes) == bundle)
        let signed = try bundle.signed(privateKey: Self.keys.privateKey)
        let read = try RuleBundle(bytes: signed.bytes, publicKey: Self.keys.publicKey)
        #expect(read == signed && read.isSigned && read.signature?.count == 64)
        #expect(read.manifest == bundle.manifest)   // signing changes no byte of the manifest
        #expect(RuleBundle.looksLikeBundle(signed.bytes) && !RuleBundle.looksLikeBundle(Array("-- rules".utf8)))
        #expect(try RuleBundle.publicKey(ofPrivateKey: Self.keys.privateKey) == Self.keys.publicKey)
    }

    @Test func signaturesVerifyWithTheirKeyOnly() throws {
        let bundle = try Self.built().bundle
        let signed = try bundle.signed(privateKey: Self.keys.privateKey)
        let other = RuleBundle.makeKeyPair()
        #expect(refusal(signed.bytes, publicKey: other.publicKey) == .badSignature)
        #expect(refusal(bundle.bytes, publicKey: Self.keys.publicKey) == .unsigned)
        #expect(refusal(signed.bytes, publicKey: "not base64!") == .badKey("the public key is not one line of base64"))
        #expect(refusal(signed.bytes, publicKey: "AAAA") == .badKey("the public key has 3 bytes, not the 32 of an Ed25519 key"))
        #expect(throws: RuleBundle.Refusal.badKey("the private key is not one line of base64")) { try bundle.signed(privateKey: "") }
        // Re-signed by another key: the first key refuses it.
        let resigned = try signed.signed(privateKey: other.privateKey)
        #expect(refusal(resigned.bytes, publicKey: Self.keys.publicKey) == .badSignature)
        #expect(refusal(resigned.bytes, publicKey: other.publicKey) == nil)
        // Without a key, a signed bundle reads (its signature unchecked).
        #expect(refusal(signed.bytes) == nil)
    }

    @Test func eachRefusalSaysWhatIsWrong() throws {
        let bundle = try Self.built().bundle
        let bytes = bundle.bytes
        let rules = bundle.rulesText, module = bundle.modules["version.lua"]!
        let cases: [([UInt8], Int, RuleBundle.Refusal, String)] = [
            (Array("local x = 1".utf8), .max, .notABundle, "not a rule bundle (it does not start with LHBUNDLE)"),
            (Array(bytes.prefix(5)), .max, .truncated("the header (20 bytes)"), "truncated: the bytes end inside the header (20 bytes)"),
            (Array(bytes.prefix(40)), .max, .truncated("the manifest"), "truncated: the bytes end inside the manifest"),
            (Array(bytes.dropLast(3)), .max, .truncated("the file version.lua"), "truncated: the bytes end inside the file version.lua"),
            (bytes, 100, .oversized(what: "the bundle", size: bytes.count, limit: 100),
             "oversized: the bundle has \(bytes.count) bytes, more than the limit of 100"),
            (Self.layout(version: 2, manifest: "{}", files: []), .max, .unknownVersion(2),
             "unknown bundle format version 2 (this luahier reads version 1)"),
            (bytes + [0x0a], .max, .damaged("1 bytes after the last file"), "damaged: 1 bytes after the last file"),
            (Array(bytes.dropLast()) + [bytes.last! ^ 1], .max, .hashMismatch("version.lua"),
             "damaged: version.lua does not match its SHA-256 in the manifest"),
            (Self.layout(manifest: "[1]", files: []), .max, .damaged("the manifest is not a JSON object"), "damaged: the manifest is not a JSON object"),
            (Self.layout(manifest: Self.manifest(entry: "rules.lua", files: [("rules.lua", rules), ("../version.lua", module)]), files: [rules, module]),
             .max, .unsafeName("../version.lua"),
             "unsafe file name '../version.lua': names are relative paths without '..', and the rules file has no folder"),
            (Self.layout(manifest: Self.manifest(entry: "rules.lua", files: [("rules.lua", rules), ("/etc/version.lua", module)]), files: [rules, module]),
             .max, .unsafeName("/etc/version.lua"),
             "unsafe file name '/etc/version.lua': names are relative paths without '..', and the rules file has no folder"),
            (Self.layout(manifest: Self.manifest(entry: "a/rules.lua", files: [("a/rules.lua", rules)]), files: [rules]),
             .max, .unsafeName("a/rules.lua"),
             "unsafe file name 'a/rules.lua': names are relative paths without '..', and the rules file has no folder"),
            (Self.layout(manifest: Self.manifest(entry: "rules.lua", files: [("rules.lua", rules)]), files: [rules]),
             .max, .damaged("the manifest's revision is not the hash of its files"), "damaged: the manifest's revision is not the hash of its files"),
            (Self.layout(manifest: Self.manifest(entry: "rules.lua", files: [("version.lua", module), ("rules.lua", rules)]), files: [module, rules]),
             .max, .damaged("the first file is not the entry rules.lua"), "damaged: the first file is not the entry rules.lua"),
            (Self.layout(manifest: "{}", signature: [1, 2, 3], files: []), .max,
             .damaged("a signature of 3 bytes (an Ed25519 signature has 64, an unsigned bundle 0)"),
             "damaged: a signature of 3 bytes (an Ed25519 signature has 64, an unsigned bundle 0)"),
        ]
        for (input, limit, expected, message) in cases {
            let refused = refusal(input, maxBytes: limit)
            #expect(refused == expected, "\(message)")
            #expect(refused?.description == message)
        }
        var huge = RuleBundle.magic + [0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]
        huge += [UInt8](repeating: 0x20, count: 8)
        #expect(refusal(huge) == .oversized(what: "the manifest", size: 0x7fff_ffff, limit: 1 << 20))
        #expect(throws: RuleBundle.Refusal.unsafeName("../x.lua")) {
            try RuleBundle(entry: "rules.lua", rules: rules, modules: ["../x.lua": module])
        }
    }

    /// The sequence is in the manifest, so under the signature; it reads back, and orders
    /// bundles: one of other files must come after the running bundle's number.
    @Test func theSequenceIsSignedAndOrdersBundles() throws {
        let rules = Array("return 1".utf8)
        let numbered = try RuleBundle(entry: "rules.lua", rules: rules, modules: [:], sequence: 42).signed(privateKey: Self.keys.privateKey)
        let read = try RuleBundle(bytes: numbered.bytes, publicKey: Self.keys.publicKey)
        #expect(read.sequence == 42 && String(decoding: read.manifest, as: UTF8.self).contains(#""sequence":42"#))
        #expect(try RuleBundle(entry: "rules.lua", rules: rules, modules: [:]).sequence == nil)
        #expect(throws: RuleBundle.Refusal.self) { try RuleBundle(entry: "rules.lua", rules: rules, modules: [:], sequence: -1) }
        // The order: none required of a running bundle without a number.
        #expect(throws: Never.self) { try read.checkOrder(after: nil) }
        #expect(throws: Never.self) { try read.checkOrder(after: 41) }
        #expect(throws: RuleBundle.Refusal.notNewer(offered: 42, running: 42)) { try read.checkOrder(after: 42) }
        #expect(throws: RuleBundle.Refusal.notNewer(offered: 42, running: 43)) { try read.checkOrder(after: 43) }
        let unnumbered = try RuleBundle(entry: "rules.lua", rules: rules, modules: [:])
        #expect(throws: RuleBundle.Refusal.notNewer(offered: nil, running: 0)) { try unnumbered.checkOrder(after: 0) }
        #expect(RuleBundle.Refusal.notNewer(offered: 42, running: 43).description.hasPrefix(
            "not newer: it has sequence 42, and the running bundle has sequence 43"))
        // A manifest's sequence that is not a whole number of 0 or more is damage.
        let hash = Revision.hash(path: "rules.lua", rules: rules, modules: [:])
        for bad in [#""-1""#, "-1", "1.5", "null"] {
            let manifest = Self.manifest(entry: "rules.lua", files: [("rules.lua", rules)], revision: hash)
                .replacingOccurrences(of: #""format":1"#, with: #""format":1,"sequence":\#(bad)"#)
            #expect(refusal(Self.layout(manifest: manifest, files: [rules])) == .damaged("the manifest's sequence is not a whole number of 0 or more"), "\(bad)")
        }
    }

    /// Every prefix and every byte flipped (two ways) of a small signed bundle is refused,
    /// with a key, and nothing crashes; random bytes after the magic too.
    @Test func everyDamagedByteIsRefusedWithoutACrash() throws {
        let signed = try RuleBundle(entry: "rules.lua", rules: Array("local m = require('m')".utf8), modules: ["m.lua": Array("return {}".utf8)])
            .signed(privateKey: Self.keys.privateKey)
        let bytes = signed.bytes
        #expect(refusal(bytes, publicKey: Self.keys.publicKey) == nil)
        var accepted: [String] = []
        for offset in 0..<bytes.count {
            if refusal(Array(bytes.prefix(offset)), publicKey: Self.keys.publicKey) == nil { accepted.append("prefix \(offset)") }
            for mask: UInt8 in [0x01, 0xff] {
                var flipped = bytes
                flipped[offset] ^= mask
                if refusal(flipped, publicKey: Self.keys.publicKey) == nil { accepted.append("flip \(mask) at \(offset)") }
            }
        }
        #expect(accepted.isEmpty, "\(accepted)")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let tail = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let header = RuleBundle.magic + [0, 0, 0, 1] + (0..<8).map { _ in UInt8.random(in: 0...2, using: &generator) }
            #expect(refusal(header + tail) != nil)
        }
    }

    @Test func aBundlesRequireNeverReadsTheDisk() throws {
        // version.lua lies beside the rules on disk, but not in the bundle.
        let folder = try RulesPoolTests.folder(version: 3)
        let rules = try [UInt8](Data(contentsOf: folder.appendingPathComponent("rules.lua")))
        let bundle = try RuleBundle(entry: "rules.lua", rules: rules, modules: [:])
        var options = RulesPool.Options(bundle: bundle)
        options.hierarchy.modulePaths = [folder.path]
        #expect {
            _ = try RulesPool(options: options)
        } throws: { error in
            "\(error)".contains("module 'version' not found") && "\(error)".contains("no file 'version.lua' in the bundle")
        }
        // Full libraries would reach the disk: refused.
        var full = RulesPool.Options(bundle: try Self.built().bundle)
        full.hierarchy.libraries = .full
        #expect(throws: ScriptError.self) { _ = try RulesPool(options: full) }
        let hierarchy = try Hierarchy()
        try hierarchy.run(bundle: try Self.built(version: 5).bundle)
        #expect(try hierarchy.node(at: "/app") != nil)
    }

    @Test func aModuleOutsideTheRulesFolderIsNotBundled() throws {
        let folder = try RulesPoolTests.folder(version: 1)
        let elsewhere = try RulesPoolTests.folder(version: 2)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("version.lua"))
        var options = Hierarchy.Options()
        options.modulePaths = [elsewhere.path]
        #expect(throws: RuleBundle.Refusal.outsideFolder(module: elsewhere.path + "/version.lua", folder: folder.path)) {
            _ = try RuleBundle(building: folder.appendingPathComponent("rules.lua").path, hierarchy: options)
        }
    }
}
