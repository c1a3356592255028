import Foundation
import Testing

/// `luahier bundle build|sign|verify|keygen`, and `dispatch` and `run` on a bundle.
@Suite("luahier bundle", .ownThreads)
struct BundleCommandTests {
    /// A folder with rules.lua requiring lib/prices.lua, and an input line for it.
    static func rulesFolder() throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp/lhbundle-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("lib"), withIntermediateDirectories: true)
        try """
            local prices = require("lib.prices")
            local app = hier.root:child("app")
            app:receiveEvent("Ask", function(e) return {type = "Answer", price = prices.of(e.item)} end)
            print("rules loaded")
            """.write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        try "return { of = function(item) return #item * 10 end }\n"
            .write(to: folder.appendingPathComponent("lib/prices.lua"), atomically: true, encoding: .utf8)
        try #"{"id": 1, "at": "/app", "event": {"type": "Ask", "item": "abc"}}"#
            .write(to: folder.appendingPathComponent("in.jsonl"), atomically: true, encoding: .utf8)
        return folder
    }

    /// The 64 hex digits after `revision ` in `text`.
    static func revision(in text: String) -> String? {
        guard let range = text.range(of: "revision ") ?? text.range(of: "revision: ") else { return nil }
        return String(text[range.upperBound...].prefix(64))
    }

    @Test func buildSignVerifyAndDispatchASignedBundle() throws {
        let folder = try Self.rulesFolder()
        let built = try Luahier.run(["bundle", "build", ".", "-o", "rules.bundle", "--sequence", "7"], in: folder)
        #expect(built.status == 0, "\(built.stderr)")
        #expect(built.stdout.hasPrefix("rules.bundle: rules.lua and 1 module, unsigned, sequence 7, revision "))
        let hash = try #require(Self.revision(in: built.stdout))
        // Without --sequence, the build's time in milliseconds: a later build, a larger one.
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let timed = try Luahier.run(["bundle", "build", ".", "-o", "timed.bundle"], in: folder)
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        let number = try #require(timed.stdout.firstMatch(of: #/sequence (\d+),/#).flatMap { Int64($0.1) }, "\(timed.stdout)")
        #expect((before...after).contains(number), "\(number) not in \(before)...\(after)")
        #expect(try Luahier.run(["bundle", "build", ".", "-o", "x.bundle", "--sequence=-1"], in: folder).stderr.contains("--sequence must be 0 or more"))

        let keygen = try Luahier.run(["bundle", "keygen", "ops"], in: folder)
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("ops.key").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let publicKey = try String(contentsOf: folder.appendingPathComponent("ops.pub"), encoding: .utf8)
        #expect(Data(base64Encoded: publicKey.trimmingCharacters(in: .whitespacesAndNewlines))?.count == 32)
        // Never over an existing key.
        let again = try Luahier.run(["bundle", "keygen", "ops"], in: folder)
        #expect(again.status == 1 && again.stderr.contains("cannot create ops.key: File exists"))

        let unsignedCheck = try Luahier.run(["bundle", "verify", "rules.bundle", "--key", "ops.pub"], in: folder)
        #expect(unsignedCheck.status == 1)
        #expect(unsignedCheck.stderr.contains("luahier: rules.bundle: unsigned: a signature is required (a key was given) and the bundle has none"))

        let signed = try Luahier.run(["bundle", "sign", "rules.bundle", "--key", "ops.key"], in: folder)
        #expect(signed.status == 0 && signed.stdout == "rules.bundle: signed, sequence 7, revision \(hash)\n", "\(signed.stderr)")
        let verified = try Luahier.run(["bundle", "verify", "rules.bundle", "--key", "ops.pub"], in: folder)
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("rules.bundle: signed, signature verified\nentry: rules.lua\nfile: rules.lua "))
        #expect(verified.stdout.contains("file: lib/prices.lua 53 bytes sha256 "))
        #expect(verified.stdout.hasSuffix("sequence: 7\nrevision: \(hash)\n"))

        // dispatch, told a bundle by its bytes (not its name): the manifest's revision stamps it.
        try FileManager.default.copyItem(at: folder.appendingPathComponent("rules.bundle"), to: folder.appendingPathComponent("shipped.lua"))
        for rules in ["rules.bundle", "shipped.lua"] {
            let answered = try Luahier.run(["dispatch", rules, "in.jsonl", "--bundle-key", "ops.pub"], in: folder)
            #expect(answered.status == 0, "\(answered.stderr)")
            #expect(answered.stdout.contains(#""revision":{"number":1,"hash":"\#(hash.prefix(16))"}"#), "\(answered.stdout)")
            #expect(answered.stdout.contains(#""value":{"price":30,"type":"Answer"}"#))
        }
        // The same rules from disk, anywhere, report the same revision.
        let fromDisk = try Luahier.run(["dispatch", folder.appendingPathComponent("rules.lua").path, "in.jsonl", "--watch"], stdin: "", in: folder)
        #expect(fromDisk.stdout.contains(#""hash":"\#(hash.prefix(16))""#), "\(fromDisk.stdout)")

        // Another key: refused, and nothing is answered.
        _ = try Luahier.run(["bundle", "keygen", "other"], in: folder)
        let wrong = try Luahier.run(["dispatch", "rules.bundle", "in.jsonl", "--bundle-key", "other.pub"], in: folder)
        #expect(wrong.status == 1 && wrong.stdout.isEmpty)
        #expect(wrong.stderr == "luahier: rules.bundle: the signature does not verify with the given public key\n")
        let notBundle = try Luahier.run(["dispatch", "rules.lua", "in.jsonl", "--bundle-key", "ops.pub"], in: folder)
        #expect(notBundle.status == 1 && notBundle.stdout.isEmpty)
        #expect(notBundle.stderr == "luahier: rules.lua: not a rule bundle (it does not start with LHBUNDLE)\n")
    }

    /// A bundle is written only as a regular file: not in place of a symbolic link (signing
    /// through one would leave its target unsigned) nor of a device.
    @Test func aBundleIsNotWrittenOverALinkOrADevice() throws {
        let folder = try Self.rulesFolder()
        #expect(try Luahier.run(["bundle", "build", ".", "-o", "rules.bundle"], in: folder).status == 0)
        #expect(try Luahier.run(["bundle", "keygen", "ops"], in: folder).status == 0)
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("link.bundle").path, withDestinationPath: "rules.bundle")
        for arguments in [["sign", "link.bundle", "--key", "ops.key"], ["sign", "rules.bundle", "--key", "ops.key", "-o", "/dev/null"],
                          ["build", ".", "-o", "link.bundle"]] {
            let refused = try Luahier.run(["bundle"] + arguments, in: folder)
            #expect(refused.status == 1, "\(arguments)")
            #expect(refused.stderr.contains("is not a regular file"), "\(arguments): \(refused.stderr)")
        }
        #expect(FileManager.default.fileExists(atPath: "/dev/null"))
    }

    /// A module under the folder by name, but a symbolic link to a file elsewhere, is not
    /// packed: a bundle holds only files under the rules' folder.
    @Test func aModuleLinkedFromOutsideTheFolderIsRefused() throws {
        let folder = try Self.rulesFolder()
        let outside = URL(fileURLWithPath: try Luahier.script("return { of = function() return 1 end }\n", name: "secret.lua"))
        let module = folder.appendingPathComponent("lib/prices.lua")
        try FileManager.default.removeItem(at: module)
        try FileManager.default.createSymbolicLink(atPath: module.path, withDestinationPath: outside.path)
        let refused = try Luahier.run(["bundle", "build", ".", "-o", "rules.bundle"], in: folder)
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stderr.contains("lies outside the rules file's folder"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("rules.bundle").path))
    }

    @Test func runTakesABundleAndItsRequireNeverReadsTheDisk() throws {
        let folder = try Self.rulesFolder()
        try """
            print(require("lib.prices").of("ab"))
            print(pcall(require, "late"))
            """.write(to: folder.appendingPathComponent("script.lua"), atomically: true, encoding: .utf8)
        #expect(try Luahier.run(["bundle", "build", "script.lua", "-o", "script.bundle"], in: folder).status == 0)
        // late.lua appears on disk only after the bundle was built.
        try "return 'from disk'\n".write(to: folder.appendingPathComponent("late.lua"), atomically: true, encoding: .utf8)
        let ran = try Luahier.run(["run", "script.bundle"], in: folder)
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout.hasPrefix("20\nfalse\tmodule 'late' not found:\n\tno file 'late.lua' in the bundle"), "\(ran.stdout)")
        let fromFile = try Luahier.run(["run", "script.lua"], in: folder)
        #expect(fromFile.stdout == "20\ntrue\tfrom disk\tlate.lua\n")
        _ = try Luahier.run(["bundle", "keygen", "k"], in: folder)
        let unsigned = try Luahier.run(["run", "--bundle-key", "k.pub", "script.bundle"], in: folder)
        #expect(unsigned.status == 1 && unsigned.stderr.contains("unsigned: a signature is required"))
    }

    /// `run -` tells a bundle on stdin by its first bytes as `run FILE` does: the same run,
    /// the same checks of its signature and its bytes; a script on stdin (shebang and all)
    /// still runs from its first byte, however few bytes it has.
    /// A key file refused is named as a key, with a key's limit: not as a rules file with the
    /// memory cap's (an attacker's find).
    @Test func aRefusedKeyFileIsNamedAsAKey() throws {
        let folder = try Self.rulesFolder()
        #expect(try Luahier.run(["bundle", "build", "rules.lua", "-o", "rules.bundle"], in: folder).status == 0)
        try Data(repeating: 0x41, count: 100_000).write(to: folder.appendingPathComponent("big.pub"))
        let large = try Luahier.run(["run", "--bundle-key", "big.pub", "rules.bundle"], in: folder)
        #expect(large.status == 1)
        #expect(large.stderr == "luahier: cannot read big.pub: 100000 bytes, more than the 4096 a key file may hold\n", "\(large.stderr)")
        let device = try Luahier.run(["dispatch", "rules.bundle", "--bundle-key", "/dev/null"], stdin: "", in: folder)
        #expect(device.status == 1)
        #expect(device.stderr.contains("cannot read /dev/null: not a regular file (a character device); keys are read from regular files only"), "\(device.stderr)")
    }

    @Test func runReadsABundleFromStdinAsFromAFile() throws {
        let folder = try Self.rulesFolder()
        try "print(require('lib.prices').of('ab'))\n".write(to: folder.appendingPathComponent("script.lua"), atomically: true, encoding: .utf8)
        #expect(try Luahier.run(["bundle", "build", "script.lua", "-o", "script.bundle"], in: folder).status == 0)
        _ = try Luahier.run(["bundle", "keygen", "k"], in: folder)
        _ = try Luahier.run(["bundle", "keygen", "other"], in: folder)
        #expect(try Luahier.run(["bundle", "sign", "script.bundle", "--key", "k.key", "-o", "signed.bundle"], in: folder).status == 0)
        let unsigned = try Data(contentsOf: folder.appendingPathComponent("script.bundle"))
        let signed = try Data(contentsOf: folder.appendingPathComponent("signed.bundle"))

        for (arguments, input) in [(["run", "-"], unsigned), (["run", "--bundle-key", "k.pub", "-"], signed), (["-"], signed)] {
            let fromStdin = try Luahier.run(arguments, input: input, in: folder)
            let fromFile = try Luahier.run(Array(arguments.dropLast()) + [input == signed ? "signed.bundle" : "script.bundle"], in: folder)
            #expect(fromStdin.status == 0 && fromStdin.stdout == "20\n", "\(arguments): \(fromStdin.stderr)")
            #expect(fromStdin.stdout == fromFile.stdout && fromStdin.status == fromFile.status)
        }
        // Refused as a file is, named stdin.
        let wrongKey = try Luahier.run(["run", "--bundle-key", "other.pub", "-"], input: signed, in: folder)
        #expect(wrongKey.status == 1 && wrongKey.stderr == "luahier: stdin: the signature does not verify with the given public key\n", "\(wrongKey.stderr)")
        let notSigned = try Luahier.run(["run", "--bundle-key", "k.pub", "-"], input: unsigned, in: folder)
        #expect(notSigned.status == 1 && notSigned.stderr.contains("luahier: stdin: unsigned: a signature is required"))
        let short = try Luahier.run(["run", "-"], input: unsigned.dropLast(4), in: folder)
        #expect(short.status == 1 && short.stderr.hasPrefix("luahier: stdin: truncated: "), "\(short.stderr)")
        var oversized = Data("LHBUNDLE".utf8)
        oversized.append(Data(count: (64 << 20) + 1))
        let large = try Luahier.run(["run", "-"], input: oversized, in: folder)
        #expect(large.status == 1 && large.stderr.hasPrefix("luahier: stdin: oversized: the bundle on stdin has "), "\(large.stderr)")
        #expect(large.stderr.hasSuffix("more than the limit of \(64 << 20)\n"))
        // A script on stdin, long or short, a shebang line longer than a read: as before.
        let shebang = "#!/usr/bin/env luahier" + String(repeating: " -x", count: 3000) + "\nprint('ran', ...)\n"
        for (script, expected) in [("print(1)", "1\n"), ("", ""), ("print(2)\n", "2\n"), (shebang, "ran\tword\n")] {
            let ran = try Luahier.run(["run", "-", "word"], stdin: script, in: folder)
            #expect(ran.status == 0 && ran.stdout == expected, "\(script.prefix(30)): \(ran.stderr)")
        }
        let keyOnScript = try Luahier.run(["run", "--bundle-key", "k.pub", "-"], stdin: "print(1)\n", in: folder)
        // Refused as the same script from a file is, exit 1: a refused input, not a usage error.
        #expect(keyOnScript.status == 1 && keyOnScript.stdout.isEmpty)
        #expect(keyOnScript.stderr == "luahier: stdin: not a rule bundle (it does not start with LHBUNDLE)\n", "\(keyOnScript.stderr)")
    }

    @Test func damagedBundlesAreRefusedByName() throws {
        let folder = try Self.rulesFolder()
        #expect(try Luahier.run(["bundle", "build", "rules.lua", "-o", "rules.bundle"], in: folder).status == 0)
        var bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent("rules.bundle")))
        try Data(bytes.dropLast(4)).write(to: folder.appendingPathComponent("short.bundle"))
        bytes[bytes.count - 2] ^= 0x20
        try Data(bytes).write(to: folder.appendingPathComponent("flipped.bundle"))
        bytes[11] = 9
        try Data(bytes).write(to: folder.appendingPathComponent("future.bundle"))
        for (name, message) in [
            ("short.bundle", "truncated: the bytes end inside the file lib/prices.lua"),
            ("flipped.bundle", "damaged: lib/prices.lua does not match its SHA-256 in the manifest"),
            ("future.bundle", "unknown bundle format version 9 (this luahier reads version 1)"),
        ] {
            for command in [["bundle", "verify", name], ["dispatch", name, "in.jsonl"], ["run", name]] {
                let refused = try Luahier.run(command, in: folder)
                #expect(refused.status == 1 && refused.stderr == "luahier: \(name): \(message)\n", "\(command): \(refused.stderr)")
            }
        }
    }
}
