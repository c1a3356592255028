#if Server
import Synchronization

/// Requests to `/v1/dispatch` under way, and how those in flight at a shutdown ended: what
/// the server reports when it stops.
final class InFlight: Sendable {
    private struct Counts {
        var active = 0
        var stopping = false
        /// Since the stop: requests that were (or came) in flight, and how they ended.
        var inFlight = 0, answered = 0, clientsGone = 0
    }

    private let counts = Mutex(Counts())

    /// A request begins (its body is read).
    func begin() {
        counts.withLock { counts in
            counts.active += 1
            if counts.stopping { counts.inFlight += 1 }
        }
    }

    /// A request ended: answered in full, or its client went away before it was.
    func end(answered: Bool) {
        counts.withLock { counts in
            counts.active -= 1
            guard counts.stopping else { return }
            if answered { counts.answered += 1 } else { counts.clientsGone += 1 }
        }
    }

    /// The stop came: from here on, endings are counted.
    func stop() {
        counts.withLock { counts in
            counts.stopping = true
            counts.inFlight = counts.active
        }
    }

    /// How the requests in flight since the stop ended so far (those still under way are cut off).
    func report(signal: Int32?, graceRanOut: Bool) -> RulesServer.Stopped {
        counts.withLock { counts in
            RulesServer.Stopped(
                signal: signal, inFlight: counts.inFlight, answered: counts.answered, clientsGone: counts.clientsGone,
                cutOff: counts.active, graceRanOut: graceRanOut)
        }
    }
}
#endif
