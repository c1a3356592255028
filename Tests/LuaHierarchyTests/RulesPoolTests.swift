import Foundation
import Synchronization
import Testing
@testable import LuaHierarchy

/// The pool of states as the library's async API (contract §7: a pool serves many cores; §9).
@Suite("RulesPool (contract §9)")
struct RulesPoolTests {
    /// A folder with `rules.lua` (requiring `version.lua`) at `version`.
    static func folder(version: Int) throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp/lhpool-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try write(version: version, in: folder)
        return folder
    }

    static func write(version: Int, in folder: URL, rules: String? = nil) throws {
        try (rules ?? """
            local version = require("version")
            local app = hier.root:child("app")
            app:receiveEvent("Ask", function(e) return {type = "Answer", version = version, n = e.n} end)
            """).write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        try "return \(version)\n".write(to: folder.appendingPathComponent("version.lua"), atomically: true, encoding: .utf8)
    }

    static func version(_ answer: RulesPool.Answer) -> Int64? {
        answer.value["value"]?["version"]?.integer
    }

    @Test func sha256MatchesTheStandardVectors() {
        for (text, digest) in [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
            (String(repeating: "a", count: 1000), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"),
        ] {
            var hash = ContentHash()
            hash.update(Array(text.utf8))
            #expect(hash.hexDigest() == digest, "\(text.prefix(10))")
        }
    }

    @Test func manyTasksShareThePoolAndEachGetsItsOwnAnswer() async throws {
        let folder = try Self.folder(version: 1)
        let pool = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path, workers: 3))
        #expect(pool.revision.number == 1)
        #expect(pool.revision.files.map { ($0 as NSString).lastPathComponent } == ["rules.lua", "version.lua"])
        let answers = try await withThrowingTaskGroup(of: (Int, RulesPool.Answer).self) { tasks in
            for n in 0..<200 {
                tasks.addTask { (n, try await pool.dispatch(#"{"at": "/app", "event": {"type": "Ask", "n": \#(n)}}"#)) }
            }
            return try await tasks.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 200)
        for (n, answer) in answers {
            #expect(answer.status == .unhandled)
            #expect(answer.value["value"]?["n"]?.integer == Int64(n))
            #expect(Self.version(answer) == 1)
            #expect(answer.value["revision"]?["hash"]?.stringValue == pool.revision.shortHash)
        }
        let invalid = try await pool.dispatch(#"{"at": "/none", "event": "Ask"}"#)
        #expect(invalid.status == .invalid)
        #expect(invalid.value["error"]?["where"]?.stringValue == "request:1")
        await pool.shutDown()
        await #expect(throws: RulesPool.Refusal.shutDown) { try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#) }
    }

    /// How a request's rules failed comes from the engine: a raise, a contract broken, a limit
    /// tripped count whether or not a responder caught them afterwards; an error a request
    /// carries in, or one a rule reports (or returns) of its own, never does, whatever its type
    /// says. Each line starts with none, in a batch too.
    @Test func ruleFailuresAreTheEnginesNotTheOutcomesText() async throws {
        var options = RulesPool.Options(rulesFile: "failures.lua")
        options.rulesSource = """
            local plain = hier.root:child("plain")
            plain:receiveEvent("Raise", function(e) local x = nil; return x.y end)
            plain:receiveEvent("Odd", function(e) return 42 end)
            plain:receiveEvent("OwnRaise", function(e) error({type = "TimeLimitExceeded", message = "a rule's own"}) end)
            plain:receiveEvent("OwnReturn", function(e) return {type = "InstructionLimitExceeded"} end)
            plain:receiveEvent("Spin", function(e) while true do end end)
            plain:receiveEvent("Fine", function(e) return "handled" end)
            local caught = hier.root:child("caught")
            caught:receiveEvent("Raise", function(e) local x = nil; return x.y end)
            caught:catchError("LuaError", function(err) return {type = "Recovered"} end)
            caught:receiveEvent("Recovered", function() return "handled" end)
            local publisher = hier.root:child("publisher")
            publisher:child("listener"):subscribe("Note", function(e) error("a subscriber fails") end)
            publisher:child("owner"):subscribe("Note", function(e) error({type = "OutOfStock"}) end)
            publisher:receiveEvent("Publish", function(e) publisher:publish({type = "Note"}, {to = "all"}) return "handled" end)
            """
        options.hierarchy.limits.dispatchInstructions = 100_000
        let pool = try RulesPool(options: options)
        let cases: [(String, LineStatus, RuleFailures)] = [
            (#"{"at": "/plain", "error": {"type": "TimeLimitExceeded", "message": "a client's"}}"#, .unhandled, []),
            (#"{"at": "/plain", "error": {"type": "LuaError"}}"#, .unhandled, []),
            (#"{"at": "/plain", "event": "Raise"}"#, .unhandled, .luaError),
            (#"{"at": "/plain", "event": "Fine"}"#, .handled, []),
            (#"{"at": "/plain", "event": "Odd"}"#, .unhandled, .responderContractError),
            (#"{"at": "/plain", "event": "OwnRaise"}"#, .unhandled, []),
            (#"{"at": "/plain", "event": "OwnReturn"}"#, .unhandled, []),
            (#"{"at": "/plain", "event": "Spin"}"#, .unhandled, .instructionLimitExceeded),
            (#"{"at": "/none", "event": "Spin"}"#, .invalid, []),
            (#"{"at": "/caught", "event": "Raise"}"#, .handled, .luaError),
            // A subscriber's raise (reported at its node, presented past the root) counts; one
            // of a rule's own type does not.
            (#"{"at": "/publisher", "event": "Publish"}"#, .handled, .luaError),
        ]
        for (request, status, failures) in cases {
            let answer = try await pool.dispatch(request)
            #expect(answer.status == status, "\(request): \(answer.text)")
            #expect(answer.ruleFailures == failures, "\(request): \(answer.ruleFailures.types)")
        }
        let batch = cases.map(\.0).joined(separator: "\n")
        let summary = try await pool.dispatchBatch(Array(batch.utf8)) { _ in true }
        #expect(summary.ruleFailures == ["LuaError": 3, "ResponderContractError": 1, "InstructionLimitExceeded": 1])
        #expect(RuleFailures([.timeLimitExceeded, .luaError]).types == ["LuaError", "TimeLimitExceeded"])
        await pool.shutDown()
    }

    /// Jobs are submitted straight from this thread (not from tasks, whose start and resumption
    /// wait for the shared executor, which other tests may hold). The one state is held busy
    /// by a job that waits for the test's word, so no clock decides which comes first.
    @Test func aWaitingRequestIsRefusedWhenItsWaitRunsOutNotWhenAStateFrees() throws {
        let folder = try Self.folder(version: 1)
        var options = RulesPool.Options(rulesFile: folder.appendingPathComponent("rules.lua").path)
        options.maxWait = 0.2
        let pool = try RulesPool(options: options)
        let busy = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), freed = DispatchSemaphore(value: 0)
        let refusal = DispatchSemaphore(value: 0)
        let refusedAt = Locked<Date?>(nil), ranAt = Locked<Date?>(nil)
        #expect(pool.submit(PoolJob(work: { _ in
            busy.signal()
            _ = release.wait(timeout: .now() + 600)   // a bound against hangs only
            freed.signal()
        })) == nil)
        #expect(busy.wait(timeout: .now() + 600) == .success)
        let waitsBefore = pool.statistics.waits   // (the busy job's own, if the state was not idle yet)
        let asked = Date()
        #expect(pool.submit(PoolJob(maxWait: options.maxWait, work: { _ in ranAt.mutate { $0 = Date() } },
                                    refused: { refusedAt.mutate { $0 = Date() }; refusal.signal() })) == nil)
        // It waits: counted as it was queued (the gauge, read now, would race its 0.2 s; it is
        // read in the next test, whose bound is an hour).
        #expect(pool.statistics.waits - waitsBefore == 1)
        // Refused once its wait ran out, while the state was still busy.
        #expect(refusal.wait(timeout: .now() + 600) == .success)
        let refused = try #require(refusedAt.value)
        #expect(refused.timeIntervalSince(asked) >= 0.19)
        // Overloaded (what /readyz reports) while the one state stays busy past the wait...
        #expect(pool.isOverloaded)
        release.signal()
        #expect(freed.wait(timeout: .now() + 600) == .success)
        // ...and no longer once it is back: the next job runs on it, and it comes back after.
        let ran = DispatchSemaphore(value: 0)
        #expect(pool.submit(PoolJob(work: { _ in ran.signal() })) == nil)
        #expect(ran.wait(timeout: .now() + 600) == .success)
        var looks = 0
        while pool.isOverloaded && looks < 600_000 {   // a bound against hangs only
            looks += 1
            usleep(1000)
        }
        #expect(!pool.isOverloaded)
        pool.shutDownBlocking()
        // Never run after: the state it waited for came free, and the pool has finished.
        #expect(ranAt.value == nil)
        #expect(pool.waiting == 0)
    }

    /// What a job holds (a batch's body, its lines) stands in for a `Sentinel` here. Behind a
    /// single busy state a request waits, and its wait bound (an hour) must not keep it once
    /// answered: before, the bound's timer held every such job (and its body) for `--max-wait`,
    /// and `serve --workers 1` grew with every batch. No clock: semaphores order the steps.
    @Test func aJobThatWaitedIsLetGoOnceAnsweredNotWhenItsWaitBoundPasses() throws {
        final class Sentinel: Sendable {}
        let folder = try Self.folder(version: 1)
        var options = RulesPool.Options(rulesFile: folder.appendingPathComponent("rules.lua").path)
        options.maxWait = 3600
        let pool = try RulesPool(options: options)
        let busy = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), after = DispatchSemaphore(value: 0)
        #expect(pool.submit(PoolJob(work: { _ in
            busy.signal()
            _ = release.wait(timeout: .now() + 600)   // a bound against hangs only
        })) == nil)
        #expect(busy.wait(timeout: .now() + 600) == .success)
        weak var held: Sentinel?
        do {
            let sentinel = Sentinel()
            held = sentinel
            #expect(pool.submit(PoolJob(maxWait: options.maxWait, work: { _ in withExtendedLifetime(sentinel) {} })) == nil)
            #expect(pool.waiting == 1)
        }
        // A job after it: once it runs, the state is done with the one that waited.
        #expect(pool.submit(PoolJob(work: { _ in after.signal() })) == nil)
        release.signal()
        #expect(after.wait(timeout: .now() + 600) == .success)
        #expect(held == nil, "the answered job is still held (by its wait bound's timer)")
        pool.shutDownBlocking()
    }

    @Test func aBatchAnswersTheLinesItsTimeBudgetLeavesNoTimeForWithoutRunningThem() async throws {
        let folder = try Self.folder(version: 1)
        try Self.write(version: 1, in: folder, rules: """
            local app = hier.root:child("app")
            ran = 0
            app:handleEvent("Slow", function(e)
              ran = ran + 1
              local start = os.clock()
              while os.clock() - start < e.seconds do end
              return "handled"
            end)
            app:receiveEvent("Count", function(e) return {type = "Count", ran = ran} end)
            """)
        var options = RulesPool.Options(rulesFile: folder.appendingPathComponent("rules.lua").path)
        options.batchTime = 0.5
        // The batch's budget alone: a line's own clock (5 s by default) must not end one that
        // a loaded machine runs slowly.
        options.hierarchy.limits = .none
        let pool = try RulesPool(options: options)
        let body = Array(String(repeating: #"{"at": "/app", "event": {"type": "Slow", "seconds": 0.2}}"# + "\n", count: 1000).utf8)
        let lines = Locked<[Value]>([])
        let times = Locked<[Double]>([])
        let firstAnswer = Locked<ContinuousClock.Instant?>(nil)
        let asked = ContinuousClock.now
        let summary = try await pool.dispatchBatch(body) { answer in
            let line = (try? JSON.parse(answer)) ?? .null
            firstAnswer.mutate { $0 = $0 ?? .now }
            lines.mutate { $0.append(line) }
            times.mutate { $0.append(LimitContainmentTests.threadCPUSeconds()) }
            return true
        }
        let answered = lines.value
        #expect(answered.count == 1000)
        // os.clock is the process's CPU time (other tests running at once speed it up): how
        // many lines ran varies, but the batch ends soon after its budget.
        let ran = answered.prefix { $0["status"]?.stringValue == "handled" }.count
        // The first line runs, unless a loaded machine began the batch on its state too late for
        // any: then its budget had passed by the first answer, seen from here (a few ms for the
        // budget's coarse clock).
        let late = firstAnswer.value.map { $0 - asked >= .seconds(0.45) } ?? false
        #expect(((late ? 0 : 1)..<1000).contains(ran), "late: \(late)")
        // The batch ends soon after its budget: from the first answer to the last, the state's
        // thread (which hands every answer over) spent little CPU time, which load does not
        // stretch as it does the wall clock.
        #expect(times.value.last! - times.value.first! < 10)
        #expect(answered.dropFirst(ran).allSatisfy { $0["error"]?["type"]?.stringValue == "BatchTimeLimitExceeded" })
        #expect(summary.outOfTime)
        #expect(summary.counts[.invalid] == 1000 - ran)
        // The lines refused were not run.
        #expect(try await pool.dispatch(#"{"at": "/app", "event": "Count"}"#).value["value"]?["ran"]?.integer == Int64(ran))
        await pool.shutDown()
    }

    /// `--watch` reloaded forever (16 GB at a 64M cap) once the rules file was swapped for a
    /// symlink to /dev/zero, and never picked up a good file written back. A reload reads
    /// regular files only, bounded by the cap: it fails at once, the running revision answers,
    /// and the next good file loads.
    @Test func aReloadOfAFileThatIsNotRegularFailsAndTheNextGoodOneLoads() async throws {
        let folder = try Self.folder(version: 1)
        let rules = folder.appendingPathComponent("rules.lua").path
        var options = RulesPool.Options(rulesFile: rules)
        options.hierarchy.limits.memory = 64 << 20
        let pool = try RulesPool(options: options)
        defer { pool.shutDownBlocking() }
        let first = pool.revision
        try FileManager.default.removeItem(atPath: rules)
        try FileManager.default.createSymbolicLink(atPath: rules, withDestinationPath: "/dev/zero")
        guard case .failed(let running, let message) = await pool.reload() else { Issue.record("the reload loaded"); return }
        #expect(running == first)
        #expect(message.contains("not a regular file (a character device)"), "\(message)")
        #expect(Self.version(try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#)) == 1)
        try FileManager.default.removeItem(atPath: rules)
        try Self.write(version: 2, in: folder)
        guard case .loaded(let second) = await pool.reload() else { Issue.record("the good file did not load"); return }
        #expect(second.number == 2)
        #expect(Self.version(try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#)) == 2)
    }

    @Test func aReloadSwapsInAWholeRevisionAndAFailedOneChangesNothing() async throws {
        let folder = try Self.folder(version: 1)
        let pool = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path, workers: 2))
        defer { pool.shutDownBlocking() }
        let first = pool.revision
        // A module changed: a new revision, whose hash covers the module.
        try Self.write(version: 2, in: folder)
        guard case .loaded(let second) = await pool.reload() else { Issue.record("no new revision"); return }
        #expect(second.number == 2 && second.hash != first.hash)
        #expect(Self.version(try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#)) == 2)
        // Nothing changed: the running revision stays, under its number.
        #expect(await pool.reload() == .unchanged(second))
        // A broken module: the failure is kept and the running revision answers.
        try "return (".write(to: folder.appendingPathComponent("version.lua"), atomically: true, encoding: .utf8)
        guard case .failed(let running, let message) = await pool.reload() else { Issue.record("the reload loaded"); return }
        #expect(running == second)
        #expect(message.contains("version.lua:1:"))
        #expect(pool.lastReloadFailure?.description.contains("version.lua:1:") == true)
        #expect(Self.version(try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#)) == 2)
        #expect(pool.statistics.failedReloads == 1 && pool.statistics.reloads == 1 && pool.statistics.unchangedReloads == 1)
        // Two pools on the same files have the same hash.
        try Self.write(version: 2, in: folder)
        let twin = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path))
        #expect(twin.revision.hash == second.hash)
        await twin.shutDown()
    }

    /// A module changed after the pool read it but before a watcher began watching is still a
    /// change: the watcher compares with the files as the running revision read them. (It once
    /// took its own first look from its thread, which a loaded machine can start late: a change
    /// in that gap became the baseline and was never reloaded.)
    @Test func aChangeBeforeTheWatcherStartsIsReloaded() throws {
        let folder = try Self.folder(version: 1)
        let pool = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path, workers: 1))
        defer { pool.shutDownBlocking() }
        try Self.write(version: 22, in: folder)
        let reloaded = DispatchSemaphore(value: 0)
        let results = Locked<[ReloadResult]>([])
        let watcher = RulesWatcher(pool: pool, files: true, hangUp: false, interval: 0.05) { result, _ in
            results.mutate { $0.append(result) }
            reloaded.signal()
        }
        defer { watcher.stop() }
        // The event itself, not a pause: the watcher reports its reload (the bound ends a hang only).
        #expect(reloaded.wait(timeout: .now() + 600) == .success)
        guard case .loaded(let revision)? = results.value.first else {
            Issue.record("not reloaded: \(results.value)")
            return
        }
        #expect(revision.number == 2)
    }

    @Test func everyStateOfARevisionLoadsTheTextTheFirstOneRead() throws {
        // The rules count how often each state read the module: a module that changes while
        // the states load cannot make them differ, because only the first reads the disk.
        let folder = try Self.folder(version: 1)
        let options = RulesPool.Options(rulesFile: folder.appendingPathComponent("rules.lua").path, workers: 4)
        let generation = try Generation(options: options, text: Array(try String(contentsOf: folder.appendingPathComponent("rules.lua"), encoding: .utf8).utf8), stamp: FileStamp(path: options.rulesFile), number: 1)
        defer {
            generation.retire()
            generation.join()
        }
        #expect(generation.revision.files.count == 2)
        // Changing the module now changes nothing in this generation's states.
        try "return 99\n".write(to: folder.appendingPathComponent("version.lua"), atomically: true, encoding: .utf8)
        let versions = Locked<[Int64]>([])
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            _ = generation.enqueue(PoolJob(work: { worker in
                let request = Array(#"{"at": "/app", "event": "Ask"}"#.utf8)
                _ = request.withUnsafeBytes { bytes in
                    worker.answer(bytes, lines: [.init(number: 1, start: 0, count: bytes.count, oversized: false)],
                                  held: worker.processor.outputCharge(), numbered: false) { answer, _, _ in
                        let value = try? JSON.parse(answer)
                        versions.mutate { $0.append(value?["value"]?["version"]?.integer ?? -1) }
                        return true
                    }
                }
                done.leave()
            }), maxWaiting: .max)
        }
        #expect(done.wait(timeout: .now() + 600) == .success)   // a bound against hangs only
        #expect(versions.value == Array(repeating: 1, count: 8))
    }
}

