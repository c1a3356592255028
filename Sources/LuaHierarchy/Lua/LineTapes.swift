import CLuaHost

/// The token tapes of a batch's request lines (Sources/CLuaHost/tape.c): each line scanned,
/// validated and decoded on the reader's thread, so the state's thread only makes tables from
/// it. No Lua is touched here. Its bytes count against the bound on the tapes in flight
/// (`Pipeline.maxInFlightTapeBytes`).
final class LineTapes: @unchecked Sendable {
    private var tape = luahier_Tape()

    /// Tapes `lines` of `chunk` (those kept), noting in each where its tape starts; a line left
    /// without one (memory ran out) is taped when it is answered.
    init(chunk: [UInt8], lines: inout [LuaEngine.RunLine], depthLimit: Int = JSON.defaultDepthLimit) {
        chunk.withUnsafeBytes { bytes in
            let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
            for index in lines.indices where !lines[index].oversized {
                lines[index].tape = luahier_tapeline(&tape, base.map { $0 + lines[index].start }, lines[index].count, Int32(depthLimit))
            }
        }
    }

    deinit { luahier_tapefree(&tape) }

    /// The tapes, one after the other.
    var words: UnsafePointer<UInt64>? { UnsafePointer(tape.words) }

    /// What they hold in memory.
    var byteCount: Int { tape.capacity * MemoryLayout<UInt64>.size }

    /// The bytes the tape of request line `line` takes: for tests of its bound.
    static func size(ofLine line: [UInt8]) -> Int {
        var tape = luahier_Tape()
        defer { luahier_tapefree(&tape) }
        _ = line.withUnsafeBytes { bytes in
            luahier_tapeline(&tape, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, Int32(JSON.defaultDepthLimit))
        }
        return tape.count * MemoryLayout<UInt64>.size
    }

    /// The most bytes a tape of a line of `length` bytes may take (LUAHIER_TAPE_BOUND).
    static func bound(ofLength length: Int) -> Int { 17 * length + 256 }
}
