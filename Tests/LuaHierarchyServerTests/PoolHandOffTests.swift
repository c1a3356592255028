#if Server
import Foundation
import Synchronization
import Testing
@testable import LuaHierarchy

/// How a request gets to a state and back (the server's way in to the pool): the queue's
/// wake-ups and its wait bounds. Jobs are submitted straight from the test's thread, and
/// semaphores order the steps: no clock decides which comes first.
@Suite("Pool hand-off")
struct PoolHandOffTests {
    static func pool(workers: Int, maxWait: Double) throws -> RulesPool {
        let folder = URL(fileURLWithPath: "/tmp/lhhandoff-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("rules.lua")
        try #"hier.root:child("app"):receiveEvent("Ask", function(e) return {type = "Answer"} end)"#
            .write(to: file, atomically: true, encoding: .utf8)
        var options = RulesPool.Options(rulesFile: file.path)
        options.workers = workers
        options.maxWait = maxWait
        return try RulesPool(options: options)
    }

    /// Two jobs queued one after the other, to two idle states: each wakes a state of its
    /// own, and both run at once (each waits until the other has started).
    @Test func jobsQueuedTogetherRunAtOnceOnIdleStates() throws {
        let pool = try Self.pool(workers: 2, maxWait: 60)
        let started = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let together = Mutex(0)
        for (mine, other) in [(started.0, started.1), (started.1, started.0)] {
            #expect(pool.submit(PoolJob(work: { _ in
                mine.signal()
                if other.wait(timeout: .now() + 600) == .success {
                    other.signal()
                    together.withLock { $0 += 1 }
                }
            })) == nil)
        }
        pool.shutDownBlocking()
        #expect(together.withLock { $0 } == 2)
    }

    /// Jobs that wait behind a busy state are each refused once their own wait bound passes
    /// (one timer serves the queue), in the order they came; a job without a bound waits on,
    /// and runs when the state comes free.
    @Test func eachWaitingJobIsRefusedAtItsOwnBound() throws {
        let pool = try Self.pool(workers: 1, maxWait: 0.3)
        let busy = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let refusals = DispatchSemaphore(value: 0), ranUnbounded = DispatchSemaphore(value: 0)
        let refused = Mutex<[(Int, Date)]>([])
        let ranBounded = Mutex(false)
        #expect(pool.submit(PoolJob(work: { _ in
            busy.signal()
            _ = release.wait(timeout: .now() + 600)   // a bound against hangs only
        })) == nil)
        #expect(busy.wait(timeout: .now() + 600) == .success)
        // (The busy job itself waited if it came before the state was idle.)
        let waitsBefore = pool.statistics.waits
        // Bounds a tenth of a second apart, set by the jobs themselves, not by pauses between
        // their submissions.
        let bounds = [0.3, 0.4, 0.5]
        var asked: [Date] = []
        for number in 0..<3 {
            asked.append(Date())
            #expect(pool.submit(PoolJob(maxWait: bounds[number], work: { _ in ranBounded.withLock { $0 = true } }, refused: {
                refused.withLock { $0.append((number, Date())) }
                refusals.signal()
            })) == nil)
        }
        #expect(pool.submit(PoolJob(work: { _ in ranUnbounded.signal() })) == nil)
        // All four wait: counted as each was queued (the gauge, read now, would race the first
        // bound; it is read once the three are refused, and stays).
        #expect(pool.statistics.waits - waitsBefore == 4)
        for _ in 0..<3 { #expect(refusals.wait(timeout: .now() + 600) == .success) }
        let order = refused.withLock { $0 }
        #expect(order.map(\.0) == [0, 1, 2])
        for (number, at) in order {
            #expect(at.timeIntervalSince(asked[number]) >= bounds[number] - 0.01, "job \(number) refused early")
        }
        #expect(pool.waiting == 1)
        release.signal()
        #expect(ranUnbounded.wait(timeout: .now() + 600) == .success)
        pool.shutDownBlocking()
        #expect(!ranBounded.withLock { $0 })
        #expect(pool.waiting == 0)
    }
}
#endif
