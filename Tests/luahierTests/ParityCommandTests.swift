import Foundation
import Testing

/// Publishing, safety, alerts and the detached policy as the CLI shows them (contract §6, §8).
@Suite("luahier run: alerts, safety warnings, detached errors", .ownThreads)
struct ParityCommandTests {
    private let upload = """
        local app = hier.root:child("app")
        app:handleAlertErrors()
        local o = app:child("upload"):reportError({
            type = "UploadFailed", title = "Upload failed",
            message = "The server did not answer.", recovery = {"Retry", "Cancel"},
        })
        print(o.status, o.choice)
        """

    private func box(chosen: String) -> String {
        let lines = ["Upload failed", "The server did not answer.", "", "Options: Retry, Cancel", "Chosen:  " + chosen]
        let width = max(30, lines.map(\.count).max()!)
        return (["┌─ Alert " + String(repeating: "─", count: width - 6) + "┐"]
            + lines.map { "│ " + $0.padding(toLength: width, withPad: " ", startingAt: 0) + " │" }
            + ["└" + String(repeating: "─", count: width + 2) + "┘", "  reported at /app/upload, handled by /app", ""])
            .joined(separator: "\n")
    }

    @Test func anAlertIsABoxOnStderrAndRecoverChooses() throws {
        let script = try Luahier.script(upload)
        let chosen = try Luahier.run(["run", "--recover", "Retry", script])
        #expect(chosen.status == 0)
        #expect(chosen.stdout == "handled\tRetry\n")
        #expect(chosen.stderr == box(chosen: "Retry (--recover)"))

        let unchosen = try Luahier.run(["run", script])
        #expect(unchosen.stdout == "handled\tnil\n")
        #expect(unchosen.stderr == box(chosen: "none (pass --recover OPTION to choose)"))

        let wrong = try Luahier.run(["run", "--recover", "Later", script])
        #expect(wrong.stdout == "handled\tnil\n")
        #expect(wrong.stderr == box(chosen: "none (--recover Later is not one of the options)"))
    }

    @Test func theScriptsChoiceIsShownAsSuch() throws {
        let script = try Luahier.script(upload.replacingOccurrences(of: "app:handleAlertErrors()", with: "app:handleAlertErrors(function() return 'Cancel' end)"))
        let result = try Luahier.run(["run", "--recover", "Retry", script])
        #expect(result.stdout == "handled\tCancel\n")
        #expect(result.stderr.contains("│ Chosen:  Cancel (by the script)"))
    }

    @Test func longAlertTextIsWrappedInsideTheBox() throws {
        let script = try Luahier.script("""
            hier.root:handleAlertErrors()
            hier.root:reportError({title = "T", message = string.rep("word ", 40) .. "\\nsecond\\tline"})
            """)
        let result = try Luahier.run(["run", script])
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let inside = lines.dropLast().filter { $0.hasPrefix("│") }
        #expect(inside.count == 6)  // the title, 4 lines of words (13, 13, 13, 1), "second line"
        #expect(Set(lines.dropLast().map(\.count)).count == 1, "every line of the box is as wide")
        #expect(inside.last?.hasPrefix("│ second line ") == true)
    }

    @Test func relaxedSafetyWarnsOnStderrOnce() throws {
        let script = try Luahier.script("""
            local app = hier.root:child("app")
            app:triggers{"Tap"}
            for i = 1, 3 do app:child("x"):triggerEvent("Swipe") end
            print("done")
            """)
        let result = try Luahier.run(["run", script])
        #expect(result.status == 0)
        #expect(result.stdout == "done\n")
        #expect(result.stderr == "luahier: warning: safety: event 'Swipe' (from /app/x) passed /app, which triggers only {Tap} (\(script):2)\n")
    }

    @Test func detachedErrorsArePresentedOnlyUnderThePresenterPolicy() throws {
        let source = """
            local cut = hier.root:child("cut")
            cut:remove()
            print(cut:reportError({type = "Lost", message = "nobody listens"}).status)
            """
        let dropped = try Luahier.run(["run", "--fail-on-unhandled", try Luahier.script(source)])
        #expect(dropped.status == 0)
        #expect(dropped.stdout == "detached\n")
        #expect(dropped.stderr.isEmpty)
        let script = try Luahier.script("hier.detached = 'presenter'\n" + source)
        let presented = try Luahier.run(["run", "--fail-on-unhandled", script])
        #expect(presented.status == 3)
        #expect(presented.stdout == "detached\n")
        #expect(presented.stderr.hasPrefix("""
            luahier: unhandled error in a detached subtree, reported at cut
              Lost: nobody listens (\(script):4)
            """))
    }
}

@Suite("luahier dispatch: alerts and safety", .ownThreads)
struct DispatchParityTests {
    @Test func anAlertsChoiceIsInTheOutcomeLineAndStrictSafetyApplies() throws {
        let rules = try Luahier.script("""
            local app = hier.root:child("app")
            hier.safety = "strict"
            app:reports{"Upload"}
            app:handleAlertErrors(function(e) if e.auto then return "Retry" end end)
            app:receiveError("SafetyViolation", function() return "handled" end)
            """, name: "rules.lua")
        let result = try Luahier.run(["dispatch", rules], stdin: [
            #"{"at": "/app", "error": {"type": "Upload", "title": "T", "recovery": ["Retry", "Cancel"], "auto": true}}"#,
            #"{"at": "/app", "error": {"type": "Upload", "title": "T", "recovery": ["Retry", "Cancel"]}}"#,
            #"{"at": "/app", "error": {"type": "Disk", "message": "m"}}"#,
        ].joined(separator: "\n") + "\n")
        #expect(result.status == 0)
        let lines = try DispatchCommandTests.outcomes(result)
        #expect(lines.map { $0["choice"] as? String } == ["Retry", nil, nil])
        #expect(lines.map { $0["status"] as? String } == ["handled", "handled", "handled"])
        #expect((lines[2]["value"] as? [String: Any])?["type"] as? String == "SafetyViolation")
        // No box in the rules engine: stderr has only the summary.
        #expect(result.stderr == "luahier: 3 lines: 3 handled, 0 unhandled, 0 detached, 0 invalid\n")
    }
}
