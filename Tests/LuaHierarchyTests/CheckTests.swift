import Testing
@testable import LuaHierarchy

/// `luahier check`'s findings, each with its clean case (contract §6, §8).
@Suite("Static checks")
struct CheckTests {
    private func findings(_ source: String) throws -> [String] {
        let f = try Fixture(source)
        return f.hierarchy.check().map(\.description)
    }

    @Test func aTreeWithoutDeclarationsOrDeadRespondersIsClean() throws {
        #expect(try findings("""
            local app = hier.root:child("app")
            app:receiveEvent("Tap", function() return "handled" end)
            app:handleEvent(function() end)
            app:receiveError(function() return "notHandled" end)
            """).isEmpty)
    }

    @Test func requireExplicitResponders() throws {
        #expect(try findings("""
            local app = hier.root:child("app")
            app:triggers{"Tap", "Save"}
            app:reports{"Timeout"}
            app:handleEvent(function() end)                 -- untyped: does not count
            app:child("feed"):receiveEvent("Save", function() return "handled" end)  -- below: does not count
            """) == [
                "test.lua:2: (requireExplicitResponders) /app triggers 'Save', but no event responder that can run at /app or above names it in its filter",
                "test.lua:2: (requireExplicitResponders) /app triggers 'Tap', but no event responder that can run at /app or above names it in its filter",
                "test.lua:3: (requireExplicitResponders) /app reports 'Timeout', but no error responder that can run at /app or above names it in its filter",
            ])
        // Clean: named at the node (in a list filter) or above, in the right domain.
        #expect(try findings("""
            local app = hier.root:child("app")
            app:triggers{"Tap", "Save"}
            app:reports{"Timeout"}
            app:receiveEvent({"Tap", "Save"}, function() return "handled" end)
            hier.root:handleEvent("Save", function() end)
            hier.root:catchError("Timeout", function() return "Retry" end)
            """).isEmpty)
    }

    @Test func aDeclaredTypeOnlyAnUnreachableResponderNamesIsStillMissing() throws {
        #expect(try findings("""
            local app = hier.root:child("app")
            app:triggers{"Tap"}
            app:handleEvent(function() end)
            app:receiveEvent("Tap", function() return "handled" end)
            """) == [
                "test.lua:2: (requireExplicitResponders) /app triggers 'Tap', but no event responder that can run at /app or above names it in its filter",
                "test.lua:4: (unreachableResponder) #2 receiveEvent on /app never runs: #1 handleEvent (test.lua:3) takes every event before it",
            ])
    }

    @Test func unreachableResponders() throws {
        #expect(try findings("""
            local n = hier.root:child("n")
            n:handleError(function() end)
            n:receiveEvent(function() return "notHandled" end)   -- events still arrive
            n:catchError(function() return "E" end)             -- never: errors stop at #1
            n:handleEvent(function() end)
            n:transformEvent(function(e) return e end)          -- never
            n:receiveError("X", function() return "handled" end) -- never
            """) == [
                "test.lua:4: (unreachableResponder) #3 catchError on /n never runs: #1 handleError (test.lua:2) takes every error before it",
                "test.lua:6: (unreachableResponder) #5 transformEvent on /n never runs: #4 handleEvent (test.lua:5) takes every event before it",
                "test.lua:7: (unreachableResponder) #6 receiveError on /n never runs: #1 handleError (test.lua:2) takes every error before it",
            ])
        // Clean: a typed handle stops only its types; a catchError after an untyped
        // handleEvent makes events arrive again; alert handlers take only alertable errors.
        #expect(try findings("""
            local n = hier.root:child("n")
            n:handleEvent("Tap", function() end)
            n:receiveEvent(function() return "notHandled" end)
            n:handleEvent(function() end)
            n:catchError(function() return "Recovered" end)
            n:receiveEvent("Recovered", function() return "handled" end)
            n:handleAlertErrors()
            n:receiveError(function() return "handled" end)
            """).isEmpty)
    }

    @Test func unknownTypes() throws {
        #expect(try findings("""
            local app = hier.root:child("app")
            app:triggers{"Tap"}
            app:reports{"Timeout"}
            app:receiveEvent("Tap", function() return "handled" end)
            app:receiveEvent({"Tap", "Tapp"}, function() return "handled" end)
            app:receiveError("Timeout", function() return "handled" end)
            app:transformError("Timout", function(e) return e end)
            app:receiveError("LuaError", function() return "handled" end)    -- a host type: known
            app:child("x"):subscribe("Refresh", function() end)             -- published: not judged
            """) == [
                "test.lua:5: (unknownType) #2 receiveEvent on /app filters 'Tapp', which no node triggers (declared: Tap)",
                "test.lua:7: (unknownType) #4 transformError on /app filters 'Timout', which no node reports (declared: Timeout)",
            ])
        // Clean: without declarations of a domain, its filters are not judged.
        #expect(try findings("""
            local app = hier.root:child("app")
            app:triggers{"Tap"}
            app:receiveEvent("Tap", function() return "handled" end)
            app:receiveError("Anything", function() return "handled" end)
            """).isEmpty)
    }

    @Test func theDescriptionListsNodesInPreorderWithEverything() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            a:receiveEvent({"B", "A"}, function() return "handled" end)
            a:child("x"):subscribe("P", function() end)
            a:reports{"E"}
            hier.root:child("b")
            """)
        let tree = f.hierarchy.describeTree()
        #expect(tree.entries.indices.map(tree.path(of:)) == ["/", "/a", "/a/x", "/b"])
        var built: [String] = []
        tree.forEachPath { _, path in built.append(path) }
        #expect(built == ["/", "/a", "/a/x", "/b"])
        #expect(tree.entries.map(\.parent) == [nil, 0, 1, 0])
        #expect(tree.entries.map(\.isLastChild) == [true, false, true, true])
        #expect(tree.entries[1].responders == [.init(index: 1, kind: .receiveEvent, filter: ["A", "B"], location: "test.lua:2")])
        #expect(tree.entries[2].subscriptions == [.init(types: ["P"], location: "test.lua:3")])
        #expect(tree.entries[1].reports.map(\.type) == ["E"] && tree.entries[1].reports.map(\.location) == ["test.lua:4"])
    }

    /// A deep chain: text lines stay short, JSON names parents by index (no paths past the
    /// top's), paths come out right at every depth.
    @Test func deepTreesStayBounded() throws {
        let f = try Fixture()
        var node = f.hierarchy.root
        for level in 0..<1_000 { node = try node.child("n\(level)") }
        node.receiveEvent { _ in .handled }
        let tree = f.hierarchy.describeTree()
        let lines = tree.text().split(separator: "\n")
        #expect(lines.count == 1_002)
        #expect(lines.map(\.count).max()! < 4 * TreeDescription.drawnLevels + 100)
        #expect(lines[1_000] == "⋯ " + String(repeating: "    ", count: TreeDescription.drawnLevels) + "└── n999")
        #expect(tree.path(of: 1_000).hasSuffix("/n998/n999"))
        var last = ""
        tree.forEachPath { _, path in last = path }
        #expect(last == tree.path(of: 1_000))
        let json = tree.json()
        #expect(json.hasSuffix(#"],"version":2}"# + "\n"))
        #expect(json.contains(#"{"depth":1000,"name":"n999","parent":999,"reports":[],"#))
        #expect(tree.dot().split(separator: "\n").count == 3 + 1_001 * 2 - 1 + 1)
    }
}
