#if Server
import Synchronization

/// The bytes of request bodies the server holds, summed across its connections, against the
/// most it may hold (`RulesServer.Options.maxBodiesInFlightBytes`, `--max-bodies-in-flight`).
///
/// `--max-body` bounds one body and `--idle-timeout` how long it may take to come; neither
/// bounds their sum, which clients that each send all but a body's last byte can raise to
/// `--max-connections` × `--max-body`. A body takes from the budget as its bytes arrive (not
/// as its `Content-Length` promises: a promise costs a client nothing to make), as much as its
/// buffer's capacity, and gives it back once its request is answered; a part that would pass
/// the limit is refused, and its request answered 503 at once.
final class BodyBudget: Sendable {
    /// The most the bodies in flight may hold, in bytes.
    let limit: Int
    private let held = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` more for a body; false, taking nothing, when that would pass the limit.
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

    /// Gives back `bytes` a body took.
    func give(_ bytes: Int) {
        guard bytes > 0 else { return }
        held.subtract(bytes, ordering: .relaxed)
    }

    /// The capacity a body's buffer grows to when it must hold `bytes`: the next power of two,
    /// as `ByteBuffer` allocates. What a body takes is its buffer's capacity, not its bytes.
    static func capacity(for bytes: Int) -> Int {
        bytes <= 1 ? bytes : 1 << (Int.bitWidth - (bytes - 1).leadingZeroBitCount)
    }

    /// The bytes taken now.
    var heldBytes: Int { held.load(ordering: .relaxed) }

    /// Parts refused so far: one per request answered 503 for it.
    var refusals: Int { refusedCount.load(ordering: .relaxed) }
}
#endif
