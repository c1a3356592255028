#if Server
internal import Hummingbird
internal import NIOCore
import Synchronization

/// An answer too large to hand to its connection in one write: it is written a part at a time
/// (`RulesServer.answerPart`), each write waiting until the connection takes more, and what is
/// not yet handed over is held against `RulesServer.answers` (`--max-answers-unsent`).
///
/// A client that reads nothing leaves its answer here, not in the connection's buffers, where
/// the budget sees it; while the answers held reach the budget, new requests are refused before
/// any rule runs. What is left unsent when the answer is let go (the client left, the
/// connection closed, the response was never begun) is given back then.
final class UnsentAnswer: Sendable {
    private let budget: ByteBudget
    /// The bytes not yet handed to the connection.
    private let rest: Mutex<ByteBuffer>
    /// What the answer holds of the budget: its bytes not yet written.
    private let held: Atomic<Int>

    init(_ answer: ByteBuffer, budget: ByteBudget) {
        self.budget = budget
        rest = Mutex(answer)
        held = Atomic(answer.readableBytes)
        budget.add(answer.readableBytes)
    }

    deinit {
        budget.give(held.load(ordering: .relaxed))
    }

    /// The response body that writes it to `channel`.
    func body(on channel: any Channel) -> ResponseBody {
        let length = held.load(ordering: .relaxed)
        return ResponseBody(contentLength: length) { [self] writer in
            while let part = nextPart() {
                try await writer.write(part)
                try await Self.untilWritable(channel)
                held.subtract(part.readableBytes, ordering: .relaxed)
                budget.give(part.readableBytes)
            }
            try await writer.finish(nil)
        }
    }

    /// The connection gone before its answer was written.
    struct ConnectionGone: Error {}

    /// Waits until `channel` takes more: its unwritten bytes are under its high watermark.
    /// A write returns once the event loop is asked to make it, not once it is made, so a
    /// writer that only wrote would hand the whole answer over at once, past the watermark;
    /// the question goes to the event loop after the write, which answers it after the write.
    /// While the client reads nothing it is asked again every 10 ms, until the connection
    /// closes (its client left, or `--idle-timeout` passed).
    private static func untilWritable(_ channel: any Channel) async throws {
        while try await !channel.eventLoop.submit({ channel.isWritable }).get() {
            guard channel.isActive else { throw ConnectionGone() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private func nextPart() -> ByteBuffer? {
        rest.withLock { rest in
            guard rest.readableBytes > 0 else { return nil }
            return rest.readSlice(length: min(rest.readableBytes, RulesServer.answerPart))
        }
    }
}
#endif
