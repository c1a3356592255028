import Foundation
import Testing

/// The layering docs/architecture.md describes: the tree and dispatch know nothing of Lua, the Lua
/// bridge is the only code that imports CLua, and the CLI uses the library's public and
/// package API only (never @testable).
@Suite("Architecture", .ownThreads)
struct ArchitectureTests {
    static func swiftFiles(under folder: String) throws -> [(path: String, text: String)] {
        let root = Luahier.packageRoot.appendingPathComponent(folder)
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return try paths.filter { $0.hasSuffix(".swift") }.map { relative in
            (folder + "/" + relative, try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8))
        }
    }

    /// Back-references a layer may make (one way, these names only), each with its reason:
    /// none today. The test fails on an entry no longer needed.
    static let allowedBackReferences: [(from: String, to: String, names: Set<String>, why: String)] = []

    /// The folders are layers (docs/architecture.md): no two use each other, outside
    /// the allowed back-references. `LUAHIER_FOLDER_GRAPH=1` prints the graph: each edge, how
    /// many uses make it, and the first few.
    @Test func foldersUseEachOtherOneWayOnly() throws {
        let module = "Sources/LuaHierarchy/"
        let files = try Self.swiftFiles(under: String(module.dropLast())).map { (path: String($0.path.dropFirst(module.count)), text: $0.text) }
        let graph = FolderGraph(files: files)
        // A graph this thin would mean the reading broke, not that the folders are clean.
        #expect(graph.edges.count > 40, "only \(graph.edges.count) edges")
        if ProcessInfo.processInfo.environment["LUAHIER_FOLDER_GRAPH"] != nil {
            for edge in graph.edges.keys.sorted() {
                let uses = graph.edges[edge]!
                print("\(edge.from) -> \(edge.to) (\(uses.count)): " + uses.prefix(3).map { "\($0.file):\($0.line) \($0.name)" }.joined(separator: ", "))
            }
        }
        var used = Set<Int>()
        for pair in graph.twoWayPairs {
            let ways = [pair, FolderGraph.Edge(from: pair.to, to: pair.from)]
            let allowed = ways.lazy.compactMap { way in
                Self.allowedBackReferences.indices.first { index in
                    let entry = Self.allowedBackReferences[index]
                    return entry.from == way.from && entry.to == way.to && graph.edges[way]!.allSatisfy { entry.names.contains($0.name) }
                }
            }.first
            if let allowed {
                used.insert(allowed)
                continue
            }
            let uses = ways.map { way in
                "\(way.from) -> \(way.to): " + graph.edges[way]!.prefix(4).map { "\($0.file):\($0.line) \($0.name)" }.joined(separator: ", ")
            }
            Issue.record("\(pair.from) and \(pair.to) use each other:\n  \(uses.joined(separator: "\n  "))")
        }
        for (index, entry) in Self.allowedBackReferences.enumerated() where !used.contains(index) {
            Issue.record("\(entry.from) -> \(entry.to) is no longer needed (\(entry.why)): take it off the list")
        }
    }

    /// The modules a Swift file imports, read from its `import` lines (attributes, access
    /// levels and `import struct M.T` forms included): `import CLuaHost` is not `import CLua`.
    static func imports(of text: String) -> Set<String> {
        var modules: Set<String> = []
        for line in text.split(separator: "\n") {
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            while let first = words.first, first.hasPrefix("@") { words.removeFirst() }
            if let first = words.first, ["public", "package", "internal", "fileprivate", "private"].contains(first) {
                words.removeFirst()
            }
            guard words.first == "import", words.count >= 2 else { continue }
            var name = words[1]
            if ["struct", "class", "enum", "protocol", "typealias", "func", "var", "let"].contains(name), words.count >= 3 {
                name = words[2]
            }
            modules.insert(String(name.prefix { $0 != "." }))
        }
        return modules
    }

    /// Which files of Sources import `module`.
    static func importers(of module: String) throws -> [String] {
        try swiftFiles(under: "Sources").filter { imports(of: $0.text).contains(module) }.map(\.path)
    }

    @Test func importLinesAreReadExactly() {
        #expect(Self.imports(of: "import CLuaHost\n") == ["CLuaHost"])
        #expect(Self.imports(of: "  @_implementationOnly import CLua\npublic import struct Foundation.Date\n// import X")
            == ["CLua", "Foundation"])
    }

    /// The layers: only the Lua bridge imports Lua and the host's C; the JSON reader is read by
    /// the JSON code and the bridge; the signal handlers and the process settings by the service's
    /// wrappers only.
    @Test func eachCModuleIsImportedByItsLayerOnly() throws {
        let layers: [(module: String, folders: [String])] = [
            // Lua/, and the bridge's `hier` API over the hierarchy, which sits above it; and
            // the build tool that compiles the host's chunks as the host would (embed-lua).
            ("CLua", ["Sources/LuaHierarchy/Lua/", "Sources/LuaHierarchy/Hierarchy/LuaBridge.swift", "Sources/embed-lua/"]),
            ("CLuaHost", ["Sources/LuaHierarchy/Lua/", "Sources/LuaHierarchy/Hierarchy/LuaBridge.swift", "Sources/embed-lua/"]),
            ("CJSONReader", ["Sources/LuaHierarchy/JSON/", "Sources/LuaHierarchy/Lua/"]),
            ("CSignals", ["Sources/LuaHierarchy/Service/"]),
            ("CProcess", ["Sources/LuaHierarchy/Service/"]),
        ]
        for (module, folders) in layers {
            let importers = try Self.importers(of: module)
            #expect(!importers.isEmpty, "nothing imports \(module)")
            #expect(importers.allSatisfy { path in folders.contains { path.hasPrefix($0) } }, "\(module): \(importers)")
        }
    }

    @Test func theCLIAndTheServerUseOnlyTheLibrary() throws {
        for folder in ["Sources/luahier", "Sources/LuaHierarchyServer"] {
            let files = try Self.swiftFiles(under: folder)
            #expect(!files.isEmpty)
            for file in files {
                #expect(!file.text.contains("@testable"), "\(file.path)")
                let cModules = Self.imports(of: file.text).intersection(["CLua", "CLuaHost", "CJSONReader", "CSignals", "CProcess"])
                #expect(cModules.isEmpty, "\(file.path) imports \(cModules)")
            }
        }
    }

    /// What only the CLI and the server use is `package`, not `public`: an embedder's API
    /// is the engine's (the CLI internals that were once public).
    @Test func cliInternalsAreNotPublic() throws {
        let library = try Self.swiftFiles(under: "Sources/LuaHierarchy").map(\.text).joined(separator: "\n")
        for declaration in [
            "enum LineDispatcher", "enum OutputWriter", "enum ServiceSignals", "enum PackageVersion",
            "struct RuleTestRunner", "struct TestResult", "struct TestRun", "struct CoverageReport",
            "enum PrintableText", "enum ErrorText",
        ] {
            #expect(library.contains("package \(declaration)"), "\(declaration) is not package")
            #expect(!library.contains("public \(declaration)"), "\(declaration) is public")
        }
    }

    /// Every public declaration of the library has a `///` doc comment (an attribute line may
    /// stand between them): an embedder reads the API from its documentation, not its source.
    @Test func everyPublicDeclarationIsDocumented() throws {
        var undocumented: [String] = []
        for file in try Self.swiftFiles(under: "Sources/LuaHierarchy") {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            for (number, line) in lines.enumerated()
            where (line.hasPrefix("public ") || line.hasPrefix("open ")) && !line.hasPrefix("public import") {
                var above = number - 1
                while above >= 0 && lines[above].hasPrefix("@") { above -= 1 }
                if above < 0 || !lines[above].hasPrefix("///") { undocumented.append("\(file.path):\(number + 1): \(line)") }
            }
        }
        #expect(undocumented.isEmpty, "\(undocumented.count) undocumented:\n\(undocumented.joined(separator: "\n"))")
    }

    /// C logic lives in the CLuaHost target's `.c` files, which SwiftPM rebuilds when they
    /// change; the system library's header only re-exports Lua's macros, one line each.
    @Test func cLogicLivesInCFilesNotInTheSystemLibrary() throws {
        let clua = Luahier.packageRoot.appendingPathComponent("Sources/CLua")
        let headers = try FileManager.default.contentsOfDirectory(atPath: clua.path).filter { $0.hasSuffix(".h") }
        #expect(headers == ["shim.h"])
        let shim = try String(contentsOf: clua.appendingPathComponent("shim.h"), encoding: .utf8)
        let code = shim.split(separator: "\n").filter { line in
            !line.hasPrefix("/*") && !line.hasPrefix(" *") && !line.hasPrefix("#") && !line.trimmingCharacters(in: .whitespaces).isEmpty
        }
        // Each definition is a one-line re-export, or the signature line of a two-line one.
        var index = 0
        while index < code.count {
            let line = code[index]
            if line.hasPrefix("static const int ") || (line.hasPrefix("static inline ") && line.hasSuffix("}")) {
                index += 1
            } else if line.hasPrefix("static inline "), index + 2 < code.count, code[index + 2] == "}" {
                #expect(code[index + 1].hasPrefix("    return lua_"), "\(code[index + 1])")
                index += 3
            } else {
                Issue.record("not a macro re-export in CLua/shim.h: \(line)")
                index += 1
            }
        }
        let host = Luahier.packageRoot.appendingPathComponent("Sources/CLuaHost")
        let cFiles = try FileManager.default.contentsOfDirectory(atPath: host.path).filter { $0.hasSuffix(".c") }
        #expect(Set(cFiles).isSuperset(of: ["host.c", "limits.c", "errors.c", "sandbox.c", "pattern.c", "walk.c", "engine.c", "watchdog.c", "jsonwrite.c", "lines.c"]))
        for header in try FileManager.default.contentsOfDirectory(atPath: host.appendingPathComponent("include").path) {
            let text = try String(contentsOf: host.appendingPathComponent("include/" + header), encoding: .utf8)
            #expect(!text.contains("static inline"), "\(header) holds code: it belongs in a .c file")
        }
    }

    /// The one JSON reader, the signal handlers and the process settings are C without Lua and
    /// without the host: Swift's `Value`s are read with the reader outside the Lua bridge, and
    /// CLuaHost uses the handlers, never the other way round. Each holds its own files and includes only them.
    @Test(arguments: [
        ("Sources/CJSONReader", ["jsonread.c", "include/luahier_jsonread.h"]),
        ("Sources/CSignals", ["signals.c", "include/luahier_signals.h"]),
        ("Sources/CProcess", ["process.c", "include/luahier_process.h"]),
    ])
    func cTargetsWithoutLua(_ folder: String, _ expected: [String]) throws {
        let root = Luahier.packageRoot.appendingPathComponent(folder)
        let files = try FileManager.default.subpathsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".c") || $0.hasSuffix(".h") }
        #expect(Set(files) == Set(expected))
        let own = Set(expected.map { String($0.split(separator: "/").last!) })
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("lua.h") && !text.contains("lauxlib.h"), "\(file) includes Lua")
            #expect(Self.includes(of: text).allSatisfy(own.contains), "\(file) includes \(Self.includes(of: text))")
            #expect(!text.contains("static inline") || file.hasSuffix(".c"), "\(file) holds code: it belongs in a .c file")
        }
    }

    /// A request line's tape is made on the reader's thread, which never touches the state:
    /// its unit includes no Lua, and takes no lua_State.
    @Test func theTapeIsMadeWithoutLua() throws {
        let host = Luahier.packageRoot.appendingPathComponent("Sources/CLuaHost")
        for file in ["tape.c", "include/luahier_tape.h"] {
            let text = try String(contentsOf: host.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("lua.h") && !text.contains("lua_State") && !text.contains("luahier_guard"), "\(file)")
        }
    }

    /// The `#include "..."` lines of a C file.
    static func includes(of text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("#include \"") else { return nil }
            return String(trimmed.dropFirst("#include \"".count).prefix { $0 != "\"" })
        }
    }

    /// The host's C units in dependency order (luahier_guard.h says why): each `.c` and header
    /// includes only the project's headers of its own unit or of units before it, so no two
    /// units use each other.
    @Test func theHostsCUnitsDependOneWay() throws {
        let order = ["jsonread", "signals", "guard", "tags", "errors", "host", "limits", "watchdog", "sandbox", "pattern",
                     "jsonwrite", "tape", "enginetypes", "walk", "engine", "lines"]
        func unit(_ file: String) -> String {
            var name = (file as NSString).lastPathComponent
            for affix in ["luahier_", ".c", ".h", "_internal"] { name = name.replacingOccurrences(of: affix, with: "") }
            return name
        }
        let host = Luahier.packageRoot.appendingPathComponent("Sources/CLuaHost")
        let files = try FileManager.default.subpathsOfDirectory(atPath: host.path).filter { $0.hasSuffix(".c") || $0.hasSuffix(".h") }
        #expect(files.count >= 20)
        for file in files {
            let own = order.firstIndex(of: unit(file))
            #expect(own != nil, "\(file) is no unit of the order")
            let text = try String(contentsOf: host.appendingPathComponent(file), encoding: .utf8)
            for included in Self.includes(of: text) {
                let theirs = order.firstIndex(of: unit(included))
                #expect(theirs != nil && own != nil && theirs! <= own!, "\(file) includes \(included), a later unit")
            }
        }
    }
}