extension Value {
    var integer: Int64? {
        if case .int(let number) = self { return number }
        return nil
    }
}

/// A value shared between test threads (closures that escape cannot hold a `Mutex` itself).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value { mutex.withLock { $0 } }
    func mutate(_ body: (inout Value) -> Void) { mutex.withLock { body(&$0) } }
}

/// The pool as a typed engine for Swift (contract §10): rules as text, a per-state setup in Swift
/// that runs on every state of every revision, and `Value`s in, `Outcome`s out.
@Suite struct TypedPoolTests {
    static let rules = """
        local orders = hier.root:child("orders")
        orders:receiveEvent("Charge", function(e)
          if e.amount >= limit() then return {type = "NeedsReview", amount = e.amount} end
          return "handled"
        end)
        """

    static func options(workers: Int = 2) -> RulesPool.Options {
        var options = RulesPool.Options(rulesSource: rules, name: "orders.lua", workers: workers)
        options.setup = { hierarchy in
            // A host function the rules call as they run, and a Swift responder above them (a
            // setup's responders are registered before the rules': on the rules' own node they
            // would come first).
            hierarchy.register(function: "limit") { _ in 500 }
            hierarchy.root.handleEvent(.type("NeedsReview")) { _ in }
        }
        return options
    }

    @Test func swiftSetupRunsOnEveryStateAndValuesGoInOutcomesComeOut() async throws {
        let pool = try RulesPool(options: Self.options())
        defer { pool.shutDownBlocking() }
        // Many tasks at once: each state answers with the setup's responder and function.
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for amount in [100, 500.0, 900, 20] as [Value] {
                group.addTask { try await pool.trigger(["type": "Charge", "amount": amount], at: "/orders") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 4)
        #expect(outcomes.allSatisfy { $0.status == .handled && $0.revision == pool.revision })
        let reviewed = outcomes.filter { $0.value.typeName == "NeedsReview" }
        #expect(reviewed.count == 2)
        #expect(reviewed.allSatisfy { $0.by == "/" && $0.responder?.location.contains("RulesPoolTests.swift") == true })
        let error = try await pool.report(["type": "Refund", "message": "no"], at: "/orders")
        #expect(error.status == .unhandled && error.kind == .error)
        await #expect(throws: RulesPool.DispatchError.noSuchNode("/nowhere")) { try await pool.trigger("Charge", at: "/nowhere") }
    }

    /// A reload runs the setup on the new states too; a setup that throws fails the load and
    /// leaves the running revision answering.
    @Test func aReloadRunsTheSetupAgainAndASetupFailureKeepsTheRunningRevision() async throws {
        let folder = try RulesPoolTests.folder(version: 1)
        try TypedPoolTests.rules.write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        let runs = Counter()
        var options = Self.options(workers: 1)
        options.rulesSource = nil
        options.rulesFile = folder.appendingPathComponent("rules.lua").path
        options.setup = { hierarchy in
            let run = runs.next()
            if run == 3 { throw RulesPool.DispatchError.noSuchNode("setup failed on purpose") }
            hierarchy.register(function: "limit") { _ in .int(run == 1 ? 500 : 50) }
        }
        let pool = try RulesPool(options: options)
        defer { pool.shutDownBlocking() }
        #expect(try await pool.trigger(["type": "Charge", "amount": 100], at: "/orders").value.typeName == "Charge")
        try (TypedPoolTests.rules + "\n-- changed\n").write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        guard case .loaded(let second) = await pool.reload() else { Issue.record("no new revision"); return }
        let reviewed = try await pool.trigger(["type": "Charge", "amount": 100], at: "/orders")
        #expect(reviewed.value.typeName == "NeedsReview" && reviewed.revision == second)
        try (TypedPoolTests.rules + "\n-- changed again\n").write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        guard case .failed(let running, let message) = await pool.reload() else { Issue.record("the reload loaded"); return }
        #expect(running == second && message.contains("setup failed on purpose"))
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func next() -> Int { lock.lock(); defer { lock.unlock() }; count += 1; return count }
    }
}
