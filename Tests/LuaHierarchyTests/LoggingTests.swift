import Logging
import Synchronization
import Testing
@testable import LuaHierarchy

/// The library logs through the embedder's swift-log `Logger` and writes nothing of its own
/// (the trial program saw `luahier: warning: safety: ...` on its stderr).
@Suite struct LoggingTests {
    /// A log handler that keeps what it is given.
    final class Captured: Sendable {
        let entries = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

        var logger: Logger {
            Logger(label: "test") { _ in Handler(captured: self) }
        }

        struct Handler: LogHandler {
            let captured: Captured
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                captured.entries.withLock { $0.append((event.level, "\(event.message)", event.metadata ?? [:])) }
            }
        }
    }

    @Test func warningsAndPrintGoToTheEmbeddersLogger() throws {
        let captured = Captured()
        var options = Hierarchy.Options()
        options.logger = captured.logger
        let hierarchy = try Hierarchy(options: options)
        try hierarchy.run(source: """
            local a = hier.root:child("a")
            a:triggers{"Declared"}
            a:child("b"):triggerEvent("Refund")
            print("hello from the rules")
            """, chunkName: "rules.lua")
        let entries = captured.entries.withLock { $0 }
        #expect(entries.count == 2)
        let warning = try #require(entries.first)
        #expect(warning.level == .warning)
        #expect(warning.message.contains("event 'Refund'") && !warning.message.hasPrefix("luahier:"))
        #expect(warning.metadata["type"] == "Refund" && warning.metadata["node"] == "/a")
        #expect(entries.last?.level == .info && entries.last?.message == "hello from the rules")
        #expect(entries.last?.metadata["source"] == "print")
    }

    /// A pool's states log to the same logger: its rules' warnings and prints reach the
    /// embedder, not the process's stderr.
    @Test func aPoolsStatesLogToTheEmbeddersLogger() async throws {
        let captured = Captured()
        let folder = try RulesPoolTests.folder(version: 1)
        try RulesPoolTests.write(version: 1, in: folder, rules: """
            local app = hier.root:child("app")
            app:triggers{"Ask"}
            app:receiveEvent(function(e) print("asked") return "handled" end)
            """)
        var options = RulesPool.Options(rulesFile: folder.appendingPathComponent("rules.lua").path)
        options.hierarchy.logger = captured.logger
        let pool = try RulesPool(options: options)
        defer { pool.shutDownBlocking() }
        _ = try await pool.dispatch(#"{"at": "/app", "event": "Ask"}"#)
        let entries = captured.entries.withLock { $0 }
        #expect(entries.contains { $0.level == .info && $0.message == "asked" })
    }
}
