import Foundation
import Testing

/// `run`, `check`, `test`, `dispatch` and `serve` read a plain command line (options spelled in full
/// before the positional words) without the argument parser. Each option so read must mean
/// what the parser makes of it: every case runs once as written and once in a form only the
/// parser reads (a `--` before run's FILE; the options after the other commands' positional
/// words), and both runs must end alike, and differently from a run without the option.
@Suite("luahier: command lines read without the parser", .ownThreads)
struct PlainCommandLineTests {
    static let loop = "while true do end"
    static let dispatchLoop = """
        local app = hier.root:child("app")
        app:handleEvent("Spin", function() while true do end end)
        print(app:triggerEvent("Spin").status)
        """

    /// `run OPTIONS FILE` against `run OPTIONS -- FILE`, and (a script that ends without
    /// the option) against `run FILE`.
    @Test(arguments: [
        (["--timeout", "0.2"], loop, false),
        (["--timeout=0.2"], loop, false),
        (["--max-instructions", "100000"], loop, false),
        (["--max-memory", "1M"], "local t = {} for i = 1, 1e6 do t[i] = ('x'):rep(64) .. i end", true),
        (["--unsafe"], "print(io ~= nil, os.getenv ~= nil)", true),
        (["--dispatch-timeout", "0.2"], dispatchLoop, false),
        (["--dispatch-max-instructions=100000"], dispatchLoop, false),
        (["--trace"], #"local app = hier.root:child("app") app:handleEvent("Ask", function() return true end) app:triggerEvent("Ask")"#, true),
        (["--fail-on-unhandled"], #"hier.root:child("a"):reportError({type = "Outage", message = "down"})"#, true),
        (["--timeout", "5", "--unsafe", "--max-memory=64M"], "print(io ~= nil)", true),
    ])
    func runOptionsMeanWhatTheParserReads(options: [String], source: String, endsWithout: Bool) throws {
        let script = try Luahier.script(source, name: "plain.lua")
        let plain = try Luahier.run(["run"] + options + [script, "word"])
        let parsed = try Luahier.run(["run"] + options + ["--", script, "word"])
        #expect(!plain.signaled && !parsed.signaled)
        #expect(plain.status == parsed.status, "\(options): \(plain.stderr) | \(parsed.stderr)")
        #expect(plain.stdout == parsed.stdout, "\(options)")
        #expect(plain.stderr == parsed.stderr, "\(options)")
        if endsWithout {
            let without = try Luahier.run(["run", script, "word"])
            #expect(plain.status != without.status || plain.stdout != without.stdout || plain.stderr != without.stderr,
                    "\(options) changed nothing: \(plain.stderr)")
        } else {
            #expect(plain.stderr.contains("LimitExceeded"), "\(options) did not stop the loop: \(plain.stderr)")
        }
    }

    /// A command line the plain reading does not take whole is the parser's, with its messages.
    @Test(arguments: [
        ["run", "--timeout"], ["run", "--timeout", "soon", "x.lua"], ["run", "--time", "5", "x.lua"],
        ["run", "--trace=yes", "x.lua"], ["run", "--recover", "-x", "x.lua"], ["run", "--timeout=", "x.lua"],
        ["check", "--unsafe"], ["check", "--max-memory", "lots", "x.lua"], ["test", "--timeout", "-1", "x_test.lua"],
        ["dispatch", "-", "--unsafe"], ["dispatch", "--jobs", "0", "x.lua"],
        ["serve", "--workers", "0", "x.lua"], ["serve", "--port", "http", "x.lua"], ["serve", "--watch=yes", "x.lua"],
        ["serve", "--log-level", "loud", "x.lua"], ["serve", "--trace"],
    ])
    func otherCommandLinesGetTheParsersUsageErrors(arguments: [String]) throws {
        let result = try Luahier.run(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.hasPrefix("luahier: "), "\(arguments): \(result.stderr)")
        #expect(result.stderr.hasSuffix("luahier: see 'luahier \(arguments[0]) --help'\n"), "\(arguments): \(result.stderr)")
    }

    /// `check`, `test` and `dispatch` with the sandbox and limit options before their
    /// positional words, against the same options after them (the parser's alone).
    @Test func checkTestAndDispatchReadTheHostOptionsAsTheParserDoes() throws {
        let rules = try Luahier.script("""
            local app = hier.root:child("app")
            app:transformEvent("Ask", function(e) return {type = "Answer", io = io ~= nil} end)
            app:handleEvent("Spin", function() while true do end end)
            """, name: "rules.lua")
        let folder = URL(fileURLWithPath: rules).deletingLastPathComponent().path
        let tests = folder + "/rules_test.lua"
        try """
            rules "rules.lua"
            test("asks", function() expect(trigger("/app", "Ask")):value{io = true} end)
            """.write(toFile: tests, atomically: true, encoding: .utf8)
        let input = folder + "/input.jsonl"
        try #"{"id": 1, "at": "/app", "event": "Ask"}"#.appending("\n").write(toFile: input, atomically: true, encoding: .utf8)
        let spin = folder + "/spin.jsonl"
        try #"{"id": 1, "at": "/app", "event": "Spin"}"#.appending("\n").write(toFile: spin, atomically: true, encoding: .utf8)
        let cases: [(command: String, options: [String], positionals: [String])] = [
            ("check", ["--unsafe"], [rules]),
            ("check", [], [rules]),
            ("test", ["--unsafe"], [tests]),
            ("test", [], [tests]),
            ("dispatch", ["--unsafe"], [rules, input]),
            ("dispatch", [], [rules, input]),
            ("dispatch", ["--dispatch-timeout=0.2"], [rules, spin]),
        ]
        for (command, options, positionals) in cases {
            let plain = try Luahier.run([command] + options + positionals, stdin: "")
            let parsed = try Luahier.run([command] + positionals + options, stdin: "")
            #expect(plain.status == parsed.status, "\(command) \(options): \(plain.stderr) | \(parsed.stderr)")
            // A test's report gives its times: those differ from run to run.
            func untimed(_ text: String) -> String { text.replacing(/\d+\.\d+ m?s/, with: "(time)") }
            #expect(untimed(plain.stdout) == untimed(parsed.stdout), "\(command) \(options)")
            #expect(plain.stderr == parsed.stderr, "\(command) \(options)")
        }
        // The sandbox option reaches the rules either way: io is there only with --unsafe.
        #expect(try Luahier.run(["test", "--unsafe", tests]).status == 0)
        #expect(try Luahier.run(["test", tests]).status == 1)
        #expect(try Luahier.run(["dispatch", "--unsafe", rules, input]).stdout.contains(#""io":true"#))
        #expect(try Luahier.run(["dispatch", rules, input]).stdout.contains(#""io":false"#))
    }

    /// The plain reading's option tables name only options the parser declares for the same
    /// command, with the same kind (a flag, an option taking a value, an option taking any
    /// next word): an option renamed or removed for the parser cannot live on in the plain
    /// reading. The tables are read from their source, the parser's from its own description.
    @Test func everyOptionReadWithoutTheParserIsTheParsers() throws {
        let sources = Luahier.packageRoot.appendingPathComponent("Sources/luahier")
        func table(_ file: String, _ name: String) throws -> [String: String] {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            guard let start = text.range(of: "static let \(name)") else { return [:] }
            let body = text[start.upperBound...].prefix { $0 != "]" }
            var found: [String: String] = [:]
            for match in body.matches(of: /"([a-z-]+)": \.(flag|value|anyValue)/) { found[String(match.1)] = String(match.2) }
            return found
        }
        let host = try table("PlainCommandLine.swift", "hostOptions: [String: Kind]")
        let run = try table("RunCommand.swift", "plainOptions = PlainCommandLine.hostOptions.merging(")
        let serve = try table("ServeRun.swift", "plainOptions = PlainCommandLine.hostOptions.merging(")
        #expect(host.count == 6 && run.count == 4 && serve.count == 32, "the tables were not found where they are read: \(host), \(run), \(serve)")
        let plain = [
            "run": host.merging(run) { $1 }, "check": host, "test": host, "dispatch": host, "serve": host.merging(serve) { $1 },
        ]

        let dump = try Luahier.run(["--experimental-dump-help"])
        let root = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any]
        let subcommands = (root?["command"] as? [String: Any])?["subcommands"] as? [[String: Any]] ?? []
        for (command, options) in plain {
            let declared = subcommands.first { $0["commandName"] as? String == command }?["arguments"] as? [[String: Any]] ?? []
            var kinds: [String: String] = [:]
            for argument in declared {
                let names = (argument["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }
                for name in names.compactMap({ $0["name"] as? String }) {
                    switch (argument["kind"] as? String, argument["parsingStrategy"] as? String) {
                    case ("flag", _): kinds[name] = "flag"
                    case ("option", "unconditional"): kinds[name] = "anyValue"
                    case ("option", _): kinds[name] = "value"
                    default: break
                    }
                }
            }
            #expect(!kinds.isEmpty, "no options described for \(command)")
            for (name, kind) in options {
                #expect(kinds[name] == kind, "\(command) --\(name): read as \(kind) without the parser, declared as \(kinds[name] ?? "nothing")")
            }
        }
    }
}
