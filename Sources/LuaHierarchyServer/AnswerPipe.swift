#if Server
internal import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A batch's outcome lines on their way from the state's thread to the client, bounded.
///
/// The state writes an answer with `push`; the response body reads them as one buffer at a
/// time, as fast as the client takes them (the server writes the next only once the last is
/// on its way). While more than `limit` bytes wait, `push` waits too, so a client that reads
/// slowly slows its batch down instead of piling answers up in memory: a batch holds at most
/// `limit` bytes and one answer. A client that takes nothing for `patience` seconds is given
/// up on: `push` returns false (the batch stops there, and its state is free again) and the
/// body ends with an error, so the connection is closed rather than ended as if complete.
/// While other requests wait for a state, the patience is `busyPatience` (1 s): a client that
/// stops reading cannot keep a state from them for long.
final class AnswerPipe: AsyncSequence, @unchecked Sendable {
    typealias Element = ByteBuffer

    struct Stalled: Error, CustomStringConvertible {
        var description: String { "the client stopped reading the batch's answers" }
    }

    private let limit: Int
    private let patience: Double
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`.
    private var waiting: [UInt8] = []
    private var finished = false
    private var readerGone = false
    private var stalled = false
    private var reader: CheckedContinuation<Void, Never>?
    private var lastTaken: Double
    private var anyTaken = false
    private var readAll = false
    private var ended = false
    private let onEnd: @Sendable (_ readAll: Bool) -> Void
    private let othersWaiting: @Sendable () -> Bool
    static let busyPatience = 1.0
    /// A run of answers written at once: this many bytes, or what came within this time of
    /// the last write.
    static let runBytes = 16 << 10
    static let runTime = 0.002

    /// `othersWaiting` says whether requests wait for a state; `onEnd` is told once, when the
    /// reading ends, whether every answer was read.
    init(
        limit: Int, patience: Double, othersWaiting: @escaping @Sendable () -> Bool = { false },
        onEnd: @escaping @Sendable (_ readAll: Bool) -> Void = { _ in }
    ) {
        self.limit = limit
        self.patience = patience
        self.othersWaiting = othersWaiting
        self.onEnd = onEnd
        lastTaken = Self.now
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        if !ended { onEnd(false) }   // never read: the client went before the answers began
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    // MARK: The state's side

    /// Queues `answer`, then waits while more than `limit` bytes wait for the client. False
    /// when no one will read it: the reader went away, or took nothing for `patience` seconds.
    func push(_ answer: UnsafeRawBufferPointer) -> Bool {
        pthread_mutex_lock(mutex)
        if readerGone || stalled {
            pthread_mutex_unlock(mutex)
            return false
        }
        // As typed bytes: one memcpy (a raw buffer is appended byte by byte).
        answer.withMemoryRebound(to: UInt8.self) { waiting.append(contentsOf: $0) }
        // The reader waits: wake it (outside the lock) once a run of answers is worth a
        // write, or at once when the last write was a while ago (a slow batch's answers are
        // not held back). One write per small answer kept the event loop from accepting
        // connections while a batch of 500,000 short invalid lines streamed.
        if let wake = reader, !anyTaken || waiting.count >= Self.runBytes || Self.now - lastTaken >= Self.runTime {
            reader = nil
            pthread_mutex_unlock(mutex)
            wake.resume()
            pthread_mutex_lock(mutex)
        }
        let waitingSince = Self.now
        while waiting.count > limit && !readerGone && !stalled {
            // Patience runs from the later of the reader's last take and this wait's start, and
            // is short while others wait for a state (looked at every quarter second).
            let contended = othersWaiting()
            let giveUpAt = Swift.max(lastTaken, waitingSince) + (contended ? Swift.min(patience, Self.busyPatience) : patience)
            let now = Self.now
            if now >= giveUpAt {
                stalled = true
                break
            }
            let wakeAt = Swift.min(giveUpAt, now + 0.25)
            var time = timespec(tv_sec: Int(wakeAt), tv_nsec: Int((wakeAt - wakeAt.rounded(.down)) * 1e9))
            pthread_cond_timedwait(condition, mutex, &time)
        }
        let kept = !(readerGone || stalled)
        let wake = stalled ? reader : nil
        if wake != nil { reader = nil }
        pthread_mutex_unlock(mutex)
        wake?.resume()   // to find the batch given up on
        return kept
    }

    /// No more answers: the reader ends once it took what waits.
    func finish() {
        pthread_mutex_lock(mutex)
        finished = true
        let wake = reader
        reader = nil
        pthread_mutex_unlock(mutex)
        wake?.resume()
    }

    /// The answers will not be read (the batch was refused before any): `onEnd` is not told.
    func discard() {
        pthread_mutex_lock(mutex)
        ended = true
        pthread_mutex_unlock(mutex)
    }

    /// The client took nothing for `patience` seconds, and the batch was given up on.
    var gaveUp: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return stalled
    }

    // MARK: The reader's side

    /// Everything waiting, as one buffer; nil at the end; throws `Stalled` if the batch was
    /// given up on.
    fileprivate func next() async throws -> ByteBuffer? {
        while true {
            pthread_mutex_lock(mutex)
            if stalled {
                pthread_mutex_unlock(mutex)
                throw Stalled()
            }
            if !waiting.isEmpty {
                let buffer = ByteBuffer(bytes: waiting)
                waiting.removeAll(keepingCapacity: waiting.capacity <= 2 * limit)
                lastTaken = Self.now
                anyTaken = true
                pthread_cond_broadcast(condition)
                pthread_mutex_unlock(mutex)
                return buffer
            }
            if finished || readerGone {
                if finished && !readerGone { readAll = true }
                pthread_mutex_unlock(mutex)
                return nil
            }
            pthread_mutex_unlock(mutex)
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    pthread_mutex_lock(mutex)
                    if waiting.isEmpty && !finished && !readerGone && !stalled {
                        reader = continuation
                        pthread_mutex_unlock(mutex)
                    } else {
                        pthread_mutex_unlock(mutex)
                        continuation.resume()
                    }
                }
            } onCancel: {
                self.goAway()
            }
        }
    }

    /// The reader stopped reading (its task was cancelled, or it dropped its iterator because
    /// the client went away): the state stops at its next answer.
    fileprivate func goAway() {
        pthread_mutex_lock(mutex)
        readerGone = true
        let wake = reader
        reader = nil
        let endsNow = !ended
        ended = true
        let wasReadAll = readAll
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
        wake?.resume()
        if endsNow { onEnd(wasReadAll) }
    }

    private static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let reading: Reading

        mutating func next() async throws -> ByteBuffer? {
            try await reading.pipe.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reading: Reading(pipe: self))
    }

    /// Held by the iterator: once it is let go, whether at the end or because writing to the
    /// client failed, no one reads any more.
    fileprivate final class Reading: @unchecked Sendable {
        let pipe: AnswerPipe
        init(pipe: AnswerPipe) { self.pipe = pipe }
        deinit { pipe.goAway() }
    }
}
#endif
