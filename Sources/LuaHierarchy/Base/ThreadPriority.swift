#if canImport(Glibc)
import Glibc
#endif

/// The CPU priority of the calling thread.
enum ThreadPriority {
    /// Puts the calling thread under SCHED_IDLE (Linux): it runs only on a CPU nothing else
    /// wants, and any other thread that wakes takes the CPU from it at once. For the states of
    /// a shadow revision, which must never slow the live requests down. Nice 19 is not
    /// enough: a thread of the lowest nice value still took a fair share of the CPU from live
    /// requests under load (docs/performance.md, "A shadow revision"). Where the policy is
    /// refused, nice 19; elsewhere than Linux, nothing.
    static func background() {
        #if os(Linux)
        var parameters = sched_param()
        parameters.sched_priority = 0
        // SCHED_IDLE (<sched.h>, declared only under _GNU_SOURCE, so not imported).
        let schedulerIdle: Int32 = 5
        if pthread_setschedparam(pthread_self(), schedulerIdle, &parameters) != 0 {
            // The nice value is the thread's own on Linux: 0 for "who" is this thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        }
        #endif
    }
}
