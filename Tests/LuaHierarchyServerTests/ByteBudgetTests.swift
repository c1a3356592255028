#if Server
import Foundation
@testable import LuaHierarchyServer
import NIOCore
import Synchronization
import Testing

/// The server-wide budgets of bodies in flight and answers left unread (`ByteBudget`): what
/// a take takes never passes the limit, however many connections take and give at once, and
/// all of it comes back.
@Suite("The budgets of bodies and answers")
struct ByteBudgetTests {
    @Test func aTakeThatWouldPassTheLimitTakesNothing() {
        let budget = ByteBudget(limit: 100)
        #expect(budget.take(60))
        #expect(!budget.take(41))
        #expect(budget.heldBytes == 60 && budget.refusals == 1)
        #expect(budget.take(40))
        #expect(!budget.take(1))
        budget.give(100)
        #expect(budget.heldBytes == 0 && budget.refusals == 2)
        #expect(!budget.take(Int.max))
    }

    /// An answer is made before it could be refused: it is added whatever is held, and while
    /// the holders hold the limit, each request asked about is refused and counted.
    @Test func answersAreAddedAndSpendTheBudget() {
        let budget = ByteBudget(limit: 100)
        budget.add(60)
        #expect(!budget.isSpent())
        budget.add(60)
        #expect(budget.heldBytes == 120)
        #expect(budget.isSpent() && budget.isSpent())
        #expect(budget.refusals == 2)
        budget.give(30)
        #expect(!budget.isSpent())
    }

    /// An answer never written (its connection closed first) gives back all it held when let
    /// go; one over a part is held until then.
    @Test func anUnsentAnswerGivesBackWhatItHeldWhenLetGo() {
        let budget = ByteBudget(limit: 1 << 20)
        do {
            let answer = UnsentAnswer(ByteBuffer(repeating: 0x7A, count: 200_000), budget: budget)
            #expect(budget.heldBytes == 200_000)
            withExtendedLifetime(answer) {}
        }
        #expect(budget.heldBytes == 0)
    }

    /// A body takes its buffer's capacity: `ByteBuffer` allocates powers of two.
    @Test func aBodyTakesItsBuffersCapacity() {
        #expect([0, 1, 2, 3, 1000, 65_536, 65_537].map(ByteBudget.capacity(for:)) == [0, 1, 2, 4, 1024, 65_536, 131_072])
        #expect([1 << 62, (1 << 62) + 1, .max].map(ByteBudget.capacity(for:)) == [1 << 62, .max, .max])
        var buffer = ByteBuffer()
        for bytes in [1, 3, 1000, 65_537] {
            buffer.reserveCapacity(bytes)
            #expect(buffer.capacity == ByteBudget.capacity(for: bytes), "\(bytes)")
        }
    }

    /// Eight threads take and give 20,000 times each: the total any of them sees after a take
    /// is within the limit, and it ends at 0.
    @Test func concurrentTakesNeverPassTheLimit() {
        let budget = ByteBudget(limit: 10_000)
        let overLimit = Mutex(0)
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            Thread {
                var random = SystemRandomNumberGenerator()
                // Up to five bodies held at once, the oldest given back first: alone, a thread
                // passes the limit now and then (five average 7,500 bytes).
                var held: [Int] = []
                for _ in 0..<20_000 {
                    let bytes = Int.random(in: 1...3_000, using: &random)
                    if budget.take(bytes) {
                        held.append(bytes)
                        if budget.heldBytes > budget.limit { overLimit.withLock { $0 += 1 } }
                    }
                    if held.count == 5 { budget.give(held.removeFirst()) }
                }
                for bytes in held { budget.give(bytes) }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 600) == .success)   // a bound against hangs only
        #expect(overLimit.withLock { $0 } == 0)
        #expect(budget.heldBytes == 0)
        #expect(budget.refusals > 0)
    }
}
#endif
