import Foundation
import Testing

@Suite("luahier run (contract §8)", .ownThreads)
struct RunCommandTests {
    @Test func helpExitsZeroAndDocumentsExitCodes() throws {
        let top = try Luahier.run(["--help"])
        #expect(top.status == 0)
        #expect(top.stdout.contains("run"))
        #expect(top.stdout.contains("3    with --fail-on-unhandled"))
        #expect(top.stdout.contains("130  interrupted by SIGINT"))
        let run = try Luahier.run(["run", "--help"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("--fail-on-unhandled"))
        #expect(run.stdout.contains("--trace"))
    }

    @Test func usageErrorsExitTwo() throws {
        let missing = try Luahier.run(["run", "no/such/script.lua"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no such file: no/such/script.lua"))
        #expect(missing.stdout.isEmpty)
        let script = try Luahier.script("print('x')")
        let unknown = try Luahier.run(["run", "--bogus", script])
        #expect(unknown.status == 2)
        #expect(unknown.stderr == "luahier: unknown option '--bogus'\nluahier: see 'luahier run --help'\n")
        #expect(try Luahier.run(["run"]).status == 2)
        #expect(try Luahier.run(["frobnicate"]).status == 2)
    }

    @Test func aScriptThatRunsExitsZeroWithItsOutputOnStdout() throws {
        let script = try Luahier.script("""
            local n = hier.root:child("n")
            n:handleEvent(function(e) print("handled " .. e.type) end)
            print(n:triggerEvent("Tap").status)
            """)
        let result = try Luahier.run(["run", script])
        #expect(result.status == 0)
        #expect(result.stdout == "handled Tap\nhandled\n")
        #expect(result.stderr.isEmpty)
    }

    @Test func syntaxErrorsExitOneNamingFileAndLine() throws {
        let script = try Luahier.script("local ok = 1\nlocal = 2\n", name: "broken.lua")
        let result = try Luahier.run(["run", script])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("luahier: \(script):2: "))
        #expect(result.stderr.contains("near '='"))
        #expect(!result.signaled)
    }

    @Test func runtimeErrorsExitOneWithATraceback() throws {
        let script = try Luahier.script("local function f(t)\n  return t.x\nend\nf(nil)\n", name: "crash.lua")
        let result = try Luahier.run(["run", script])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "luahier: \(script):2: attempt to index a nil value (local 't')")
        #expect(lines.contains("stack traceback:"))
        #expect(lines.contains { $0.contains("crash.lua:4: in main chunk") })
        #expect(result.stderr.components(separatedBy: "luahier:").count == 2, "the error is printed once")
    }

    @Test func unhandledErrorsArePresentedOnStderrAndExitThreeOnlyWhenAsked() throws {
        let script = try Luahier.script("""
            local team = hier.root:child("org"):child("team")
            team:transformError(function(e) return {type = "Escalated", message = "team gave up"} end)
            team:reportError({type = "Outage", message = "db down"})
            print("still running")
            """, name: "escalate.lua")
        let plain = try Luahier.run(["run", script])
        #expect(plain.status == 0)
        #expect(plain.stdout == "still running\n")
        #expect(plain.stderr == """
            luahier: unhandled error reported at /org/team
              Escalated: team gave up (\(script):2)
              caused by Outage: db down (\(script):3)

            """)
        let strict = try Luahier.run(["run", "--fail-on-unhandled", script])
        #expect(strict.status == 3)
        #expect(strict.stderr.hasSuffix("luahier: 1 error(s) reached the root unhandled\n"))
        #expect(strict.stdout == "still running\n")
    }

    @Test func handledErrorsDoNotFailTheRun() throws {
        let script = try Luahier.script("""
            hier.root:handleError(function() end)
            hier.root:child("x"):reportError("fine")
            """)
        let result = try Luahier.run(["run", "--fail-on-unhandled", script])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
    }

    @Test func argumentsAfterTheTerminatorReachTheScript() throws {
        let script = try Luahier.script("print(#arg, arg[1], arg[2], select('#', ...), (...))")
        let result = try Luahier.run(["run", script, "--", "one", "--two"])
        #expect(result.status == 0)
        #expect(result.stdout == "2\tone\t--two\t2\tone\n")
    }

    @Test func traceFlagPrintsEveryStepOnStderr() throws {
        let script = try Luahier.script("""
            local n = hier.root:child("n")
            n:receiveEvent(function() return "notHandled" end)
            hier.root:handleEvent(function() end)
            n:triggerEvent("Tap")
            """, name: "t.lua")
        let result = try Luahier.run(["run", "--trace", script])
        #expect(result.status == 0)
        #expect(result.stderr == """
            trace: at /n -> handled by / #1 handleEvent (\(script):3), ends as event Tap
              /n #1 receiveEvent (\(script):2): Tap -> notHandled
              / #1 handleEvent (\(script):3): Tap -> handled

            """)
        #expect(try Luahier.run(["run", script]).stderr.isEmpty, "no trace without --trace")
    }

    @Test func requireHierWorksFromTheCLI() throws {
        let script = try Luahier.script("local h = require('hier'); print(h == hier, h.root.path)")
        #expect(try Luahier.run(["run", script]).stdout == "true\t/\n")
    }
}
