import Testing
@testable import LuaHierarchy

/// /app declares Tap (events) and Timeout (errors); /app/settings, nested, declares Save.
private let declared = """
    local app = hier.root:child("app")
    app:triggers{"Tap"}
    app:reports{"Timeout"}
    local settings = app:child("settings")
    settings:triggers{"Save"}
    settings:child("form")
    app:child("feed")
    hier.root:receiveEvent(function() return "handled" end)
    hier.root:receiveError(function() return "handled" end)
    function try(kind, at, value)
        local node = hier.node(at)
        local outcome = kind == "event" and node:triggerEvent(value) or node:reportError(value)
        local v = outcome.value
        local text = outcome.kind .. " " .. v.type
        if v.type == "SafetyViolation" then
            text = text .. " at " .. v.node .. " for " .. v.undeclared .. " (" .. v.where .. ")"
        end
        print(text)
        return outcome
    end
    """

@Suite("Safety declarations (contract §6)")
struct SafetyTests {
    final class Warnings {
        var list: [SafetyWarning] = []
    }

    private func fixture(_ level: String?) throws -> (Fixture, Warnings) {
        let f = try Fixture()
        let warnings = Warnings()
        f.hierarchy.onSafetyWarning = { warnings.list.append($0) }
        try f.lua(declared + (level.map { "\nhier.safety = '\($0)'" } ?? ""))
        return (f, warnings)
    }

    @Test func relaxedIsTheDefaultAndWarnsOncePerTypeAndNode() throws {
        let (f, warnings) = try fixture(nil)
        let lines = try f.output("""
            print(hier.safety)
            try("event", "/app/feed", "Tap")
            try("event", "/app/feed", "Swipe")
            try("event", "/app/feed", "Swipe")
            try("error", "/app/feed", {type = "Disk", message = "full"})
            try("event", "/", "Swipe")
            """)
        #expect(lines == ["relaxed", "event Tap", "event Swipe", "event Swipe", "error Disk", "event Swipe"])
        #expect(warnings.list.count == 2)
        let first = try #require(warnings.list.first)
        #expect(first == SafetyWarning(domain: .event, type: "Swipe", node: "/app", declared: ["Tap"], declaredAt: "test.lua:2", reportedAt: "/app/feed"))
        #expect(first.description == "safety: event 'Swipe' (from /app/feed) passed /app, which triggers only {Tap} (test.lua:2)")
        #expect(warnings.list[1].domain == .error && warnings.list[1].type == "Disk" && warnings.list[1].declaredAt == "test.lua:3")
    }

