import CLuaHost
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The host's own Lua (Lua/*.lua) as the host loads it: each chunk's text (`LuaSources`) with
/// its stripped dump, compiled at build time by the Lua the package links (`LuaBytecode`,
/// made by embed-lua). A state loads the dump, about six times cheaper than compiling the
/// text. The dumps are used only when the Lua linked at run time is the very release that
/// compiled them (its `lua_ident`): another release of Lua 5.4 would pass the dump header's
/// checks and could still read the code differently. Otherwise, and whenever a Lua refuses a
/// dump (luahier_loadhostchunk), the chunk is compiled from its text. Decided, and the dumps
/// decoded, once per process.
struct HostChunk: Sendable {
    /// The chunk's text.
    let source: String
    /// Its stripped dump; empty when the dumps are not used.
    let bytecode: [UInt8]

    /// `usingDump`: whether to use the dump (when the release matches, unless told).
    init(source: String, base64 bytecode: String, usingDump: Bool = HostChunk.dumpsMatch) {
        self.source = source
        self.bytecode = usingDump ? Self.decode(bytecode) : []
    }

    static let sandbox = HostChunk(source: LuaSources.sandbox, base64: LuaBytecode.sandbox)
    static let hostPrelude = HostChunk(source: LuaSources.hostPrelude, base64: LuaBytecode.hostPrelude)
    /// The walk's two variants share its text; luahier_pushwalk makes each from it.
    static let walk = HostChunk(source: LuaSources.walk, base64: LuaBytecode.walk)
    static let tracedWalk = HostChunk(source: LuaSources.walk, base64: LuaBytecode.tracedWalk)

    /// Whether the Lua linked at run time is the release that compiled the dumps.
    static let dumpsMatch = String(cString: luahier_luaident()) == LuaBytecode.luaIdent

    private static func decode(_ base64: String) -> [UInt8] {
        Data(base64Encoded: base64).map { [UInt8]($0) } ?? []
    }
}
