import CLua
import CLuaHost
import Foundation
import Testing
@testable import LuaHierarchy

/// The package's Lua lives in Lua/*.lua and is embedded at build time (Plugins/EmbedLua) as
/// `LuaSources`: what the binary runs is each file's text, and every file is embedded. The
/// host's chunks are also compiled at build time (`LuaBytecode`, HostChunk): what a state loads
/// is the same program as the text, and a dump this Lua refuses costs only the compilation.
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
        #expect(names.count == 27)
        #expect(names.allSatisfy { $0.hasPrefix("local ") && $0.contains(" <const> = LUAHIER_") })
    }

    /// [-1, +0] The function on top of `L`, dumped stripped (as luahier_strip does).
    static func strippedDump(_ L: OpaquePointer) -> [UInt8] {
        final class Sink { var bytes: [UInt8] = [] }
        let sink = Sink()
        let failed = lua_dump(L, { _, bytes, size, sink in
            let sink = Unmanaged<Sink>.fromOpaque(sink!).takeUnretainedValue()
            sink.bytes += UnsafeRawBufferPointer(start: bytes, count: size)
            return 0
        }, Unmanaged.passUnretained(sink).toOpaque(), 1)
        luahier_pop(L, 1)
        #expect(failed == 0)
        return sink.bytes
    }

    /// Each embedded dump is byte for byte what the host's own fallback makes of the chunk's
    /// text when it does not use the dump (luahier_loadhostchunk with no dump; the walk's
    /// variants' text by luahier_pushwalksource): the two paths load the same function.
    @Test func eachDumpIsWhatTheTextPathMakes() throws {
        let L = try #require(luaL_newstate())
        defer { lua_close(L) }
        for (name, chunk) in [("sandbox", HostChunk.sandbox), ("hostPrelude", HostChunk.hostPrelude)] {
            #expect(luahier_loadhostchunk(L, chunk.source, chunk.source.utf8.count, nil, 0, "=[luahier]") == LUA_OK)
            let dump = Self.strippedDump(L)
            #expect(!chunk.bytecode.isEmpty, "\(name) has no dump")
            #expect(dump == chunk.bytecode, "\(name)'s dump is not its text's")
        }
        for (traced, chunk) in [(false, HostChunk.walk), (true, HostChunk.tracedWalk)] {
            #expect(luahier_pushwalksource(L, traced ? 1 : 0, chunk.source) == LUA_OK)
            var length = 0
            let text = lua_tolstring(L, -1, &length)
            #expect(luahier_loadhostchunk(L, text, length, nil, 0, "=[luahier walk]") == LUA_OK)
            let dump = Self.strippedDump(L)
            luahier_pop(L, 1)
            #expect(!chunk.bytecode.isEmpty)
            #expect(dump == chunk.bytecode, "the walk's \(traced ? "traced" : "untraced") dump is not its text's")
        }
        #expect(HostChunk.walk.bytecode != HostChunk.tracedWalk.bytecode)
        #expect(lua_gettop(L) == 0)
    }

    /// The Lua the tests run is the build's release (its lua_ident), so the dumps are used.
    @Test func theDumpsAreUsedByTheReleaseThatMadeThem() {
        #expect(LuaBytecode.luaIdent.contains("$LuaVersion: Lua 5.4."))
        #expect(String(cString: luahier_luaident()) == LuaBytecode.luaIdent)
        #expect(HostChunk.dumpsMatch)
        #expect(!HostChunk.sandbox.bytecode.isEmpty)
        // Another release: no dump, and the chunk is its text compiled (below).
        let unused = HostChunk(source: LuaSources.sandbox, base64: LuaBytecode.sandbox, usingDump: false)
        #expect(unused.bytecode.isEmpty && unused.source == LuaSources.sandbox)
    }

    /// The dump is what a state loads: it loads as a binary chunk, and a state made with it
    /// runs (every other test makes one).
    @Test func eachDumpLoadsAsABinaryChunk() throws {
        let L = try #require(luaL_newstate())
        defer { lua_close(L) }
        for chunk in [HostChunk.sandbox, .hostPrelude, .walk, .tracedWalk] {
            try #require(!chunk.bytecode.isEmpty)
            let loaded = chunk.bytecode.withUnsafeBufferPointer { luahier_loaddump(L, $0.baseAddress, $0.count, "=[luahier]") }
            #expect(loaded == 1)
            #expect(lua_type(L, -1) == LUA_TFUNCTION)
            luahier_pop(L, 1)
        }
        // Text is not a dump: refused, and nothing pushed.
        let text = Array(LuaSources.hostPrelude.utf8)
        #expect(text.withUnsafeBufferPointer { luahier_loaddump(L, $0.baseAddress, $0.count, "=[luahier]") } == 0)
        #expect(lua_gettop(L) == 0)
    }

    /// A dump this Lua does not read (another version's, or damaged) is passed over: the
    /// chunk is compiled from its text, stripped, and runs the same.
    @Test func aDumpThisLuaRefusesFallsBackToTheText() throws {
        let L = try #require(luaL_newstate())
        defer { lua_close(L) }
        let source = "local a, b = ... return a + b"
        var good: [UInt8] = []
        #expect(luaL_loadbufferx(L, source, source.utf8.count, "=[luahier test]", "t") == LUA_OK)
        good = Self.strippedDump(L)
        var otherVersion = good
        otherVersion[4] = 0x53  // the header's version byte: Lua 5.3's
        let damaged = Array(good.prefix(good.count / 2))
        for bytes in [otherVersion, damaged, []] {
            let status = bytes.withUnsafeBufferPointer { bytes in
                luahier_loadhostchunk(L, source, source.utf8.count, bytes.baseAddress, bytes.count, "=[luahier test]")
            }
            #expect(status == LUA_OK)
            var info = lua_Debug()
            lua_pushvalue(L, -1)
            #expect(lua_getinfo(L, ">S", &info) != 0)
            #expect(String(cString: info.source) == "=?", "compiled from the text, and stripped")
            lua_pushinteger(L, 2)
            lua_pushinteger(L, 3)
            #expect(lua_pcallk(L, 2, 1, 0, 0, nil) == LUA_OK)
            #expect(lua_tointegerx(L, -1, nil) == 5)
            luahier_pop(L, 1)
        }
        // A text that does not compile is the error, whatever the dump.
        let broken = "return +"
        let status = otherVersion.withUnsafeBufferPointer { bytes in
            luahier_loadhostchunk(L, broken, broken.utf8.count, bytes.baseAddress, bytes.count, "=[luahier test]")
        }
        #expect(status == LUA_ERRSYNTAX)
        #expect(String(cString: lua_tolstring(L, -1, nil)).contains("unexpected symbol"))
        luahier_pop(L, 1)
    }
}
