import Foundation
import Testing

/// Runs a suite's tests on threads of their own (`TestThreads`), not on Swift concurrency's
/// cooperative pool.
///
/// Swift Testing calls a test that is not `async` on that pool, which has one thread per core:
/// two here. The tests of this target block while a `luahier` they started works (seconds,
/// at times a minute), so two of them at once left no thread for any `async` test in the
/// process: an in-process HTTP exchange of the server's tests was seen to wait 10 s for one,
/// run past its deadline and be sent again. On threads of their own they block only each
/// other, as many at once as before.
struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // Each test's scope, not the suite's: the suite's own scope runs no test body.
        guard !test.isSuite else { return try await function() }
        // A child task: enqueued on the executor it prefers, with the task's locals (the current
        // test) and its cancellation. A preference only steers where the runtime enqueues jobs:
        // in a CI run and in a full run here a test body still ran on the pool, so this thins the pool's
        // load but is not a guarantee, and no test asserts where a given body runs.
        try await withTaskExecutorPreference(TestThreads.shared) {
            async let body: Void = function()
            try await body
        }
    }
}

extension Trait where Self == OwnThreads {
    /// The suite's tests run on threads of their own, not on the cooperative pool (`OwnThreads`).
    static var ownThreads: Self { OwnThreads() }
}

/// A fixed set of threads, as many as the cores, that run the jobs given to them in turn: the
/// executor `OwnThreads` prefers.
final class TestThreads: TaskExecutor, @unchecked Sendable {
    static let shared = TestThreads(count: ProcessInfo.processInfo.activeProcessorCount)

    /// Guards `jobs`, and is signalled when one is added.
    private let added = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(count: Int) {
        for _ in 0..<max(count, 1) {
            Thread { [unowned self] in run() }.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        added.lock()
        jobs.append(job)
        added.signal()
        added.unlock()
    }

    private func run() {
        Thread.current.name = "test-thread"
        while true {
            added.lock()
            // Idle until a job comes, looking again each minute.
            while jobs.isEmpty { _ = added.wait(until: Date().addingTimeInterval(60)) }
            let job = jobs.removeFirst()
            added.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

@Suite("Tests of the built binary run on threads of their own", .ownThreads)
struct OwnThreadsTests {
    /// Every suite of this target is `.ownThreads`: one left out would take a thread of the
    /// cooperative pool for as long as its tests block.
    @Test func everySuiteOfThisTargetRunsOnItsOwnThreads() throws {
        var missing: [String] = []
        for file in try ArchitectureTests.swiftFiles(under: "Tests/luahierTests") {
            for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.hasPrefix("@Suite") && !line.contains(".ownThreads") {
                missing.append("\(file.path):\(number + 1): \(line)")
            }
        }
        #expect(missing.isEmpty, "\(missing.joined(separator: "\n"))")
    }
}
