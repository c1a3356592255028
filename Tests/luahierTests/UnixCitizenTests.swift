import Foundation
import Testing

/// `luahier` as a Unix tool (contract §8): arguments as lua5.4 takes them, stdin, shebang
/// scripts, positional input, one error style, output flushed per line and never lost,
/// signals, failed writes, `--version`, the man page and completions.
@Suite("luahier as a Unix citizen (contract §8)", .ownThreads)
struct UnixCitizenTests {
    // MARK: Arguments

    static let echoArguments = """
        print(select("#", ...), ...)
        print(arg[-2], arg[-1], arg[0], #arg)
        for i = 1, #arg do print(i, arg[i]) end
        """

    @Test func everythingAfterFileGoesToTheScript() throws {
        let script = try Luahier.script(Self.echoArguments)
        let result = try Luahier.run(["run", "--timeout", "600", script, "a", "--trace", "-x", "--", "b"])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout == """
            5\ta\t--trace\t-x\t--\tb
            --timeout\t600\t\(script)\t5
            1\ta
            2\t--trace
            3\t-x
            4\t--
            5\tb

            """)
    }

    @Test func aTerminatorRightAfterFileIsDropped() throws {
        let script = try Luahier.script(Self.echoArguments)
        let result = try Luahier.run(["run", script, "--", "one", "--two"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("2\tone\t--two\n\(Luahier.binary.path)\trun\t\(script)\t2\n"))
        // Before FILE, `--` ends luahier's options.
        let before = try Luahier.run(["run", "--", script, "x"])
        #expect(before.stdout.hasPrefix("1\tx\nrun\t--\t\(script)\t1\n"))
    }

    @Test func dashReadsTheScriptFromStdin() throws {
        let result = try Luahier.run(["run", "-", "p", "q"], stdin: "print(arg[0], ...)\nprint(hier.root.path)\n")
        #expect(result.status == 0)
        #expect(result.stdout == "-\tp\tq\n/\n")
        let failing = try Luahier.run(["run", "-"], stdin: "\n\nerror('boom')\n")
        #expect(failing.status == 1)
        #expect(failing.stderr.hasPrefix("luahier: stdin:3: boom\n"))
        let shorthand = try Luahier.run(["-", "r"], stdin: "print(...)")
        #expect(shorthand.stdout == "r\n")
    }

    @Test(arguments: [
        "#!/usr/bin/env luahier\n",
        "#!/usr/bin/env -S luahier run\n",
        "#!/usr/bin/env -S luahier run --timeout 600\n",
    ])
    func shebangScriptsRunWithTheirArguments(_ shebang: String) throws {
        let path = try Luahier.script(shebang + "print('args', ...)\nprint(hier.root.path)\n")
        chmod(path, 0o755)
        let folder = Luahier.binary.deletingLastPathComponent().path
        let environment = ["PATH": folder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let child = try Self.launchingJustWritten { try LuahierProcess(["one", "--two"], environment: environment, executable: URL(fileURLWithPath: path)) }
        child.closeInput()
        let stdout = child.readRest()
        let (status, stderr) = child.finish()
        #expect(status == 0)
        #expect(stderr.isEmpty)
        #expect(stdout == "args\tone\t--two\n/\n")
    }

    /// Starts a file just written as an executable. A process that another test forks at the
    /// moment of the write holds the file open for writing until it execs, and the kernel
    /// refuses to run the file meanwhile (ETXTBSY): that refusal, and only it, is tried again,
    /// a bounded number of times.
    static func launchingJustWritten<T>(_ launch: () throws -> T) throws -> T {
        for _ in 1..<1000 {
            do {
                return try launch()
            } catch let error as NSError where (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == Int(ETXTBSY) {
                sched_yield()
            }
        }
        return try launch()
    }

    @Test func dispatchTakesItsInputAsAnArgument() throws {
        let expected = try Luahier.run(["dispatch", "scripts/alerts.lua", "--input", "scripts/alerts.jsonl"])
        let positional = try Luahier.run(["dispatch", "scripts/alerts.lua", "scripts/alerts.jsonl"])
        #expect(positional.status == expected.status)
        #expect(positional.stdout == expected.stdout)
        #expect(positional.stdout.split(separator: "\n").count == 12)
        let input = try String(contentsOf: Luahier.packageRoot.appendingPathComponent("scripts/alerts.jsonl"), encoding: .utf8)
        let dash = try Luahier.run(["dispatch", "scripts/alerts.lua", "-", "--jobs", "2"], stdin: input)
        #expect(dash.stdout == expected.stdout.replacingOccurrences(of: "scripts/alerts.jsonl", with: "stdin"))
        let twice = try Luahier.run(["dispatch", "scripts/alerts.lua", "scripts/alerts.jsonl", "--input", "scripts/alerts.jsonl"])
        #expect(twice.status == 2)
        #expect(twice.stderr.hasPrefix("luahier: give the input once"))
    }

    // MARK: Errors

    @Test(arguments: [
        (["run", "--jobs", "-1", "x.lua"], "luahier: unknown option '--jobs'"),
        (["dispatch", "scripts/alerts.lua", "--jobs", "-1"], "luahier: --jobs must be between 1 and 256"),
        (["run", "--timeout", "-5", "scripts/signin.lua"], "luahier: --timeout must be 0 or more seconds"),
        (["run", "--max-instructions", "-1", "scripts/signin.lua"], "luahier: --max-instructions must be 0 or more"),
        (["check", "scripts/alerts.lua", "--dispatch-timeout", "-1"], "luahier: --dispatch-timeout must be 0 or more seconds"),
        (["run", "Tests"], "luahier: Tests is a directory"),
        (["dispatch", "scripts/alerts.lua", "Tests"], "luahier: Tests is a directory"),
        (["run", "no/such.lua"], "luahier: no such file: no/such.lua"),
        (["run"], "luahier: missing the script: luahier run [options] FILE [ARGS...]"),
        (["frobnicate"], "luahier: no such file: frobnicate"),
        (["tree", "scripts/alerts.lua", "--format", "svg"], "luahier: "),
        (["--bogus"], "luahier: unknown option '--bogus'"),
        (["dispatch", "-", "scripts/alerts.jsonl"], "luahier: dispatch reads its rules from a file, not stdin"),
    ])
    func usageErrorsHaveOneStyle(_ arguments: [String], _ first: String) throws {
        let result = try Luahier.run(arguments)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix(first + (first == "luahier: " ? "" : "\n")))
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.hasPrefix("luahier: ") })
        #expect(lines.last?.hasPrefix("luahier: see 'luahier") == true)
    }

    /// `luahier FILE` runs a script, so a misspelled subcommand reads as a missing script: when
    /// the word is close to a subcommand's name, the error says which one was meant.
    @Test(arguments: [
        (["disptach", "scripts/alerts.lua", "scripts/alerts.jsonl"], "'dispatch'"),
        (["expalin", "scripts/alerts.lua"], "'explain'"),
        (["chekc", "scripts/alerts.lua"], "'check'"),
        (["tets", "Tests"], "'test'"),
        (["serv", "rules.lua"], "'serve'"),
        (["rnu", "scripts/signin.lua"], "'run'"),
        (["t"], "'tree' or 'test'"),
    ])
    func aMisspelledSubcommandIsNamed(_ arguments: [String], _ meant: String) throws {
        let result = try Luahier.run(arguments)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "luahier: no such file or subcommand: \(arguments[0]) (did you mean \(meant)?)\nluahier: see 'luahier --help'\n")
    }

    /// A missing file far from every subcommand keeps its message; a file that is there runs,
    /// however close its name is to a subcommand's.
    @Test func aScriptNamedLikeASubcommandStillRuns() throws {
        let missing = try Luahier.run(["no-such-job.lua", "a"])
        #expect(missing.status == 2)
        #expect(missing.stderr == "luahier: no such file: no-such-job.lua\nluahier: see 'luahier run --help'\n")
        let folder = URL(fileURLWithPath: try Luahier.script("print('ran', ...)", name: "disptach")).deletingLastPathComponent()
        let present = try Luahier.run(["disptach", "a"], in: folder)
        #expect(present.status == 0)
        #expect(present.stdout == "ran\ta\n")
        let stdin = try Luahier.run(["-", "b"], stdin: "print('stdin', ...)")
        #expect(stdin.stdout == "stdin\tb\n")
    }

    @Test func versionComesFromThePackage() throws {
        let result = try Luahier.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.wholeMatch(of: /luahier \d+\.\d+\.\d+ \(Lua 5\.4\)\n/) != nil)
        let library = try String(contentsOf: Luahier.packageRoot.appendingPathComponent("Sources/LuaHierarchy/Hierarchy/Version.swift"), encoding: .utf8)
        let number = try #require(library.firstMatch(of: /number = "([0-9.]+)"/)?.1)
        #expect(result.stdout.hasPrefix("luahier \(number) "))
    }

    /// Every subcommand answers `--version` as the command does (cli.md); `run`, whose words
    /// after its options are the script's, too, unless a `--` makes it a file name.
    @Test func everySubcommandAnswersVersion() throws {
        let expected = try Luahier.run(["--version"]).stdout
        for command in ["run", "check", "test", "dispatch", "tree", "explain", "replay", "serve", "bundle"] {
            let result = try Luahier.run([command, "--version"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(result.stdout == expected, "\(command)")
        }
        let file = try Luahier.run(["run", "--", "--version"])
        #expect(file.status == 2 && file.stderr.contains("no such file: --version"), "\(file.stderr)")
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsAreGenerated(_ shell: String) throws {
        let result = try Luahier.run(["--generate-completion-script", shell])
        #expect(result.status == 0)
        for word in ["luahier", "dispatch", "max-memory"] { #expect(result.stdout.contains(word)) }
    }

    @Test func aFileAfterTheTerminatorMayStartWithADash() throws {
        let folder = URL(fileURLWithPath: try Luahier.script("")).deletingLastPathComponent()
        let path = folder.appendingPathComponent("-dash.lua").path
        try "print('dash', ...)".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try Luahier.run(["run", "--", path.replacingOccurrences(of: folder.path + "/", with: folder.path + "/"), "a"])
        #expect(result.stdout == "dash\ta\n")
        let relative = try LuahierProcess(["run", "--", "-dash.lua", "a"], executable: Luahier.binary, folder: folder)
        relative.closeInput()
        #expect(relative.readRest() == "dash\ta\n")
        #expect(relative.finish().status == 0)
    }

    @Test func treeAndCheckReadRulesFromStdin() throws {
        let rules = "local a = hier.root:child('a')\na:handleEvent(function() end)\n"
        let tree = try Luahier.run(["tree", "-"], stdin: rules)
        #expect(tree.status == 0)
        #expect(tree.stdout.hasPrefix("/\n└── a\n"))
        let check = try Luahier.run(["check", "-"], stdin: rules)
        #expect(check.status == 0)
        #expect(check.stderr.hasPrefix("check: stdin: no findings"))
    }

    // MARK: Output

    @Test func printWritesTheScriptsBytes() throws {
        // Lua strings are bytes: Latin-1 and binary reach stdout as they are, as with lua5.4.
        let script = try Luahier.script(#"print("caf\233", string.char(0x80, 0xff, 0x41, 0))"#)
        let child = try LuahierProcess(["run", script])
        child.closeInput()
        let bytes = child.readRestBytes()
        #expect(child.finish().status == 0)
        #expect(bytes == [0x63, 0x61, 0x66, 0xE9, 0x09, 0x80, 0xFF, 0x41, 0x00, 0x0A])
    }

    @Test func printAndIoWriteKeepTheirOrder() throws {
        let script = try Luahier.script(#"""
            io.write("1 ")
            print("2")
            io.write("3\n")
            print("4")
            io.write("5")
            """#)
        let result = try Luahier.run(["run", "--unsafe", script])
        #expect(result.stdout == "1 2\n3\n4\n5")
    }

    @Test func printIsFlushedLineByLine() throws {
        // The script waits for a line of stdin after "start": "start" must come before it. No
        // limits: the script waits for the line however late it comes.
        let script = try Luahier.script("""
            print("start")
            io.read("l")
            print("end")
            """)
        let child = try LuahierProcess(["run", "--unsafe"] + Self.noLimits + [script])
        #expect(child.readLine() == "start", "start was not written while the script went on")
        child.write("go\n")
        #expect(child.readLine() == "end")
        #expect(child.finish().status == 0)
    }

    @Test(arguments: [
        ["run", "scripts/signin.lua"], ["tree", "scripts/alerts.lua"], ["tree", "scripts/alerts.lua", "--format", "json"],
        ["dispatch", "scripts/alerts.lua", "scripts/alerts.jsonl"],
    ])
    func aFailedWriteIsAnError(_ arguments: [String]) throws {
        let result = try Luahier.spawn(arguments, stdout: "/dev/full")
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("luahier: "))
        #expect(result.stderr.contains("cannot write"))
        #expect(result.stderr.contains("No space left on device"))
    }

    @Test(arguments: [
        ["run", "-"], ["dispatch", "scripts/alerts.lua", "-"],
    ])
    func aClosedPipeEndsQuietly(_ arguments: [String]) throws {
        let input = arguments[0] == "run"
            ? "for i = 1, 200000 do print(('x'):rep(100)) end"
            : String(repeating: #"{"at":"/org/platform","event":{"type":"Alert","severity":"info","service":"api"}}"# + "\n", count: 20000)
        // The tests ignore SIGPIPE and the child inherits that, so it sees EPIPE: 141, quietly.
        let result = try Luahier.spawn(arguments, stdout: nil, stdin: input)
        #expect(result.status == 141)
        #expect(result.stderr.isEmpty)
    }

    @Test func aFailedPrintStopsTheScriptAtItsLine() throws {
        let script = try Luahier.script("""
            print("first")
            while true do end
            """)
        // A script that ran on after its output failed would never end: it is killed (no status).
        let result = try Luahier.spawn(["run", "--timeout", "0", script], stdout: "/dev/full")
        #expect(result.status == 1, "the script ran on after its output failed")
        #expect(result.stderr == "luahier: \(script):1: OutputError: cannot write to stdout: No space left on device\n")
    }

    @Test func aFailedWriteOfHelpOrVersionIsAnErrorToo() throws {
        for arguments in [["--version"], ["run", "--help"]] {
            let result = try Luahier.spawn(arguments, stdout: "/dev/full")
            #expect(result.status == 1)
            #expect(result.stderr == "luahier: cannot write to stdout: No space left on device\n")
        }
    }

    // MARK: Signals

    static let loop = """
        print("ready")
        local n = 0
        while true do
          n = n + 1
        end
        """

    /// No limits: a script or line the test holds runs until the test's signal or input,
    /// however late a loaded machine lets it come.
    static let noLimits = ["--timeout", "0", "--max-instructions", "0", "--dispatch-timeout", "0", "--dispatch-max-instructions", "0"]

    /// An instruction budget no test spends (weeks of CPU time), which puts the count hook on,
    /// and no clock limits (as `noLimits`).
    static let countHook = ["--max-instructions", "1000000000000000", "--timeout", "0", "--dispatch-timeout", "0"]

    /// With the count hook (it sees the signal's flag by itself) and with no limits (no hook:
    /// only the handler's signal to the Lua thread can stop it).
    @Test(arguments: [(SIGINT, Int32(130), false), (SIGTERM, Int32(143), false), (SIGINT, Int32(130), true)])
    func aSignalStopsTheScriptAtItsLine(_ signal: Int32, _ status: Int32, _ unlimited: Bool) throws {
        let script = try Luahier.script(Self.loop)
        let child = try LuahierProcess(["run"] + (unlimited ? Self.noLimits : Self.countHook) + [script])
        #expect(child.readLine() == "ready")
        // Into the loop, by the CPU time it burns there: a signal during print would name line 1.
        child.waitForCPU()
        child.send(signal)
        let stdout = child.readRest()
        let result = child.finish()
        #expect(result.status == status)
        #expect(stdout.isEmpty)
        #expect(result.stderr.hasPrefix("luahier: \(script):4: interrupted\nstack traceback:\n\t\(script):4: in main chunk"))
    }

    /// With the count hook (an instruction budget the dispatch cannot spend in the test's
    /// time, and no clock limits) and with no limits at all (no hook: the signal sets it).
    @Test(arguments: [["--dispatch-max-instructions", "1000000000000000", "--dispatch-timeout", "0", "--timeout", "0"], Self.noLimits])
    func aSignalStopsNestedDispatchesCoroutinesAndPcalls(_ limits: [String]) throws {
        let script = try Luahier.script("""
            local node = hier.root:child("n")
            node:handleEvent(function()
              local co = coroutine.wrap(function()
                while true do pcall(function() while true do end end) end
              end)
              co()
            end)
            print("ready")
            local outcome = node:triggerEvent("Spin")
            print("after", outcome.status)
            """)
        let child = try LuahierProcess(["run"] + limits + [script])
        #expect(child.readLine() == "ready")
        child.waitForCPU()
        child.send(SIGINT)
        let stdout = child.readRest()
        let result = child.finish()
        #expect(result.status == 130)
        #expect(stdout.isEmpty, "the script went on after the dispatch: \(stdout)")
        // Named where it was stopped (inside the coroutine), not where it unwound to.
        #expect(result.stderr.hasPrefix("luahier: \(script):4: interrupted\nstack traceback:\n"))
        #expect(result.stderr.contains("\(script):4: in function <\(script):4>"))
        #expect(!result.stderr.contains("unhandled error"), "an interrupt is not presented as the script's error")
    }

    @Test func aSignalCutsAReadOfTheScriptFromStdinShort() throws {
        let child = try LuahierProcess(["run", "-"])
        child.write("print('never run')\n")   // stdin stays open: the read waits
        #expect(Luahier.eventually { child.isReadingStdin })
        let result = child.stop(by: SIGINT)
        // Cut short: otherwise the read would wait for the end of stdin, which never comes, and
        // the child be killed (no status).
        #expect(result.status == 130)
        #expect(result.stderr == "luahier: cannot read stdin: Interrupted system call\n")
    }

    @Test func anIgnoredSignalStaysIgnored() throws {
        // As a background job of a script would start: SIGINT ignored (exec keeps that). No
        // limits: only SIGTERM ends the loop.
        let script = try Luahier.script(Self.loop)
        let child = try LuahierProcess(
            ["-c", "trap '' INT; exec \"$0\" \"$@\"", Luahier.binary.path, "run"] + Self.noLimits + [script],
            executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(child.readLine() == "ready")
        // Both pending at once, SIGINT is delivered first: a handler for it would end the run
        // with 130. Ignored, it is dropped when sent, and SIGTERM ends the run.
        child.send(SIGINT)
        #expect(child.stop(by: SIGTERM).status == 143, "an ignored SIGINT stopped the script")
    }

    @Test func anErrorOfTypeInterruptedIsJustAnError() throws {
        // Whether a dispatch was interrupted is read from its budget, never from the value.
        let script = try Luahier.script("""
            local n = hier.root:child("n")
            print(n:reportError({ type = "Interrupted", message = "by the script" }).status)
            print("after")
            """)
        let result = try Luahier.run(["run", "--fail-on-unhandled", script])
        #expect(result.status == 3)
        #expect(result.stdout == "unhandled\nafter\n")
        #expect(result.stderr.contains("luahier: unhandled error reported at /n\n  Interrupted: by the script"))
        let rules = try Luahier.script(Self.slowRules)
        let input = Self.request(1) + #"{"id":2,"at":"/a","error":{"type":"Interrupted","message":"x"}}"# + "\n" + Self.request(3)
        let dispatched = try Luahier.run(["dispatch", rules], stdin: input)
        #expect(dispatched.status == 0)
        let lines = dispatched.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.count == 3 && lines[1].hasPrefix(#"{"line":2,"id":2,"status":"unhandled","kind":"error","value":{"message":"x","type":"Interrupted""#))
        #expect(dispatched.stderr == "luahier: 3 lines: 2 handled, 1 unhandled, 0 detached, 0 invalid\n")
    }

    // MARK: dispatch over time

    static let slowRules = """
        hier.root:child("a"):handleEvent(function(e)
          if e.slow then local t = os.clock() while os.clock() - t < e.slow do end end
          return "handled"
        end)
        """

    static func request(_ n: Int, slow: Double? = nil) -> String {
        #"{"id":\#(n),"at":"/a","event":{"type":"E"\#(slow.map { ",\"slow\":\($0)" } ?? "")}}"# + "\n"
    }

    @Test func aProducerThatWaitsForEachAnswerGetsIt() throws {
        let rules = try Luahier.script(Self.slowRules)
        let child = try LuahierProcess(["dispatch", rules])
        for n in 1...5 {
            child.write(Self.request(n))
            let answer = child.readLine()
            #expect(answer?.hasPrefix(#"{"line":\#(n),"id":\#(n),"status":"handled""#) == true)
        }
        child.closeInput()
        #expect(child.readRest().isEmpty)
        let result = child.finish()
        #expect(result.status == 0)
        #expect(result.stderr == "luahier: 5 lines: 5 handled, 0 unhandled, 0 detached, 0 invalid\n")
    }

    /// Line 5 runs until the test lets it end, by making a file (an event, not a length of
    /// time): answers 1-4 must come while it runs, however loaded the machine.
    @Test(arguments: [1, 2])
    func answersDoNotWaitBehindASlowLine(_ jobs: Int) throws {
        let rules = try Luahier.script("""
            hier.root:child("a"):handleEvent(function(e)
              if e.waitFor then while not io.open(e.waitFor) do end end
              return "handled"
            end)
            """)
        let release = URL(fileURLWithPath: rules).deletingLastPathComponent().appendingPathComponent("release").path
        // No limits: line 5 runs until the file is there.
        let child = try LuahierProcess(["dispatch", "--unsafe", "--jobs", "\(jobs)"] + Self.noLimits + [rules])
        // One write: lines 1-4 fast, 5 slow; with 2 jobs the batch of 4-6 holds the slow one.
        let slow = #"{"id":5,"at":"/a","event":{"type":"E","waitFor":"\#(release)"}}"# + "\n"
        child.write((1...4).map { Self.request($0) }.joined() + slow + Self.request(6))
        for n in 1...4 {
            #expect(child.readLine()?.hasPrefix(#"{"line":\#(n),"#) == true)
        }
        // Line 5 cannot have ended: answers 1-4 came while it still ran.
        #expect(!child.stdout.contains(#"{"line":5,"#), "answers 1-4 waited for line 5")
        #expect(FileManager.default.createFile(atPath: release, contents: nil))
        #expect(child.readLine()?.hasPrefix(#"{"line":5,"#) == true)
        #expect(child.readLine()?.hasPrefix(#"{"line":6,"#) == true)
        child.closeInput()
        #expect(child.finish().status == 0)
    }

    /// With two jobs lines 1-3 and 4-6 go to different workers; 5 never ends (no limits, and
    /// 1e9 s of CPU time). Every line answered is written, in order (6, after the cut 5 in its
    /// batch, never is), and the summary counts what was left.
    @Test(arguments: [(SIGINT, Int32(130), "SIGINT", 1), (SIGTERM, Int32(143), "SIGTERM", 1), (SIGINT, Int32(130), "SIGINT", 2)])
    func aSignalWritesEveryFinishedAnswerAndTheSummary(_ signal: Int32, _ status: Int32, _ name: String, _ jobs: Int) throws {
        let rules = try Luahier.script(Self.slowRules)
        let child = try LuahierProcess(["dispatch", "--jobs", "\(jobs)"] + Self.noLimits + [rules])
        child.write((1...4).map { Self.request($0) }.joined() + Self.request(5, slow: 1e9) + Self.request(6))
        for n in 1...4 {
            #expect(child.readLine()?.hasPrefix(#"{"line":\#(n),"#) == true)
        }
        // Line 5 under way, by the CPU time it burns.
        child.waitForCPU()
        child.send(signal)
        let rest = child.readRest()
        let result = child.finish()
        #expect(result.status == status)
        #expect(rest.isEmpty, "an unfinished line was answered: \(rest)")
        #expect(result.stderr == "luahier: 4 lines: 4 handled, 0 unhandled, 0 detached, 0 invalid; interrupted by \(name), 2 lines read but not answered\n")
    }

    /// stdout is a pipe the reader stopped reading: the writers block. One signal still ends
    /// the command, with its summary, whichever thread it reached (workers and the flusher
    /// write too).
    @Test(arguments: [["dispatch", "--jobs", "1"], ["dispatch", "--jobs", "2"], ["tree"], ["run"]])
    func aSignalEndsACommandWhoseOutputNobodyReads(_ command: [String]) throws {
        let rules = try Luahier.script(
            command[0] == "tree" ? "local n = hier.root for i = 1, 20000 do n:child('n' .. i):handleEvent(function() end) end"
                : command[0] == "run" ? "local line = ('x'):rep(1000) for i = 1, 1e9 do print(i, line) end"
                : Self.slowRules)
        // No limits: only the signal ends it, however late it comes.
        var arguments = command + Self.noLimits + [rules]
        if command[0] == "dispatch" {
            let input = URL(fileURLWithPath: rules).deletingLastPathComponent().appendingPathComponent("in.jsonl")
            try String(repeating: Self.request(1), count: 100_000).write(to: input, atomically: true, encoding: .utf8)
            arguments.append(input.path)
        }
        let child = try LuahierProcess(arguments, stdout: .unread)
        // The pipe is full: the next write to stdout blocks.
        #expect(child.waitUntilStdoutIsFull())
        let result = child.stop(by: SIGTERM)
        // Ended by the signal at all: blocked writers would otherwise hold it until the kill
        // (no status).
        #expect(result.status == 143)
        switch command[0] {
        case "dispatch":
            #expect(result.stderr.contains("interrupted by SIGTERM"))
            #expect(result.stderr.hasSuffix("; stopped writing: the output was not being read\n"))
        case "run":
            #expect(result.stderr.hasPrefix("luahier: \(rules):1: interrupted\nstack traceback:\n"))
        default:
            #expect(result.stderr == "luahier: interrupted\n")
        }
    }

    @Test func aSignalWhileTheRulesLoadStillGivesTheSummary() throws {
        // The load never ends (no limits): only the signal stops it.
        let rules = try Luahier.script("""
            print("loading")
            while true do end
            """)
        let child = try LuahierProcess(["dispatch"] + Self.noLimits + [rules])
        // In the loop: "loading" printed (on stdout or stderr), then CPU time burnt.
        #expect(Luahier.eventually { (child.stdout + child.stderr).contains("loading") })
        child.waitForCPU()
        let result = child.stop(by: SIGINT)
        #expect(result.status == 130)
        #expect(result.stderr.contains("\(rules):2: interrupted"))
        #expect(result.stderr.hasSuffix("luahier: 0 lines: 0 handled, 0 unhandled, 0 detached, 0 invalid; interrupted by SIGINT, 0 lines read but not answered\n"))
    }

    /// SIGHUP (a closed terminal or session) stops `dispatch` as SIGTERM does: the answers
    /// made are written and summed up, exit 129. It ended the process the default way, and
    /// answers its decision log held as answered were never written (an attacker's find).
    @Test func aHangUpEndsTheRunKeepingWhatWasAnswered() throws {
        let rules = try Luahier.script(Self.slowRules)
        let child = try LuahierProcess(["dispatch", rules])
        child.write(Self.request(1))
        #expect(child.readLine()?.hasPrefix(#"{"line":1,"#) == true)
        let result = child.stop(by: SIGHUP)
        #expect(result.status == 129)
        #expect(result.stderr == "luahier: 1 line: 1 handled, 0 unhandled, 0 detached, 0 invalid; interrupted by SIGHUP, 0 lines read but not answered\n")
    }

    @Test func aSignalWhileWaitingForInputEndsTheRun() throws {
        let rules = try Luahier.script(Self.slowRules)
        let child = try LuahierProcess(["dispatch", rules])
        child.write(Self.request(1))
        #expect(child.readLine()?.hasPrefix(#"{"line":1,"#) == true)
        let result = child.stop(by: SIGINT)
        #expect(result.status == 130)
        #expect(result.stderr == "luahier: 1 line: 1 handled, 0 unhandled, 0 detached, 0 invalid; interrupted by SIGINT, 0 lines read but not answered\n")
    }

    // MARK: The man page

    /// `docs/luahier.1` is generated (`tools/manpage.sh`) from what `--experimental-dump-help`
    /// prints, whose SHA-256 it records: a change to any command's definition without a new
    /// man page fails here.
    @Test func theManPageIsCurrent() throws {
        let dump = try Luahier.run(["--experimental-dump-help"])
        #expect(dump.status == 0)
        let page = try String(contentsOf: Luahier.packageRoot.appendingPathComponent("docs/luahier.1"), encoding: .utf8)
        let recorded = try #require(page.firstMatch(of: /generated from help with SHA-256 ([0-9a-f]{64})/)?.1)
        #expect(String(recorded) == (try Luahier.sha256(dump.stdout)))
        for word in ["luahier", "dispatch", "max-memory", "fail-on-unhandled", "Exit codes"] {
            #expect(page.contains(word), "the man page lacks \(word)")
        }
    }
}
