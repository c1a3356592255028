import Foundation
import Testing

/// Option values refused before either reading of the command line (`OptionWords`): a
/// number that reads as 0 without being written as 0 (where 0 often means "no limit"), and
/// an empty value after `=`, which the parser would fill with the next word. Each is a
/// usage error (exit 2, the message on stderr), alike whether the plain reading or the parser
/// reads the rest, and alike from serve's environment and config file.
@Suite("luahier: option values that read as something else", .ownThreads)
struct OptionWordsTests {
    static let script = "print('ran')"

    /// The usage error's two lines: `luahier: MESSAGE`, then where to look.
    static func expectUsageError(_ result: Luahier.Result, _ message: String, _ command: String, _ label: String) {
        #expect(!result.signaled, "\(label): still running")
        #expect(result.status == 2, "\(label): \(result.stderr)")
        #expect(result.stdout.isEmpty, "\(label): \(result.stdout)")
        #expect(result.stderr == "luahier: \(message)\nluahier: see 'luahier \(command) --help'\n", "\(label): \(result.stderr)")
    }

    /// Every number option of every subcommand, given a text that reads as 0 but is not 0;
    /// `run`'s and the plain commands' in both readings (options before FILE, read without
    /// the parser; after `--` or the positional words, read by it).
    @Test func aNumberThatReadsAsZeroWithoutBeingZeroIsRefused() throws {
        let script = try Luahier.script(Self.script, name: "zero.lua")
        let folder = URL(fileURLWithPath: script).deletingLastPathComponent().path
        let input = folder + "/input.jsonl"
        try "\n".write(toFile: input, atomically: true, encoding: .utf8)
        let host: [(String, String, String)] = [
            ("timeout", "1e-400", "--timeout '1e-400' is too small: it would read as 0; give 0 itself for 0"),
            ("timeout", "-1e-400", "--timeout must be 0 or more, written without a minus sign, not '-1e-400'"),
            ("timeout", "-0", "--timeout must be 0 or more, written without a minus sign, not '-0'"),
            ("dispatch-timeout", "0x1p-2000", "--dispatch-timeout '0x1p-2000' is too small: it would read as 0; give 0 itself for 0"),
            ("max-instructions", "-0", "--max-instructions must be 0 or more, written without a minus sign, not '-0'"),
            ("dispatch-max-instructions", "-00", "--dispatch-max-instructions must be 0 or more, written without a minus sign, not '-00'"),
            ("max-memory", "-0", "--max-memory takes a size such as 64M or 1G, not '-0'"),
        ]
        for (option, value, message) in host {
            let forms: [(String, [String])] = [
                ("run", ["run", "--\(option)", value, script]),
                ("run", ["run", "--\(option)=\(value)", script]),
                ("run", ["run", "--\(option)", value, "--", script]),
                ("check", ["check", "--\(option)", value, script]),
                ("check", ["check", script, "--\(option)", value]),
                ("dispatch", ["dispatch", "--\(option)=\(value)", script, input]),
                ("dispatch", ["dispatch", script, input, "--\(option)", value]),
                ("tree", ["tree", script, "--\(option)", value]),
                ("test", ["test", "--\(option)", value, folder]),
                ("replay", ["replay", script, input, "--\(option)", value]),
                ("serve", ["serve", script, "--\(option)", value]),
            ]
            for (command, arguments) in forms {
                Self.expectUsageError(try Luahier.run(arguments, stdin: "", timeout: 30), message, command, "\(arguments)")
            }
        }
        let others: [([String], String)] = [
            (["dispatch", script, input, "--jobs", "-0"], "--jobs must be 0 or more, written without a minus sign, not '-0'"),
            (["dispatch", script, input, "--line-offset=-0"], "--line-offset must be 0 or more, written without a minus sign, not '-0'"),
            (["dispatch", script, input, "--max-line", "-0"], "--max-line takes a size such as 64K or 1M, not '-0'"),
            (["replay", script, input, "--max-explained", "-0"], "--max-explained must be 0 or more, written without a minus sign, not '-0'"),
            (["serve", script, "--port", "-0"], "--port must be 0 or more, written without a minus sign, not '-0'"),
            (["serve", script, "--shutdown-grace", "1e-400"], "--shutdown-grace '1e-400' is too small: it would read as 0; give 0 itself for 0"),
            (["serve", script, "--shutdown-delay=-0.0"], "--shutdown-delay must be 0 or more, written without a minus sign, not '-0.0'"),
            (["serve", script, "--shadow-sample", "-0"], "--shadow-sample must be 0 or more, written without a minus sign, not '-0'"),
            (["serve", script, "--decision-log", folder + "/d.log", "--decision-log-keep", "-0"],
             "--decision-log-keep must be 0 or more, written without a minus sign, not '-0'"),
        ]
        for (arguments, message) in others {
            Self.expectUsageError(try Luahier.run(arguments, stdin: "", timeout: 30), message, arguments[0], "\(arguments)")
        }
    }

