import Testing
@testable import LuaHierarchy

@Suite("Alertable errors and recovery (contract §3, §6)")
struct AlertTests {
    final class Shown {
        var alerts: [Alert] = []
    }

    /// A fixture whose alert presenter records each alert and answers `hostChoice`.
    private func fixture(hostChoice: String?, _ source: String) throws -> (Fixture, Shown) {
        let f = try Fixture()
        let shown = Shown()
        f.hierarchy.alertPresenter = { alert in
            shown.alerts.append(alert)
            return hostChoice
        }
        try f.lua(source)
        return (f, shown)
    }

    private let plain = """
        local app = hier.root:child("app")
        app:handleAlertErrors()
        app:receiveError(function(e) print("passed the alert handler: " .. e.type) return "handled" end)
        function report(err)
            local o = app:child("upload"):reportError(err)
            print(o.status, o.kind, o.by, o.responder.kind, o.responder.where, o.choice)
        end
        """

    @Test func onlyErrorsWithATitleAreHandled() throws {
        let (f, shown) = try fixture(hostChoice: nil, plain)
        let lines = try f.output("""
            report("a bare string")
            report({type = "Disk", message = "full"})
            report({type = "Disk", title = 42, message = "a title must be a string"})
            report({type = "Upload", title = "Upload failed", message = "The server did not answer."})
            print(app, hier.node("/app"):triggerEvent({type = "Note", title = "events are not alerts"}).status)
            """)
        #expect(lines == [
            "passed the alert handler: Error", "handled\terror\t/app\treceiveError\ttest.lua:3\tnil",
            "passed the alert handler: Disk", "handled\terror\t/app\treceiveError\ttest.lua:3\tnil",
            "passed the alert handler: Disk", "handled\terror\t/app\treceiveError\ttest.lua:3\tnil",
            "handled\terror\t/app\thandleAlertErrors\ttest.lua:2\tnil",
            "nil\tunhandled",
        ])
        #expect(shown.alerts.count == 1)
        let alert = try #require(shown.alerts.first)
        #expect(alert.title == "Upload failed")
        #expect(alert.message == "The server did not answer.")
        #expect(alert.recovery.isEmpty && alert.scriptChoice == nil)
        #expect(alert.handledBy == "/app" && alert.reportedAt == "/app/upload")
        #expect(alert.error["type"] == "Upload")
    }

    @Test func theHostChoosesAmongTheOptions() throws {
        let (f, shown) = try fixture(hostChoice: "Retry", plain)
        let lines = try f.output("""
            report({title = "Upload failed", recovery = {"Retry", "Cancel"}})
            report({title = "No options"})
            """)
        #expect(lines == [
            "handled\terror\t/app\thandleAlertErrors\ttest.lua:2\tRetry",
            "handled\terror\t/app\thandleAlertErrors\ttest.lua:2\tnil",
        ])
        #expect(shown.alerts.map(\.recovery) == [["Retry", "Cancel"], []])
        #expect(shown.alerts[0].message == nil)
    }

    @Test func theScriptsChoiceWinsAndIsShown() throws {
        let (f, shown) = try fixture(hostChoice: "Cancel", """
            local app = hier.root:child("app")
            app:handleAlertErrors(function(e)
                if e.auto then return e.auto end
            end)
            app:receiveError(function(e)
                print("next responder: " .. e.type .. ": " .. e.message)
                if e.cause then print("  cause: " .. e.cause.type) end
                return "handled"
            end)
            function report(err)
                local o = app:reportError(err)
                print(o.status, o.responder.kind, o.choice)
            end
            """)
        let lines = try f.output("""
            report({title = "T", recovery = {"Retry", "Cancel"}, auto = "Retry"})
            report({title = "T", recovery = {"Retry", "Cancel"}})
            report({type = "Upload", title = "T", recovery = {"Retry", "Cancel"}, auto = "Later"})
            """)
        #expect(lines == [
            "handled\thandleAlertErrors\tRetry",
            "handled\thandleAlertErrors\tCancel",
            #"next responder: ResponderContractError: handleAlertErrors responder at test.lua:2 returned "Later"; expected nil or one of the error's recovery options (Retry, Cancel)"#,
            "  cause: Upload",
            "handled\treceiveError\tnil",
        ])
        #expect(shown.alerts.map(\.scriptChoice) == ["Retry", nil])
    }

    @Test func anErrorRaisedInTheHandlerContinuesAtTheNextResponder() throws {
        let (f, shown) = try fixture(hostChoice: nil, """
            local app = hier.root:child("app")
            app:handleAlertErrors(function(e) error({type = "Broken", message = "while alerting"}) end)
            app:receiveError("Broken", function(e) print(e.message, e.cause.title, e.where) return "handled" end)
            app:reportError({title = "T"})
            """)
        #expect(f.printed == ["while alerting\tT\ttest.lua:2"])
        #expect(shown.alerts.isEmpty)
        #expect(f.failure("hier.root:handleAlertErrors('x')")?.description.hasPrefix("test.lua:1: bad argument #1 to 'handleAlertErrors' (function expected") == true)
        #expect(f.failure("hier.root:handleAlertErrors(print, print)")?.description == "test.lua:1: handleAlertErrors takes ([function]), got 2 arguments")
    }

    @Test func swiftAlertHandlers() throws {
        let (f, shown) = try fixture(hostChoice: "Cancel", "")
        let app = try f.hierarchy.makeNode(at: "/app")
        app.handleAlertErrors { error in error["retryable"] == true ? "Retry" : nil }
        let options: Value = ["Retry", "Cancel"]
        let chosen = try f.hierarchy.report(.map(["title": "T", "recovery": options, "retryable": true]), at: "/app")
        #expect(chosen.status == .handled && chosen.choice == "Retry" && chosen.responder?.kind == .handleAlertErrors)
        #expect(try f.hierarchy.report(.map(["title": "T", "recovery": options]), at: "/app").choice == "Cancel")
        #expect(try f.hierarchy.report("no title", at: "/app").status == .unhandled)
        #expect(shown.alerts.count == 2)
        // Without a presenter nothing is shown and the host chooses nothing.
        f.hierarchy.alertPresenter = nil
        #expect(try f.hierarchy.report(.map(["title": "T", "recovery": options]), at: "/app").choice == nil)
    }
}
