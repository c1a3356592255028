#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with one condition variable: the pipeline's only synchronisation.
final class Monitor: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` with the lock let go (from inside `locked`), and takes it again.
    func unlocked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_unlock(mutex)
        defer { pthread_mutex_lock(mutex) }
        return try body()
    }

    /// Waits (the lock held, as from inside `locked`) until `broadcast`.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits (the lock held) until `broadcast` or until `deadline` (CLOCK_REALTIME seconds).
    func wait(until deadline: Double) {
        var time = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - deadline.rounded(.down)) * 1e9))
        pthread_cond_timedwait(condition, mutex, &time)
    }

    func broadcast() { pthread_cond_broadcast(condition) }

    /// Wakes one waiter (the lock held): for a condition only interchangeable waiters wait on.
    func signal() { pthread_cond_signal(condition) }

    /// CLOCK_REALTIME in seconds, the clock `wait(until:)` reads.
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}
