import Dispatch
import Foundation
import Logging
import Synchronization
import Testing
@testable import LuaHierarchy

#if canImport(Glibc)
import Glibc
#endif

/// A candidate revision's threads (SCHED_IDLE) never hold a lock the live threads take: what
/// they hand to the decision log and the log handler goes through a `BackgroundRelay`, whose
/// thread takes those locks at the live threads' priority (a priority inversion an
/// independent attack saw in the code).
@Suite("The background relay")
struct BackgroundRelayTests {
    /// Holds the relay's thread inside a piece of work until `open()`.
    final class Hold: Sendable {
        private let entered = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)

        func block(_ relay: BackgroundRelay) -> Bool {
            guard relay.send({ [self] in entered.signal(); _ = released.wait(timeout: .now() + 600) }) else { return false }
            return entered.wait(timeout: .now() + 60) == .success   // a bound against hangs only
        }

        func open() { released.signal() }
    }

    /// A shadow record is taken into the log by the relay's thread, never by the candidate's:
    /// while the relay's thread is held, the record waits in the relay, and the live side's
    /// records go on being logged.
    @Test func aShadowRecordReachesTheLogOnTheRelaysThread() throws {
        let sink = DecisionLogTests.MemorySink()
        let log = DecisionLog(sink: sink)
        let relay = try #require(BackgroundRelay())
        let hold = Hold()
        #expect(hold.block(relay))
        log.submitShadow(Array(#"{"source":"shadow"}"#.utf8) + [10], relay: relay)
        log.submit(Array(#"{"source":"serve"}"#.utf8) + [10])
        #expect(log.flush())
        #expect(sink.texts == [#"{"source":"serve"}"# + "\n"], "the shadow record is still in the relay")
        hold.open()
        relay.close()
        #expect(log.flush())
        #expect(sink.texts.count == 2 && sink.texts[1].contains("shadow"))
        log.close()
    }

    /// The relay holds at most its capacity; a shadow record it refuses is counted as one
    /// past the shadow's share, without the log's lock.
    @Test func aFullRelayRefusesAndTheLogCountsIt() throws {
        let sink = DecisionLogTests.MemorySink()
        let log = DecisionLog(sink: sink)
        let relay = try #require(BackgroundRelay(capacity: 2))
        let hold = Hold()
        #expect(hold.block(relay))
        for _ in 1...5 { log.submitShadow(Array("{}\n".utf8), relay: relay) }
        #expect(log.statistics.droppedShadowShare == 3)
        hold.open()
        relay.close()
        #expect(log.flush())
        #expect(log.statistics.logged == 2)
        let taken = relay.send {}
        #expect(!taken, "a closed relay takes nothing")
        log.close()
    }

    /// A candidate logs to the live handler through the relay: the event waits while the
    /// relay's thread is held, and reaches the handler once it goes on. That thread runs at
    /// the normal priority (SCHED_OTHER) of the thread that started it, not the caller's.
    @Test func aCandidatesLogReachesTheLiveHandlerThroughTheRelay() throws {
        let captured = LoggingTests.Captured()
        let relay = try #require(BackgroundRelay())
        let hold = Hold()
        #expect(hold.block(relay))
        var relayed = relay.logger(relaying: captured.logger)
        #expect(relayed.logLevel == .trace)
        relayed.logLevel = .warning
        relayed.info("dropped by the level")
        relayed.warning("a candidate's warning")
        #expect(captured.entries.withLock { $0.isEmpty }, "held in the relay")
        let caller = pthread_self()
        let ranOn = Mutex<(other: Bool, policy: Int32)?>(nil)
        #expect(relay.send { ranOn.withLock { $0 = (pthread_equal(pthread_self(), caller) == 0, sched_getscheduler(0)) } })
        hold.open()
        relay.close()
        #expect(captured.entries.withLock { $0.map(\.message) } == ["a candidate's warning"])
        let seen = ranOn.withLock { $0 }
        #expect(seen?.other == true && seen?.policy == SCHED_OTHER)
    }

    /// A candidate loaded beside a pool has a relay, and its states log through it.
    @Test func aCandidateIsMadeWithARelay() async throws {
        let folder = try RulesPoolTests.folder(version: 1)
        let live = try RulesPool(options: .init(rulesFile: folder.appendingPathComponent("rules.lua").path))
        let candidate = try await live.candidate(file: folder.appendingPathComponent("rules.lua").path, workers: 1)
        #expect(candidate.options.relay != nil)
        #expect(candidate.options.hierarchy.logger.handler is RelayedLogHandler)
        await candidate.shutDown()
        let taken = candidate.options.relay?.send {}
        #expect(taken == false, "closed with the pool")
        await live.shutDown()
    }
}
