import CLuaHost
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import LuaHierarchy

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
            _ = release.wait(timeout: .now() + 600)   // a bound against hangs only
        }
        thread.start()
        defer { release.signal() }
        var sleeper = 0
        var state: Int32 = -1
        // Until it has reached the wait (a bound against hangs only).
        for _ in 0..<600_000 {
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

    /// A shadow candidate's state (a background pool's) stuck inside one C call is left there:
    /// the watchdog ended the whole process for it, the live server with it (an attacker's
    /// find, with a rehash of colliding keys). Here the call is a blocking open of a FIFO no one
    /// writes (the full libraries); once the watchdog has found it stuck and spared the
    /// process, the FIFO is written, the call returns, and the dispatch ends at its limit.
    ///
    /// The state runs under SCHED_IDLE: on a loaded machine its 0.1 s can pass before it
    /// reaches the open, and the dispatch ends there, never stuck. Such a dispatch answers
    /// with no sparing counted (nothing opened the FIFO to write, so the open cannot have
    /// returned), and is sent again: only one that reached the open can be stuck.
    @Test func aCandidatesStateStuckInOneCCallDoesNotEndTheProcess() async throws {
        let fifo = "/tmp/lh-stuck-\(UUID().uuidString.prefix(8))"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        var options = RulesPool.Options(rulesSource: """
            hier.root:child("app"):receiveEvent("Wait", function()
              local f = io.open("\(fifo)") f:read() f:close() return "handled"
            end)
            """)
        options.background = true
        options.hierarchy.libraries = .full
        options.hierarchy.limits.dispatchTime = 0.1
        options.hierarchy.limits.time = nil   // the rules' load, on a SCHED_IDLE thread: no clock
        let pool = try RulesPool(options: options)
        let spared = luahier_watchdog_spared()
        let answer = Task {
            while true {
                let reply = try await pool.dispatch(#"{"at": "/app", "event": "Wait"}"#)
                // Ended before the open (at its limit, with nothing spared): again. Any other
                // answer is the test's to judge; a cancelled test stops sending.
                let early = luahier_watchdog_spared() == spared && reply.value["value"]?["type"]?.stringValue == "TimeLimitExceeded"
                if !early || Task.isCancelled { return reply }
            }
        }
        defer { answer.cancel() }
        // Until the watchdog has judged it stuck (past its 5 s) and let the process go on: an
        // event the watchdog counts; the bound only ends a hang.
        for _ in 0..<60_000 where luahier_watchdog_spared() == spared {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(luahier_watchdog_spared() > spared)
        // The reader is in its open (that is what was stuck): a write end that does not wait
        // opens now; with no reader, it fails at once (ENXIO) instead of blocking the test.
        // The bound ends a hang only.
        var writer: Int32 = -1
        for _ in 0..<60_000 {
            writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(writer >= 0, "no reader on the FIFO")
        guard writer >= 0 else { return }
        _ = "go\n".withCString { write(writer, $0, 3) }
        close(writer)
        let outcome = try await answer.value.value
        #expect(outcome["value"]?["type"]?.stringValue == "TimeLimitExceeded", "\(outcome)")
        await pool.shutDown()
    }
}
