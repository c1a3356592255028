#if Server
import Synchronization

/// Bytes the server holds for its clients, summed across connections, against the most it may
/// hold: the request bodies being read (`--max-bodies-in-flight`) and the answers waiting for
/// their clients to read them (`--max-answers-unsent`).
///
/// Each connection's share is bounded on its own (`--max-body`; `--idle-timeout` for a client
/// that reads nothing), but not their sum, which `--max-connections` clients could raise to
/// that many times the share. A body takes from its budget as its bytes arrive (never what its
/// `Content-Length` promises: a promise costs a client nothing to make), as much as its
/// buffer's capacity, and gives it back once its request is answered; an answer takes its
/// bytes when made, and gives them back as they are handed to the connection.
final class ByteBudget: Sendable {
    /// The most the budget's holders may take, in bytes.
    let limit: Int
    private let held = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` more; false, taking nothing and counting a refusal, when that would pass
    /// the limit.
    func take(_ bytes: Int) -> Bool {
        var current = held.load(ordering: .relaxed)
        while true {
            guard bytes <= limit - current else {
                refusedCount.add(1, ordering: .relaxed)
                return false
            }
            let (exchanged, found) = held.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = found
        }
    }

    /// Takes `bytes` whatever is held: what is already made (an answer) cannot be refused.
    func add(_ bytes: Int) {
        held.add(bytes, ordering: .relaxed)
    }

    /// Whether the holders hold the limit or more: a request that would add to them is
    /// refused (and counted) before any rule runs.
    func isSpent() -> Bool {
        guard held.load(ordering: .relaxed) >= limit else { return false }
        refusedCount.add(1, ordering: .relaxed)
        return true
    }

    /// Gives back `bytes` taken.
    func give(_ bytes: Int) {
        guard bytes > 0 else { return }
        held.subtract(bytes, ordering: .relaxed)
    }

    /// The capacity a body's buffer grows to when it must hold `bytes`: the next power of two,
    /// as `ByteBuffer` allocates. What a body takes is its buffer's capacity, not its bytes.
    /// (Past 2⁶², which no buffer reaches, it is `Int.max`: the next power would not fit.)
    static func capacity(for bytes: Int) -> Int {
        guard bytes <= 1 << 62 else { return .max }
        return bytes <= 1 ? bytes : 1 << (Int.bitWidth - (bytes - 1).leadingZeroBitCount)
    }

    /// The bytes taken now.
    var heldBytes: Int { held.load(ordering: .relaxed) }

    /// Refusals so far: one per request answered 503 for this budget.
    var refusals: Int { refusedCount.load(ordering: .relaxed) }
}
#endif
