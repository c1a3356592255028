#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The host's own Lua (Lua/*.lua) as the host loads it: each chunk's text (`LuaSources`) with
/// its stripped dump, compiled at build time by the Lua the package links (`LuaBytecode`,
/// made by embed-lua). A state loads the dump, about seven times cheaper than compiling the
/// text; a Lua at run time that does not read the build's dump format makes the chunk from the
/// text instead (luahier_loadhostchunk). The dumps are decoded once per process.
struct HostChunk: Sendable {
    /// The chunk's text.
    let source: String
    /// Its stripped dump (empty if it did not decode).
    let bytecode: [UInt8]

    init(source: String, base64 bytecode: String) {
        self.source = source
        self.bytecode = Data(base64Encoded: bytecode).map { [UInt8]($0) } ?? []
    }

    static let sandbox = HostChunk(source: LuaSources.sandbox, base64: LuaBytecode.sandbox)
    static let hostPrelude = HostChunk(source: LuaSources.hostPrelude, base64: LuaBytecode.hostPrelude)
    /// The walk's two variants share its text; luahier_pushwalk makes each from it.
    static let walk = HostChunk(source: LuaSources.walk, base64: LuaBytecode.walk)
    static let tracedWalk = HostChunk(source: LuaSources.walk, base64: LuaBytecode.tracedWalk)
}
