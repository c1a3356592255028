import CLuaHost
import Synchronization

/// The token tapes of a batch's request lines (Sources/CLuaHost/tape.c): each line scanned,
/// validated and decoded on the reader's thread, so the state's thread only makes tables from
/// it. No Lua is touched here. The tape is one of `TapeSlots`' fixed buffers: a line is taped
/// only when it and its tape fit the line budget (LUAHIER_TAPE_LINE_BUDGET) and the room the
/// buffer has left; any other line, and every line of a batch that found no free slot, is
/// read straight from its bytes on the state's thread, under the memory cap.
final class LineTapes: @unchecked Sendable {
    private var tape: luahier_Tape
    private let slots: TapeSlots?

    /// Tapes `lines` of `chunk` (those kept) into a slot of `slots`, noting in each where its
    /// tape starts (-1: read straight). The slot goes back when this is released.
    init(chunk: [UInt8], lines: inout [LuaEngine.RunLine], slots: TapeSlots, depthLimit: Int = JSON.defaultDepthLimit) {
        guard let taken = slots.take() else {
            tape = luahier_Tape()
            self.slots = nil
            return
        }
        tape = taken
        self.slots = slots
        chunk.withUnsafeBytes { bytes in
            let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
            for index in lines.indices where !lines[index].oversized {
                lines[index].tape = luahier_tapeline(&tape, base.map { $0 + lines[index].start }, lines[index].count, Int32(depthLimit))
            }
        }
    }

    deinit { slots?.give(tape) }

    /// The tapes, one after the other (nil: this batch has none).
    var words: UnsafePointer<UInt64>? { UnsafePointer(tape.words) }

    /// The most bytes a line, and its tape, may take to be taped (LUAHIER_TAPE_LINE_BUDGET).
    static let lineBudget = Int(LUAHIER_TAPE_LINE_BUDGET)

    /// Request line `line` taped alone into a fresh slot of `room` bytes: the bytes its tape
    /// takes (nil: not taped), the slot's memory, and the most one line's tape took in it. For
    /// tests of the budget.
    static func taping(_ line: [UInt8], room: Int = TapeSlots.defaultBytesEach) -> (bytes: Int?, capacity: Int, largestLine: Int) {
        var tape = luahier_Tape()
        guard luahier_tapemake(&tape, room) != 0 else { return (nil, 0, 0) }
        defer { luahier_tapefree(&tape) }
        let start = line.withUnsafeBytes { bytes in
            luahier_tapeline(&tape, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, Int32(JSON.defaultDepthLimit))
        }
        let word = MemoryLayout<UInt64>.size
        return (start < 0 ? nil : (tape.count - start) * word, tape.capacity * word, tape.largest_line * word)
    }
}

/// The fixed buffers the reader tapes batches into, for one dispatch run: at most `count`, of
/// `bytesEach` bytes, each made whole when first needed and never grown, kept for the next
/// batches while the run goes on (malloc would map a fresh one for each batch, and the kernel
/// zero it a page fault at a time). A batch that finds none free is not taped. So the tapes'
/// memory is at most `count` x `bytesEach` bytes whatever the input and `--jobs`
/// (docs/limits.md).
final class TapeSlots: @unchecked Sendable {
    /// A tape's memory, owned by whoever holds it.
    private struct Slot: @unchecked Sendable {
        var tape: luahier_Tape
    }
    private struct State {
        var free: [Slot] = []
        var made = 0
        /// Counters, for tests: the bytes the slots took, and batches that found none free.
        var bytesMade = 0
        var untaped = 0
    }
    private let state = Mutex(State())
    let count: Int
    let bytesEach: Int
    static let defaultCount = 12
    static let defaultBytesEach = 1 << 20

    init(count: Int = TapeSlots.defaultCount, bytesEach: Int = TapeSlots.defaultBytesEach) {
        self.count = count
        self.bytesEach = bytesEach
    }

    /// A free slot, emptied, or a new one while fewer than `count` were made; nil when none.
    func take() -> luahier_Tape? {
        let (spare, makeOne) = state.withLock { state -> (Slot?, Bool) in
            if let slot = state.free.popLast() { return (slot, false) }
            guard state.made < count else {
                state.untaped += 1
                return (nil, false)
            }
            state.made += 1
            return (nil, true)
        }
        if var slot = spare {
            luahier_tapeclear(&slot.tape)
            return slot.tape
        }
        guard makeOne else { return nil }
        var tape = luahier_Tape()
        guard luahier_tapemake(&tape, bytesEach) != 0 else {
            state.withLock { $0.made -= 1 }
            return nil
        }
        state.withLock { $0.bytesMade += tape.capacity * MemoryLayout<UInt64>.size }
        return tape
    }

    /// Gives a slot back for the next batches.
    func give(_ tape: luahier_Tape) {
        state.withLock { $0.free.append(Slot(tape: tape)) }
    }

    /// The bytes all slots made so far hold, and how many batches found no free slot.
    var bytesMade: Int { state.withLock { $0.bytesMade } }
    var untaped: Int { state.withLock { $0.untaped } }

    deinit {
        state.withLock { state in
            for index in state.free.indices { luahier_tapefree(&state.free[index].tape) }
        }
    }
}
