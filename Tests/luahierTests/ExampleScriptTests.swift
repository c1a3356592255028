import Foundation
import Testing

/// Every script in `scripts/` runs here, and its stdout, stderr and exit status are checked
/// against golden files in `Tests/luahierTests/Golden/`. Set `UPDATE_GOLDEN=1` to rewrite
/// them after a deliberate change (and read the diff).
@Suite("Example scripts")
struct ExampleScriptTests {
    /// How each example runs: extra flags and the expected exit status.
    static let examples: [String: (flags: [String], status: Int32)] = [
        "signin.lua": ([], 0),
        "escalation.lua": ([], 0),
        "trace.lua": (["--trace"], 0),
    ]

    static let golden = Luahier.packageRoot.appendingPathComponent("Tests/luahierTests/Golden")

    @Test func everyScriptHasAnExpectation() throws {
        let scripts = try FileManager.default.contentsOfDirectory(
            atPath: Luahier.packageRoot.appendingPathComponent("scripts").path
        ).filter { $0.hasSuffix(".lua") }
        #expect(Set(scripts) == Set(Self.examples.keys))
    }

    @Test(arguments: Self.examples.keys.sorted())
    func exampleMatchesItsGoldenOutput(_ name: String) throws {
        let example = try #require(Self.examples[name])
        let result = try Luahier.run(["run"] + example.flags + ["scripts/\(name)"])
        #expect(result.status == example.status)
        #expect(!result.signaled)
        for (stream, actual) in [("stdout", result.stdout), ("stderr", result.stderr)] {
            let file = Self.golden.appendingPathComponent("\(name).\(stream)")
            if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
                try FileManager.default.createDirectory(at: Self.golden, withIntermediateDirectories: true)
                try actual.write(to: file, atomically: true, encoding: .utf8)
            }
            let expected = try String(contentsOf: file, encoding: .utf8)
            #expect(actual == expected, "\(name) \(stream) differs from \(file.lastPathComponent)")
        }
    }
}
