import Foundation
import Testing

/// The layering the README promises: the tree and dispatch know nothing of Lua, the Lua
/// bridge is the only code that imports CLua, and the CLI uses the library's public API only.
@Suite("Architecture")
struct ArchitectureTests {
    static func swiftFiles(under folder: String) throws -> [(path: String, text: String)] {
        let root = Luahier.packageRoot.appendingPathComponent(folder)
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return try paths.filter { $0.hasSuffix(".swift") }.map { relative in
            (folder + "/" + relative, try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8))
        }
    }

    @Test func onlyTheLuaBridgeImportsCLua() throws {
        let importers = try Self.swiftFiles(under: "Sources").filter { $0.text.contains("import CLua") }.map(\.path)
        #expect(!importers.isEmpty)
        #expect(importers.allSatisfy { $0.hasPrefix("Sources/LuaHierarchy/Lua/") }, "\(importers)")
    }

    @Test func theCLIUsesOnlyThePublicAPI() throws {
        let files = try Self.swiftFiles(under: "Sources/luahier")
        #expect(!files.isEmpty)
        #expect(files.allSatisfy { !$0.text.contains("@testable") && !$0.text.contains("import CLua") })
    }
}
