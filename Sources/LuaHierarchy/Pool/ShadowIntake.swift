import Dispatch
import Synchronization

/// How live requests reach a candidate revision (`RulesPool.shadow`) with no live thread ever
/// waiting on a thread of the candidate's. The candidate's threads run under SCHED_IDLE, so
/// one can be stopped for long while it holds a lock; a live thread that then asked for the
/// same lock would wait as long. So `offer` only *tries* the intake's lock, and hands the
/// request over there; a thread of the intake's own, also in the background, moves it on to
/// the candidate's queue. An offer that finds the lock held `tries` times in a row is refused,
/// and the caller counts the request as skipped.
package final class ShadowIntake: @unchecked Sendable {
    /// A sampled request, its live answers, and who is told what the candidate made of it.
    package struct Offer: Sendable {
        package var body: [UInt8]
        package var batch: Bool
        package var requestID: String?
        package var live: [RulesPool.LiveAnswer]
        package var liveRevision: Revision
        package var log: DecisionLog?
        /// Told on a thread of the candidate's (or the intake's): nil when it was not answered.
        package var finish: @Sendable (RulesPool.ShadowResult?) -> Void

        package init(
            body: [UInt8], batch: Bool, requestID: String?, live: [RulesPool.LiveAnswer], liveRevision: Revision,
            log: DecisionLog?, finish: @escaping @Sendable (RulesPool.ShadowResult?) -> Void
        ) {
            (self.body, self.batch, self.requestID, self.live, self.liveRevision, self.log, self.finish) =
                (body, batch, requestID, live, liveRevision, log, finish)
        }
    }

    /// Tries of the lock per offer before it is refused.
    static let tries = 64
    private let pool: RulesPool
    private let queue = Mutex<[Offer]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let closing = Atomic<Bool>(false)

    /// An intake into `pool`, the candidate's, with its thread started.
    package init(pool: RulesPool) {
        self.pool = pool
        if !LargeStack.detached(size: 256 << 10, { [self] in feed() }) {
            closing.store(true, ordering: .releasing)
        }
    }

    /// Hands `offer` over without waiting: false when the intake's lock was held, or it is
    /// closed (nothing was taken, and `finish` is not called).
    package func offer(_ offer: Offer) -> Bool {
        guard !closing.load(ordering: .acquiring) else { return false }
        // A few tries: the lock is held for a moment by another live thread's offer, or by
        // the intake's thread taking the queue; never waited for.
        var wasEmpty: Bool?
        for _ in 0..<Self.tries where wasEmpty == nil {
            wasEmpty = queue.withLockIfAvailable { queued in
                defer { queued.append(offer) }
                return queued.isEmpty
            }
        }
        guard let wasEmpty else { return false }
        // The thread drains the whole queue when woken: a wake per queue that was empty.
        if wasEmpty { wake.signal() }
        return true
    }

    /// Takes no more offers; those taken go on to the candidate (which answers them, or
    /// refuses them once shut down). Returns at once.
    package func close() {
        closing.store(true, ordering: .releasing)
        wake.signal()
    }

    private func feed() {
        ThreadPriority.background()
        while true {
            wake.wait()
            while true {
                let offers = queue.withLock { queued -> [Offer] in
                    defer { queued = [] }
                    return queued
                }
                if offers.isEmpty { break }
                for offer in offers {
                    pool.shadow(
                        offer.body, batch: offer.batch, requestID: offer.requestID, live: offer.live,
                        liveRevision: offer.liveRevision, log: offer.log, finish: offer.finish)
                }
            }
            if closing.load(ordering: .acquiring) {
                // Offers that came in as it closed: told they were not answered.
                for offer in queue.withLock({ queued -> [Offer] in defer { queued = [] }; return queued }) { offer.finish(nil) }
                return
            }
        }
    }
}
