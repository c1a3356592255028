/// The bounds a hierarchy's Lua host enforces (contract §7). Each one trips as a clear reported
/// error that ends the dispatch (or fails the chunk) it tripped in, and leaves the state usable.
///
/// Budgets nest: a top-level chunk gets `instructions` and `time`; every dispatch (from Swift,
/// from a chunk, or nested in a responder) gets `dispatchInstructions` and `dispatchTime`,
/// capped by what is left of the budget around it. A trip ends the innermost budget; the code
/// around it goes on with what is left of its own.
///
/// The defaults (time and memory) cost scripts almost nothing: deadlines are enforced by a
/// watchdog thread. Instruction budgets are exact but need Lua's count hook, which makes every
/// Lua instruction slower (about 1.5-2x): they are off unless asked for.
public struct Limits: Sendable, Hashable {
    /// Lua instructions (and host work, in the same units) per top-level chunk, exact. Nil (the
    /// default): no limit.
    public var instructions: Int? = nil
    /// Wall-clock seconds per top-level chunk. Nil: none.
    public var time: Double? = 30
    /// Lua instructions per dispatch, within what is left of the enclosing budget, exact. Nil
    /// (the default): none (then only the enclosing budget bounds it).
    public var dispatchInstructions: Int? = nil
    /// Wall-clock seconds per dispatch, within what is left of the enclosing budget. Nil: none.
    public var dispatchTime: Double? = 5
    /// Bytes held on the scripts' behalf: the Lua heap and the host's own copies (node names,
    /// paths, registrations, traces). Nil: no limit.
    public var memory: Int? = 512 << 20

    /// Limits with the given bounds; nil for a bound means none. The defaults are 30 seconds
    /// per chunk, 5 per dispatch, 512 MiB of memory and no instruction budget.
    public init(
        instructions: Int? = nil, time: Double? = 30, memory: Int? = 512 << 20,
        dispatchInstructions: Int? = nil, dispatchTime: Double? = 5
    ) {
        self.instructions = instructions
        self.time = time
        self.memory = memory
        self.dispatchInstructions = dispatchInstructions
        self.dispatchTime = dispatchTime
    }

    /// No limits at all, for trusted code.
    public static let none = Limits(instructions: nil, time: nil, memory: nil, dispatchInstructions: nil, dispatchTime: nil)

    /// Whether instructions are counted (the count hook is needed for them).
    var countsInstructions: Bool { instructions != nil || dispatchInstructions != nil }

    /// Whether time is bounded (the watchdog enforces it; the count hook where it cannot).
    var hasTime: Bool { time != nil || dispatchTime != nil }
}

/// Which standard libraries scripts get.
public enum Libraries: Sendable, Hashable {
    /// The sandbox (contract §7): base, string, table, math, utf8, coroutine and `os.time`,
    /// `os.clock`, `os.date`; text-only `load`; `require` of Lua source from the script's
    /// folder and the module paths; read-only standard library.
    case sandboxed
    /// Every standard library, unchanged: for trusted scripts (`luahier run --unsafe`).
    case full
}