    /// Every option any subcommand declares with a number for its default (the parser's own
    /// description, `--experimental-dump-help`) is one `OptionWords.numbers` checks: an
    /// option added with a number cannot miss the check. Sizes (`512M`) are `Size.bytes`'s.
    @Test func everyNumberOptionIsChecked() throws {
        let source = try String(contentsOf: Luahier.packageRoot.appendingPathComponent("Sources/luahier/OptionWords.swift"), encoding: .utf8)
        let start = try #require(source.range(of: "static let numbers = ["))
        let table = Set(source[start.upperBound...].prefix { $0 != "]" }.matches(of: /"([a-z-]+)"/).map { String($0.1) })
        #expect(table.count > 10, "the table was not found where it is read")
        let dump = try Luahier.run(["--experimental-dump-help"])
        let root = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any]
        var numbers: [String: String] = [:]
        func collect(_ command: [String: Any]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] where argument["kind"] as? String == "option" {
                guard let value = argument["defaultValue"] as? String, Double(value) != nil else { continue }
                let names = (argument["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }
                for name in names.compactMap({ $0["name"] as? String }) { numbers[name] = command["commandName"] as? String }
            }
            for subcommand in command["subcommands"] as? [[String: Any]] ?? [] { collect(subcommand) }
        }
        collect(root?["command"] as? [String: Any] ?? [:])
        #expect(numbers.keys.contains("timeout") && numbers.keys.contains("port"), "\(numbers)")
        for (name, command) in numbers {
            #expect(table.contains(name), "\(command) --\(name) takes a number, and OptionWords.numbers does not name it")
        }
        for name in table { #expect(numbers[name] != nil, "OptionWords.numbers names --\(name), which no subcommand declares with a number") }
    }

    /// 0 written as 0, in any spelling a double reads, still means what 0 means (no limit);
    /// a tiny value that does not underflow is a limit.
    @Test func zeroWrittenAsZeroStillTurnsALimitOff() throws {
        let script = try Luahier.script(Self.script, name: "zero.lua")
        var cases: [[String]] = []
        for zero in ["0", "0.0", "00", "0e5", "+0", "0x0p3"] {
            cases += [["run", "--timeout", zero, script], ["run", "--dispatch-timeout=\(zero)", "--", script]]
        }
        for zero in ["0", "00", "+0"] {
            cases += [["run", "--max-instructions", zero, script], ["run", "--max-instructions=\(zero)", "--", script]]
        }
        for arguments in cases {
            let ran = try Luahier.run(arguments)
            #expect(ran.status == 0 && ran.stdout == "ran\n", "\(arguments): \(ran.stderr)")
        }
        let tiny = try Luahier.run(["run", "--timeout", "1e-300", try Luahier.script("while true do end", name: "spin.lua")])
        #expect(tiny.status == 1 && tiny.stderr.contains("LimitExceeded"), "\(tiny.stderr)")
    }

    /// `--option=` with nothing after `=` is refused, naming it, in both readings, rather
    /// than taking the next word as its value (`--timeout= 5 x.lua` was a 5 s timeout).
    @Test func anEmptyValueAfterEqualsIsRefused() throws {
        let script = try Luahier.script(Self.script, name: "empty.lua")
        let folder = URL(fileURLWithPath: script).deletingLastPathComponent().path
        let input = folder + "/input.jsonl"
        try "\n".write(toFile: input, atomically: true, encoding: .utf8)
        let cases: [[String]] = [
            ["run", "--timeout=", "5", script],
            ["run", "--timeout=", "5", "--", script],
            ["run", "--recover=", "retry", script],
            ["run", "--trace=", script],
            ["check", "--max-memory=", "64M", script],
            ["check", script, "--max-memory=", "64M"],
            ["dispatch", script, input, "--jobs=", "2"],
            ["dispatch", "--dispatch-timeout=", "1", script, input],
            ["test", "--timeout=", "1", folder],
            ["replay", script, input, "--jobs=", "2"],
            ["serve", script, "--port=", "8080"],
            ["explain", script, "--at=", "/app", "--event", "Ask"],
            ["bundle", "verify", script, "--key=", script],
        ]
        for arguments in cases {
            let word = try #require(arguments.first { $0.hasSuffix("=") })
            let name = word.dropFirst(2).dropLast()
            Self.expectUsageError(
                try Luahier.run(arguments, stdin: "", timeout: 30),
                "'\(word)' has an empty value: give --\(name)=VALUE or --\(name) VALUE (a flag: --\(name) alone)", arguments[0], "\(arguments)")
        }
        // The script's own words, after FILE or after `--`, are the script's.
        let echo = try Luahier.script("print(...)", name: "echo.lua")
        let passed = try Luahier.run(["run", "--timeout=5", echo, "--timeout=", "-0"])
        #expect(passed.status == 0 && passed.stdout == "--timeout=\t-0\n", "\(passed.stderr)")
        let afterTerminator = try Luahier.run(["check", echo, "--", "--timeout=", "-0"])
        #expect(afterTerminator.status == 0, "\(afterTerminator.stderr)")
    }

    /// serve's environment and config file give words checked as the command line's are,
    /// the message saying where the value came from.
    @Test func serveSettingsFromTheEnvironmentAndTheFileAreCheckedAlike() throws {
        let rules = try Luahier.script("hier.root:child('app')", name: "rules.lua")
        let config = URL(fileURLWithPath: rules).deletingLastPathComponent().appendingPathComponent("serve.json").path
        func serve(_ arguments: [String], _ variables: [String: String]) throws -> Luahier.Result {
            let environment = ProcessInfo.processInfo.environment.merging(variables) { $1 }
            let child = try LuahierProcess(["serve", rules] + arguments, environment: environment)
            child.closeInput()
            let ended = child.waitForExit(timeout: 30)
            return Luahier.Result(status: ended.status ?? ended.signal ?? 0, stdout: child.stdout, stderr: ended.stderr, signaled: ended.signal != nil)
        }
        Self.expectUsageError(try serve([], ["LUAHIER_TIMEOUT": "1e-400"]),
            "--timeout '1e-400' is too small: it would read as 0; give 0 itself for 0 (--timeout came from LUAHIER_TIMEOUT)", "serve", "environment")
        Self.expectUsageError(try serve([], ["LUAHIER_PORT": "-0"]),
            "--port must be 0 or more, written without a minus sign, not '-0' (--port came from LUAHIER_PORT)", "serve", "environment")
        Self.expectUsageError(try serve([], ["LUAHIER_PORT": ""]),
            "'--port=' has an empty value: give --port=VALUE or --port VALUE (a flag: --port alone) (--port came from LUAHIER_PORT)", "serve", "environment")
        try #"{"timeout": 1e-400}"#.write(toFile: config, atomically: true, encoding: .utf8)
        Self.expectUsageError(try serve(["--config", config], [:]),
            "--timeout '1e-400' is too small: it would read as 0; give 0 itself for 0 (--timeout came from \(config):1)", "serve", "file")
        try "{\n  \"shutdown-grace\": -0\n}".write(toFile: config, atomically: true, encoding: .utf8)
        Self.expectUsageError(try serve(["--config", config], [:]),
            "--shutdown-grace must be 0 or more, written without a minus sign, not '-0' (--shutdown-grace came from \(config):2)", "serve", "file")
        // A zero written as 0 is as before.
        try #"{"timeout": 0, "port": 0}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let printed = try serve(["--config", config, "--print-config"], [:])
        #expect(printed.status == 0, "\(printed.stderr)")
        let timeout = printed.stdout.split(separator: "\n").first { $0.hasPrefix("timeout ") }?.split(separator: " ")
        #expect(timeout?.dropFirst().first == "0", "\(printed.stdout)")
    }
}
