import Foundation
import Testing
@testable import LuaHierarchy

/// The package's Lua lives in Lua/*.lua and is embedded at build time (Plugins/EmbedLua) as
/// `LuaSources`: what the binary runs is each file's text, and every file is embedded.
@Suite("Embedded Lua")
struct EmbeddedLuaTests {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Lua")

    static let embedded: [String: String] = [
        "host_prelude.lua": LuaSources.hostPrelude,
        "sandbox.lua": LuaSources.sandbox,
        "test_prelude.lua": LuaSources.testPrelude,
        "walk.lua": LuaSources.walk,
    ]

    @Test func everyLuaFileIsEmbeddedAsItIs() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".lua") }
        #expect(Set(files) == Set(Self.embedded.keys))
        for file in files {
            var text = try String(contentsOf: Self.folder.appendingPathComponent(file), encoding: .utf8)
            if text.hasSuffix("\n") { text.removeLast() }
            #expect(Self.embedded[file] == text, "\(file) differs from LuaSources")
        }
    }

    /// The walk names the C enums only where it declares its constants, which C fills in
    /// (luahier_pushwalk refuses a text that still names one after).
    @Test func theWalkNamesOnlyConstantsCFillsIn() {
        let names = LuaSources.walk.split(separator: "\n").filter { $0.contains("LUAHIER_") && !$0.hasPrefix("--") }
        #expect(names.count == 25)
        #expect(names.allSatisfy { $0.hasPrefix("local ") && $0.contains(" <const> = LUAHIER_") })
    }
}
