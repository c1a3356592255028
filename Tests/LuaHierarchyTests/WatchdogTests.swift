import CLuaHost
import Dispatch
import Foundation
import Synchronization
import Testing

/// The watchdog's rule for a state stuck inside one C call (Sources/CLuaHost/watchdog.c):
/// past its deadline with no progress for LUAHIER_STUCK_SECONDS, the process ends. Starved of
/// CPU is not stuck: a shadow candidate's thread (SCHED_IDLE) on busy CPUs took a C call of
/// 0.1 s for one stuck for 5, and the watchdog ended the live server (an attacker's find).
@Suite("The watchdog")
struct WatchdogTests {
    static func threadID() -> Int { luahier_thread_id() }

    @Test func aThreadWaitingForACPUIsNotStuckUntilItHasRunFiveSeconds() {
        let bound = Double(LUAHIER_STUCK_SECONDS)
        // Within the bound: never stuck.
        #expect(luahier_watchdog_stuck(bound - 0.1, bound - 0.1, 1) == 0)
        // Running all the while: stuck, as before.
        #expect(luahier_watchdog_stuck(bound + 0.1, bound + 0.1, 1) == 1)
        // Runnable but given little CPU (starved): not stuck, however long the wall time.
        #expect(luahier_watchdog_stuck(600, 0.5, 1) == 0)
        // Asleep inside the call (a blocking call of the full libraries): the wall time decides.
        #expect(luahier_watchdog_stuck(bound + 0.1, 0, 0) == 1)
        // Not known: the wall time decides.
        #expect(luahier_watchdog_stuck(bound + 0.1, -1, 1) == 1)
        #expect(luahier_watchdog_stuck(bound + 0.1, 0.5, -1) == 1)
    }

    /// The two readings the rule takes, of another thread of the process by its id.
    @Test func aThreadsStateAndCPUTimeAreRead() async throws {
        let me = Self.threadID()
        #expect(luahier_thread_runnable(me) == 1, "the calling thread is running")
        let before = luahier_thread_cputime(me)
        var spin = 0.0
        for index in 0..<2_000_000 { spin += Double(index).squareRoot() }
        #expect(spin > 0)
        #expect(before >= 0 && luahier_thread_cputime(me) > before)

        // A thread asleep on a semaphore reads as not runnable.
        let asleep = Mutex(0)
        let release = DispatchSemaphore(value: 0)
        let thread = Thread {
            asleep.withLock { $0 = Self.threadID() }
            release.wait()
        }
        thread.start()
        defer { release.signal() }
        var sleeper = 0
        var state: Int32 = -1
        // Until it has reached the wait (a bound against hangs only).
        for _ in 0..<60_000 {
            sleeper = asleep.withLock { $0 }
            if sleeper != 0 {
                state = luahier_thread_runnable(sleeper)
                if state == 0 { break }
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(state == 0, "thread \(sleeper) asleep")
        #expect(luahier_thread_cputime(sleeper) >= 0)
        #expect(luahier_thread_runnable(Int.max) == -1, "no such thread")
    }
}
