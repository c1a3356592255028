import Foundation
import Testing

/// `--trace full` through the binary: a trace's copies keep every key, never change what a
/// line is answered, and stay within the memory bound (limits.md).
@Suite("luahier --trace full", .ownThreads)
struct FullTraceCommandTests {
    static func dispatch(_ rules: String, _ line: String, flags: [String]) throws -> [String: Any] {
        let result = try Luahier.run(["dispatch", Luahier.script(rules, name: "rules.lua")] + flags, stdin: line + "\n", timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// Keys JSON cannot hold are described in a step's `after` as in the value (they were
    /// dropped, with their subtrees, and a table could change shape).
    @Test func theLastStepsAfterIsTheValue() throws {
        let outcome = try Self.dispatch("""
            local a = hier.root:child("a")
            a:receiveEvent("E", function(e)
              return {type = "R", m = {[1.5] = 6, [true] = {7}, [{}] = 8, [2] = "int", x = 1}, mixed = {10, 20, n = 1}}
            end)
            a:handleEvent("R", function(e) end)
            """, #"{"at": "/a", "event": "E"}"#, flags: ["--trace", "full"])
        let value = try #require(outcome["value"] as? NSDictionary)
        let trace = try #require(outcome["trace"] as? [[String: Any]])
        let after = try #require(trace.first?["after"] as? NSDictionary)
        #expect(after == value)
        let m = try #require(after["m"] as? [String: Any])
        #expect(Set(m.keys) == ["2", "<boolean true>", "<number 1.5>", "<table>", "x"])
    }

    /// A value of shared tables (2^18 paths through 19 tables): answered the same traced and
    /// untraced; the copy the cap cannot write is said to be left out (it was copied path by
    /// path and the line became MemoryLimitExceeded).
    @Test func tracingDoesNotChangeWhatIsAnswered() throws {
        let rules = """
            local a = hier.root:child("a")
            a:receiveEvent("Dag", function(e)
              local x = {1}
              for i = 1, e.d do x = {l = x, r = x} end
              return {type = "R", x = x}
            end)
            a:handleEvent("R", function(e) end)
            """
        let line = #"{"at": "/a", "event": {"type": "Dag", "d": 18}}"#
        let untraced = try Self.dispatch(rules, line, flags: ["--max-memory", "12M"])
        let traced = try Self.dispatch(rules, line, flags: ["--max-memory", "12M", "--trace", "full"])
        #expect(untraced["status"] as? String == "handled")
        #expect(traced["status"] as? String == "handled")
        #expect((traced["value"] as? NSDictionary) == (untraced["value"] as? NSDictionary))
        let trace = try #require(traced["trace"] as? [[String: Any]])
        let written = trace.first?["after"] as? NSDictionary
        #expect(written == (untraced["value"] as? NSDictionary) || written == ["omitted": "MemoryLimitExceeded"])
    }

    /// `luahier test` reports a failure's trace with the keys the value has (it raised a
    /// PayloadError, or showed an `after` without them).
    @Test func aTestFailureShowsTheKeysOfTheTrace() throws {
        let rules = try Luahier.script("""
            local a = hier.root:child("a")
            a:receiveEvent("Keys", function(e) return {type = "R", m = {[true] = "yes", [1.5] = "f"}} end)
            a:handleEvent("R", function(e) end)
            """, name: "rules.lua")
        let tests = rules.replacingOccurrences(of: "rules.lua", with: "keys_test.lua")
        try """
            rules "rules.lua"
            test("keys", function()
              expect(trigger("/a", "Keys")):value{m = {[true] = "no"}}
            end)
            """.write(toFile: tests, atomically: true, encoding: .utf8)
        let result = try Luahier.run(["test", tests], timeout: 120)
        #expect(result.stdout.contains("FAIL"), "\(result.stdout)")
        #expect(!result.stdout.contains("PayloadError"), "\(result.stdout)")
        #expect(result.stdout.contains(#"after  {m = {<boolean true> = "yes", <number 1.5> = "f"}, type = "R"}"#), "\(result.stdout)")
    }

    /// 100 replacements of a 1.5 MB value, one line: the line grew value by value, each time
    /// into a new buffer, and peaked at 2 × the cap (262 MiB at 128M; the bound is 230 MiB).
    @Test(arguments: [64, 128])
    func aLineOfManyLargeValuesStaysWithinTheBound(capMiB: Int) throws {
        guard ProcessInfo.processInfo.environment["LUAHIER_SANITIZED"] == nil else { return }
        let rules = try Luahier.script("""
            local a = hier.root:child("a")
            for i = 1, 100 do
              a:transformEvent("Big", function(e) return {type = "Big", s = e.s or string.rep("x", e.n), k = i} end)
            end
            a:receiveEvent("Big", function(e) return "handled" end)
            """, name: "rules.lua")
        let input = rules.replacingOccurrences(of: "rules.lua", with: "in.jsonl")
        try #"{"at": "/a", "event": {"type": "Big", "n": 1500000}}"#.appending("\n").write(toFile: input, atomically: true, encoding: .utf8)
        let run = try Luahier.measure(["dispatch", "--max-memory", "\(capMiB)M", "--trace", "full", rules, input], timeout: 120)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix(#"{"line":1,"status":"handled""#))
        #expect(run.peakKiB < (capMiB << 10) * 13 / 10 + (64 << 10), "peak \(run.peakKiB) KiB")
    }
}
