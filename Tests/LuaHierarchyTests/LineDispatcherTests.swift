import Foundation
import Synchronization
import Testing
@testable import LuaHierarchy

/// `luahier dispatch`'s pipeline in process: what waits for the writer (contract §7: memory
/// the rules' answers hold stays bounded; §8: answers in input order).
@Suite("LineDispatcher's writer (contract §7, §8)")
struct LineDispatcherTests {
    /// The flusher thread writes completed batches while their worker goes on. With the output
    /// not read, a worker must not run on without bound: once the completed batches' unwritten
    /// answers pass 4 MiB (their charge was given back when they completed), it waits for the
    /// writer before its next batch. Each line here is a batch of its own (the next is written
    /// only once the one before is being answered) with an answer of 1 MiB; nothing is read
    /// until the worker waits, and no line is answered after that until something is read;
    /// then everything is, and every line comes out in order.
    @Test func completedAnswersWaitingForTheWriterStayBounded() throws {
        let rules = URL(fileURLWithPath: "/tmp/lhwriter-\(UUID().uuidString.prefix(8)).lua")
        try """
            hier.root:child("a")
            hier.root:receiveEvent(function(e) print(e.n) return {type = "R", s = ("x"):rep(1 << 20)} end)
            hier.root:handleEvent("R", function() end)
            """.write(to: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: rules) }
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        try #require(pipe(&input) == 0 && pipe(&output) == 0)
        let (inputRead, inputWrite, outputRead, outputWrite) = (input[0], input[1], output[0], output[1])

        let answering = DispatchSemaphore(value: 0)
        let waited = DispatchSemaphore(value: 0)
        let answeredAfterTheWait = DispatchSemaphore(value: 0)
        let waits = Mutex<[Int]>([])
        var options = LineDispatcher.Options(rulesFile: rules.path)
        options.print = { _ in
            answering.signal()
            if !waits.withLock({ $0.isEmpty }) { answeredAfterTheWait.signal() }
        }
        options.waitingForWriter = { bytes in
            waits.withLock { $0.append(bytes) }
            waited.signal()
        }
        let lines = 40
        let summary = Mutex<LineDispatcher.Summary?>(nil)
        let ended = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [options] in
            let result = try? LineDispatcher.run(options, input: inputRead, output: outputWrite)
            close(outputWrite)
            summary.withLock { $0 = result }
            ended.signal()
        }
        Thread.detachNewThread {
            for n in 1...lines {
                let line = #"{"id": \#(n), "at": "/a", "event": {"type": "X", "n": \#(n)}}"# + "\n"
                _ = line.utf8CString.withUnsafeBufferPointer { write(inputWrite, $0.baseAddress, $0.count - 1) }
                _ = answering.wait(timeout: .now() + 600)   // a bound against hangs only
            }
            close(inputWrite)
        }

        // Nothing is read until a worker waits for the writer (bounded, should it never).
        try #require(waited.wait(timeout: .now() + 300) == .success, "the worker never waited for the writer")
        // The one wait on the clock: that nothing more happens. A worker that went on (the
        // bound gone) answers the next line within milliseconds; a loaded machine can only
        // make this miss such a worker, never fail a waiting one.
        #expect(answeredAfterTheWait.wait(timeout: .now() + 2) == .timedOut, "a line was answered while the writer was stuck")
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(outputRead, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        close(outputRead)
        close(inputRead)
        #expect(ended.wait(timeout: .now() + 600) == .success)   // a bound against hangs only

        // At most 4 MiB and the one batch that passed it (a batch holding more writes its own).
        let most = waits.withLock { $0.max() ?? 0 }
        #expect(most > 4 << 20 && most <= 8 << 20, "waited with \(most) bytes unwritten")
        let answers = bytes.split(separator: UInt8(ascii: "\n")).map { Array($0) }
        #expect(answers.count == lines)
        for (index, answer) in answers.enumerated() {
            let object = try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any]
            #expect(object?["id"] as? Int == index + 1)
            #expect(object?["status"] as? String == "handled")
        }
        #expect(summary.withLock { $0?.answered } == lines)
    }
}
