import Dispatch
import Logging
import Synchronization

/// Work that a candidate revision's threads hand to what the live threads share (the decision
/// log's buffer, the log handler's printer), done for them by a thread at normal priority.
///
/// A candidate's threads run under SCHED_IDLE (`ThreadPriority.background()`): one may be
/// stopped for long, on a busy machine, at any instruction, also while it holds a lock. Had it
/// held a lock the live threads take, they would wait as long: priority inversion (seen in the
/// code by an independent attack). So a background thread takes only this relay's lock, which
/// no live thread takes; the relay's thread then takes the shared lock at the live threads'
/// own priority. A thread cannot raise itself back out of SCHED_IDLE without CAP_SYS_NICE, so
/// the relay is started by a thread that never left the normal priority (the one making the
/// candidate): a thread inherits its maker's policy.
///
/// At most `capacity` pieces of work wait; past it, `send` refuses and the caller counts the
/// loss, as the shadow's other queues do.
package final class BackgroundRelay: @unchecked Sendable {
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let closing = Atomic<Bool>(false)
    private let capacity: Int
    private var thread: LargeStack.Joinable?

    /// A relay with its thread started, at the calling thread's priority (call it from a live
    /// thread); nil when no thread could be started.
    package init?(capacity: Int = 4096) {
        self.capacity = capacity
        // The thread holds the relay until `close` ends it.
        guard let started = LargeStack.spawn(size: 128 << 10, { [self] in run() }) else { return nil }
        thread = started
    }

    /// Queues `work` for the relay's thread; false (nothing queued) when `capacity` pieces
    /// wait already, or the relay is closed. Never waits for anything but the relay's lock.
    package func send(_ work: @escaping @Sendable () -> Void) -> Bool {
        guard !closing.load(ordering: .acquiring) else { return false }
        let wasEmpty: Bool? = queue.withLock { queued in
            guard queued.count < capacity else { return nil }
            defer { queued.append(work) }
            return queued.isEmpty
        }
        guard let wasEmpty else { return false }
        // The thread runs the whole queue when woken: a wake per queue that was empty.
        if wasEmpty { wake.signal() }
        return true
    }

    /// Does what was queued, then stops the thread and waits for it (from a live thread: the
    /// relay's thread is one too).
    package func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        thread?.join()
        thread = nil
    }

    private func run() {
        while true {
            wake.wait()
            while true {
                let work = queue.withLock { queued -> [@Sendable () -> Void] in
                    defer { queued = [] }
                    return queued
                }
                if work.isEmpty { break }
                for piece in work { piece() }
            }
            if closing.load(ordering: .acquiring) { return }
        }
    }

    /// `base` (a live handler), written to through this relay: for the logger a candidate's
    /// states log to. An event that finds the relay full is dropped.
    package func logger(relaying base: Logger) -> Logger {
        Logger(label: base.label) { [self] _ in RelayedLogHandler(base: base.handler, relay: self) }
    }
}

/// A log handler whose events reach `base` on the relay's thread (`BackgroundRelay`).
struct RelayedLogHandler: LogHandler {
    var base: any LogHandler
    let relay: BackgroundRelay

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        _ = relay.send { [base] in base.log(event: event) }
    }
}
