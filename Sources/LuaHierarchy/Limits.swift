/// The bounds a hierarchy's Lua host enforces (SPEC §7). Each one trips as a clear reported
/// error that ends the dispatch (or fails the chunk) and leaves the state usable.
public struct Limits: Sendable, Hashable {
    /// Lua instructions per top-level entry: a chunk run from the host, or a dispatch started
    /// from Swift. Dispatches nested inside it share its budget. Nil: no limit.
    public var instructions: Int? = 1_000_000_000
    /// Wall-clock seconds per top-level entry, checked every 1,000 instructions. Nil: none.
    public var time: Double? = 30
    /// Bytes the Lua state may hold. Nil: no limit.
    public var memory: Int? = 512 << 20

    public init(instructions: Int? = 1_000_000_000, time: Double? = 30, memory: Int? = 512 << 20) {
        self.instructions = instructions
        self.time = time
        self.memory = memory
    }

    /// No limits at all, for trusted code.
    public static let none = Limits(instructions: nil, time: nil, memory: nil)
}

/// Which standard libraries scripts get.
public enum Libraries: Sendable, Hashable {
    /// The sandbox (SPEC §7): base, string, table, math, utf8, coroutine and `os.time`,
    /// `os.clock`, `os.date`; text-only `load`; `require` of Lua source from the script's
    /// folder and the module paths; read-only standard library.
    case sandboxed
    /// Every standard library, unchanged: for trusted scripts (`luahier run --unsafe`).
    case full
}
