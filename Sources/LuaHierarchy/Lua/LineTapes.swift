import CLuaHost
import Synchronization

/// The token tapes of a batch's request lines (Sources/CLuaHost/tape.c): each line scanned,
/// validated and decoded on the reader's thread, so the state's thread only makes tables from
/// it. No Lua is touched here. Its bytes count against the bound on the tapes in flight
/// (`Pipeline.maxInFlightTapeBytes`).
final class LineTapes: @unchecked Sendable {
    private var tape: luahier_Tape
    private let spares: TapeSpares?

    /// Tapes `lines` of `chunk` (those kept), noting in each where its tape starts; a line left
    /// without one (memory ran out) is taped when it is answered. The tape's memory comes from
    /// `spares` and goes back there.
    init(chunk: [UInt8], lines: inout [LuaEngine.RunLine], spares: TapeSpares? = nil, depthLimit: Int = JSON.defaultDepthLimit) {
        self.spares = spares
        tape = spares?.take() ?? luahier_Tape()
        chunk.withUnsafeBytes { bytes in
            let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
            for index in lines.indices where !lines[index].oversized {
                lines[index].tape = luahier_tapeline(&tape, base.map { $0 + lines[index].start }, lines[index].count, Int32(depthLimit))
            }
        }
    }

    deinit {
        if let spares { spares.give(tape) } else { luahier_tapefree(&tape) }
    }

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

/// Tapes emptied, kept for the next batches': a batch's tapes take a few hundred KiB, which
/// malloc maps afresh for each batch (and the kernel zeroes, a page fault at a time) when
/// none is kept. At most `kept` of at most `largest` bytes each.
final class TapeSpares: @unchecked Sendable {
    /// A tape's memory, owned by whoever holds it.
    private struct Spare: @unchecked Sendable {
        var tape: luahier_Tape
    }
    private let spares = Mutex<[Spare]>([])
    static let kept = 8
    static let largest = 1 << 20

    /// A spare tape, empty, or a new one.
    func take() -> luahier_Tape {
        spares.withLock { $0.popLast() }?.tape ?? luahier_Tape()
    }

    /// Keeps `tape`'s memory for another batch, or frees it.
    func give(_ tape: luahier_Tape) {
        var tape = tape
        tape.count = 0
        tape.out_of_memory = 0
        let spare = Spare(tape: tape)
        let small = tape.capacity * MemoryLayout<UInt64>.size <= Self.largest
        let kept = small && spares.withLock { spares in
            guard spares.count < Self.kept else { return false }
            spares.append(spare)
            return true
        }
        if !kept { luahier_tapefree(&tape) }
    }

    deinit {
        spares.withLock { spares in
            for index in spares.indices { luahier_tapefree(&spares[index].tape) }
        }
    }
}
