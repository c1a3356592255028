import CLua
import CLuaHost
import Foundation

/// A failure to compile a host chunk at build time, with Lua's message.
struct CompileError: Error {
    var message: String
}

/// Compiles host chunks with the Lua the package links, as the host would at run time
/// (luahier_loadhostchunk, luahier_pushwalk): the text compiled, then dumped stripped, so the
/// bytes are the chunk the host would otherwise make at every start.
final class HostChunkCompiler {
    private let L: OpaquePointer

    init() throws(CompileError) {
        guard let state = luaL_newstate() else { throw CompileError(message: "no Lua state") }
        L = state
    }

    deinit { lua_close(L) }

    /// The stripped dump of `text` (a host chunk).
    func compile(_ text: String) throws(CompileError) -> Data {
        guard luaL_loadbufferx(L, text, text.utf8.count, "=[luahier]", "t") == LUA_OK else { throw failure() }
        return try dump()
    }

    /// The stripped dump of walk.lua's variant (luahier_pushwalksource makes its text).
    func compileWalk(_ text: String, traced: Bool) throws(CompileError) -> Data {
        guard luahier_pushwalksource(L, traced ? 1 : 0, text) == LUA_OK else { throw failure() }
        var length = 0
        let variant = lua_tolstring(L, -1, &length)
        let status = luaL_loadbufferx(L, variant, length, "=[luahier walk]", "t")
        lua_rotate(L, -2, 1)
        luahier_pop(L, 1)
        guard status == LUA_OK else { throw failure() }
        return try dump()
    }

    /// [-1, +0] The function on top, dumped stripped.
    private func dump() throws(CompileError) -> Data {
        final class Sink { var bytes = Data() }
        let sink = Sink()
        let failed = lua_dump(L, { _, bytes, size, sink in
            guard let bytes, let sink else { return 1 }
            Unmanaged<Sink>.fromOpaque(sink).takeUnretainedValue().bytes.append(bytes.assumingMemoryBound(to: UInt8.self), count: size)
            return 0
        }, Unmanaged.passUnretained(sink).toOpaque(), 1)
        luahier_pop(L, 1)
        guard failed == 0 else { throw CompileError(message: "lua_dump failed") }
        return sink.bytes
    }

    /// [-1, +0] The error on top.
    private func failure() -> CompileError {
        let message = lua_tolstring(L, -1, nil).map { String(cString: $0) } ?? "?"
        luahier_pop(L, 1)
        return CompileError(message: message)
    }
}