    @Test func strictReplacesTheValueWithASafetyViolationAtTheDeclaringNode() throws {
        let (f, warnings) = try fixture("strict")
        try f.lua("""
            hier.node("/app"):receiveError("SafetyViolation", function(e)
                print("app saw " .. e.domain .. " " .. e.undeclared .. ", declared " .. table.concat(e.declared, ","))
                return "notHandled"
            end)
            """)
        let lines = try f.output("""
            try("event", "/app/feed", "Tap")
            local o = try("event", "/app/feed", {type = "Swipe", x = 1})
            print(o.value.event.type, o.value.event.x, o.value.cause)
            o = try("error", "/app/feed", {type = "Disk", message = "full"})
            print(o.value.cause.type, o.value.cause.message)
            try("error", "/app/feed", {type = "Timeout", message = "slow"})
            """)
        #expect(lines == [
            "event Tap",
            "app saw event Swipe, declared Tap",
            "error SafetyViolation at /app for Swipe (test.lua:2)",
            "Swipe\t1\tnil",
            "app saw error Disk, declared Timeout",
            "error SafetyViolation at /app for Disk (test.lua:3)",
            "Disk\tfull",
            "error Timeout",
        ])
        #expect(warnings.list.isEmpty)
    }

    @Test func disabledChecksNothing() throws {
        let (f, warnings) = try fixture("disabled")
        let lines = try f.output("""
            try("event", "/app/feed", "Swipe") try("error", "/app/feed", "boom")
            """)
        #expect(lines == ["event Swipe", "error Error"])
        #expect(warnings.list.isEmpty)
    }

    @Test func nestedDeclarationsComposeOnBothSides() throws {
        let (f, _) = try fixture("strict")
        try f.lua("""
            local settings = hier.node("/app/settings")
            settings:reports{"Invalid"}
            """)
        let lines = try f.output("""
            try("event", "/app/settings/form", "Save")    -- declared below /app: passes both
            try("event", "/app/feed", "Save")             -- not on its way: /app refuses it
            try("event", "/app/settings/form", "Tap")     -- /app/settings declares only Save
            try("error", "/app/settings/form", {type = "Invalid", message = "m"})
            try("error", "/app/feed", {type = "Invalid", message = "m"})
            try("error", "/app/settings/form", {type = "Timeout", message = "m"})
            """)
        #expect(lines == [
            "event Save",
            "error SafetyViolation at /app for Save (test.lua:2)",
            "error SafetyViolation at /app/settings for Tap (test.lua:5)",
            "error Invalid",
            "error SafetyViolation at /app for Invalid (test.lua:3)",
            "error SafetyViolation at /app/settings for Timeout (test.lua:2)",
        ])
    }

    @Test func aValueIsJudgedAsItArrivesSoReplacementsAreCheckedToo() throws {
        let (f, _) = try fixture("strict")
        try f.lua("""
            hier.node("/app/feed"):transformEvent("Tap", function() return {type = "Scroll"} end)
            """)
        #expect(try f.output(#"try("event", "/app/feed", "Tap")"#) == ["error SafetyViolation at /app for Scroll (test.lua:2)"])
        // A SafetyViolation is never judged itself, even by a node that declares errors.
        #expect(try f.output(#"hier.root:reports{"Other"} try("event", "/app/feed", "Swipe")"#) == [
            "error SafetyViolation at /app for Swipe (test.lua:2)"
        ])
    }

    @Test func swiftDeclarationsAndSettings() throws {
        let f = try Fixture()
        let warnings = Warnings()
        f.hierarchy.onSafetyWarning = { warnings.list.append($0) }
        let app = try f.hierarchy.makeNode(at: "/app")
        app.declareTriggers(["Tap", "Pinch"])
        app.declareTriggers(["Tap"])
        #expect(app.declaredTypes(.event) == ["Pinch", "Tap"])
        #expect(app.declaredTypes(.error).isEmpty)
        _ = try f.hierarchy.trigger("Swipe", at: "/app")
        #expect(warnings.list.first?.declaredAt.hasPrefix("LuaHierarchyTests/SafetyTests.swift:") == true)
        f.hierarchy.safety = .strict
        #expect(try f.output("print(hier.safety)") == ["strict"])
        #expect(try f.hierarchy.trigger("Swipe", at: "/app").value["type"] == "SafetyViolation")
        #expect(f.presented.last?.error["undeclared"] == "Swipe")
    }

    /// `declareReports` is `node:reports{...}` in Swift (docs/lua-api.md, declared types): the error
    /// types it declares add up, and the run-time check holds reported errors to them.
    @Test func swiftDeclaresReportedErrorTypes() throws {
        let f = try Fixture()
        let warnings = Warnings()
        f.hierarchy.onSafetyWarning = { warnings.list.append($0) }
        let app = try f.hierarchy.makeNode(at: "/app")
        app.declareReports(["Timeout", "Conflict"])
        app.declareReports(["Timeout"])
        #expect(app.declaredTypes(.error) == ["Conflict", "Timeout"])
        #expect(app.declaredTypes(.event).isEmpty)
        _ = try f.hierarchy.report(["type": "Conflict", "message": "declared"], at: "/app")
        #expect(warnings.list.isEmpty)
        _ = try f.hierarchy.report(["type": "Lost", "message": "undeclared"], at: "/app")
        let warning = try #require(warnings.list.first)
        #expect(warning.domain == .error && warning.type == "Lost" && Set(warning.declared) == ["Conflict", "Timeout"])
        #expect(warning.declaredAt.hasPrefix("LuaHierarchyTests/SafetyTests.swift:"))
        f.hierarchy.safety = .strict
        let outcome = try f.hierarchy.report(["type": "Lost", "message": "undeclared"], at: "/app")
        #expect(outcome.value["type"] == "SafetyViolation")
        #expect(outcome.value["cause"]?["type"] == "Lost")
    }

    @Test func badDeclarationsAndSettingsAreClearErrors() throws {
        let f = try Fixture()
        let cases: [(String, String)] = [
            ("hier.root:triggers()", #"test.lua:1: triggers takes a list of type names, as in node:triggers{"A", "B"}"#),
            ("hier.root:reports{1}", "test.lua:1: bad argument #1 to 'reports' (filter list must hold type names (strings)"),
            ("hier.safety = 'loose'", #"test.lua:1: hier.safety takes "strict", "relaxed" or "disabled""#),
            ("hier.detached = true", #"test.lua:1: hier.detached takes "drop" or "presenter""#),
        ]
        for (source, expected) in cases {
            let error = try #require(f.failure(source))
            #expect(error.description.hasPrefix(expected), "\(source): \(error.description)")
        }
    }
}

@Suite("Detached-chain policy (contract §2)")
struct DetachedPolicyTests {
    private let script = """
        local cut = hier.root:child("a"):child("cut")
        cut:child("leaf")
        cut:remove()
        function fail() return cut:child("leaf"):reportError({type = "Lost", message = "m"}).status end
        """

    @Test func dropIsTheDefault() throws {
        let f = try Fixture(script)
        #expect(try f.output("print(hier.detached, fail())") == ["drop\tdetached"])
        #expect(f.presented.isEmpty)
    }

    @Test func presenterPolicyPresentsMarkedAsDetached() throws {
        let f = try Fixture(script)
        #expect(try f.output("hier.detached = 'presenter' print(hier.detached, fail())") == ["presenter\tdetached"])
        let presented = try #require(f.presented.first)
        #expect(presented.detached)
        #expect(presented.reportedAt == "cut/leaf")
        #expect(presented.error["type"] == "Lost")
        // Attached chains are presented as before, not marked.
        _ = try f.hierarchy.report("boom", at: "/a")
        #expect(f.presented.count == 2 && f.presented[1].detached == false)
        // Events are never presented; re-attaching restores the chain.
        try f.lua("hier.node('/a'):child('x'):remove()")
        f.hierarchy.detachedPolicy = .drop
        #expect(try f.output("print(fail())") == ["detached"])
        #expect(f.presented.count == 2)
    }
}
