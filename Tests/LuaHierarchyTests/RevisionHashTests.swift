import Foundation
import Testing
@testable import LuaHierarchy

/// A revision's identity is its content hash, the same wherever the rules live (contract §9,
/// scale-out): files are named in it relative to the rules file's folder.
@Suite("Revision hash")
struct RevisionHashTests {
    @Test func theSameRulesInTwoFoldersHaveTheSameHash() async throws {
        let first = try RulesPoolTests.folder(version: 7), second = try RulesPoolTests.folder(version: 7)
        let nested = second.appendingPathComponent("deeper/still")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        try RulesPoolTests.write(version: 7, in: nested)
        var hashes: [String] = []
        for folder in [first, second, nested] {
            let pool = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path))
            hashes.append(pool.revision.hash)
            await pool.shutDown()
        }
        #expect(Set(hashes).count == 1, "\(hashes)")
        // The module is in the hash: another version, another hash.
        let other = try RulesPoolTests.folder(version: 8)
        let pool = try RulesPool(options: .init(rulesFile: other.appendingPathComponent("rules.lua").path))
        #expect(pool.revision.hash != hashes[0])
        await pool.shutDown()
    }

    @Test func filesAreNamedRelativeToTheRulesFolder() {
        #expect(Revision.hashedName(module: "/srv/x/version.lua", folder: "/srv/x") == "version.lua")
        #expect(Revision.hashedName(module: "/srv/x/lib/prices.lua", folder: "/srv/x/") == "lib/prices.lua")
        #expect(Revision.hashedName(module: "version.lua", folder: ".") == "version.lua")
        #expect(Revision.hashedName(module: "./lib/prices.lua", folder: ".") == "lib/prices.lua")
        #expect(Revision.hashedName(module: "rules/lib/a.lua", folder: "rules") == "lib/a.lua")
        // Outside the folder (a module path elsewhere): the path as found.
        #expect(Revision.hashedName(module: "/opt/lua/shared.lua", folder: "/srv/x") == "/opt/lua/shared.lua")
        #expect(Revision.hashedName(module: "../shared/a.lua", folder: ".") == "../shared/a.lua")
        #expect(Revision.hashedName(module: "/srv/x/../y/a.lua", folder: "/srv/x") == "/srv/x/../y/a.lua")
        #expect(Revision.hashedName(module: "/srv/xy/a.lua", folder: "/srv/x") == "/srv/xy/a.lua")
        #expect(Revision.baseName(of: "/srv/x/rules.lua") == "rules.lua" && Revision.baseName(of: "rules.lua") == "rules.lua")
        #expect(Revision.folder(of: "/srv/x/rules.lua") == "/srv/x" && Revision.folder(of: "rules.lua") == ".")
        let rules = Array("return 1".utf8), module = Array("return 2".utf8)
        #expect(Revision.hash(path: "/a/rules.lua", rules: rules, modules: ["/a/m.lua": module])
            == Revision.hash(path: "rules.lua", rules: rules, modules: ["m.lua": module]))
        #expect(Revision.hash(path: "/a/rules.lua", rules: rules, modules: ["/a/m.lua": module])
            != Revision.hash(path: "/a/rules.lua", rules: rules, modules: ["/a/n.lua": module]))
    }
}
