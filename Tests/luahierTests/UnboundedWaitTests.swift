import Foundation
import Testing

/// No test waits without a bound. A wait that never ends holds the whole run (CI's run once
/// waited to its own limit of 90 minutes); a bounded one fails its own test and lets the rest
/// report. Every wait in every test target is enumerated here, not sampled: the calls that can
/// block for ever are refused by their text.
@Suite("Tests wait with a bound", .ownThreads)
struct UnboundedWaitTests {
    /// Calls that block until something else happens, with no bound of their own, and the
    /// bounded form to use instead.
    static let unbounded: [(call: String, instead: String)] = [
        (".wait()", "wait(timeout:) on a semaphore or group, wait(until:) on a condition"),
        ("waitUntilExit()", "LuahierProcess.waitForExit(timeout:), which kills past its bound"),
        ("readDataToEndOfFile()", "Luahier.run or LuahierProcess, whose reads end with the child"),
    ]

    @Test func noTestWaitsWithoutABound() throws {
        var found: [String] = []
        for folder in ["Tests/LuaHierarchyTests", "Tests/LuaHierarchyServerTests", "Tests/luahierTests"] {
            for file in try ArchitectureTests.swiftFiles(under: folder) where !file.path.hasSuffix("/UnboundedWaitTests.swift") {
                for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    for (call, instead) in Self.unbounded where line.contains(call) {
                        found.append("\(file.path):\(number + 1): \(call) (use \(instead))")
                    }
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// The check reads the calls it refuses: a file that has one is caught.
    @Test func theCheckFindsAnUnboundedWait() {
        let text = "        release.wait()\n        process.waitUntilExit()\n"
        #expect(Self.unbounded.filter { text.contains($0.call) }.count == 2)
    }
}
