import Testing
@testable import LuaHierarchy

/// A tree where `first`, `last` and `all` each pick a different set (and upstream's single
/// deepest level would pick only /a/b/c):
///
///     /            subscribes (never receives: it publishes)
///     ├── a        subscribes
///     │   ├── b    subscribes
///     │   │   └── c   subscribes
///     │   └── d
///     └── e
///         ├── f    subscribes twice (in order)
///         └── g    subscribes
///             └── h   subscribes to Other only
private let branches = """
    local log = {}
    function sub(path, name)
        local node = hier.root
        for part in path:gmatch("[^/]+") do node = node:child(part) end
        return node:subscribe(name or "Refresh", function(event)
            log[#log + 1] = node.path .. (event.tag and (" " .. event.tag) or "")
        end)
    end
    sub("/") sub("/a") sub("/a/b") sub("/a/b/c") hier.root:child("a"):child("d")
    sub("/e/f") sub("/e/f") sub("/e/g") sub("/e/g/h", "Other")
    function publish(at, to)
        log = {}
        local count = hier.node(at):publish({type = "Refresh"}, to and {to = to} or nil)
        print(count .. ": " .. table.concat(log, ", "))
    end
    """

@Suite("Downward publishing (contract §6)")
struct PublishTests {
    @Test func eachScopeOnATreeWhereTheyDiffer() throws {
        let f = try Fixture(branches)
        let lines = try f.output("""
            publish("/", "all") publish("/", "first") publish("/", "last") publish("/")
            """)
        #expect(lines == [
            "6: /a, /a/b, /a/b/c, /e/f, /e/f, /e/g",
            "4: /a, /e/f, /e/f, /e/g",
            "4: /a/b/c, /e/f, /e/f, /e/g",
            "6: /a, /a/b, /a/b/c, /e/f, /e/f, /e/g",
        ])
    }

    @Test func onlyTheDescendantsOfThePublisherReceive() throws {
        let f = try Fixture(branches)
        let lines = try f.output("""
            publish("/a", "all") publish("/a", "first") publish("/a", "last") publish("/a/b/c") publish("/e/g")
            """)
        #expect(lines == ["2: /a/b, /a/b/c", "1: /a/b", "1: /a/b/c", "0: ", "0: "])
    }

    @Test func orderIsDepthFirstChildrenInOrderAfterMoves() throws {
        let f = try Fixture(branches)
        // Moving /e before... /a: children keep arrival order, so /a now comes after /e.
        let lines = try f.output("""
            local a = hier.node("/a"); a:remove(); a:moveTo(hier.root)
            publish("/", "all")
            """)
        #expect(lines == ["6: /e/f, /e/f, /e/g, /a, /a/b, /a/b/c"])
    }

    @Test func filtersAndOtherTypes() throws {
        let f = try Fixture(branches)
        let lines = try f.output("""
            print(hier.root:publish("Other"), hier.root:publish({type = "Nobody"}))
            local n = hier.root:child("multi")
            n:subscribe({"X", "Y"}, function(e) print("multi got " .. e.type) end)
            print(hier.root:publish("Y", {to = "first"}), hier.root:publish("Z", {to = "last"}))
            """)
        #expect(lines == ["1\t0", "multi got Y", "1\t0"])
    }

    @Test func everySubscriberSeesTheSameTable() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            a:child("x"):subscribe("Count", function(e) e.n = e.n + 1 end)
            a:child("y"):subscribe("Count", function(e) e.n = e.n + 1 end)
            local event = {type = "Count", n = 0}
            print(a:publish(event), event.n)
            """)
        #expect(f.printed == ["2\t2"])
    }

    @Test func aSubscriberErrorIsReportedAtItsNodeAndDeliveryGoesOn() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            local x = a:child("x")
            x:subscribe("Go", function() error({type = "Broken", message = "x failed"}) end)
            a:receiveError("Broken", function(e) print("a caught " .. e.message .. " from " .. e.where) return "handled" end)
            a:child("y"):subscribe("Go", function() error("y failed") end)
            a:child("z"):subscribe("Go", function() print("z got it") end)
            print(a:publish("Go"))
            """)
        #expect(f.printed == ["a caught x failed from test.lua:3", "z got it", "3"])
        // y's error was not handled: it reached the presenter, reported at y's node.
        #expect(f.presented.count == 1)
        #expect(f.presented.first?.reportedAt == "/a/y")
        #expect(f.presented.first?.error["message"]?.stringValue?.hasSuffix("y failed") == true)
        #expect(f.presented.first?.error["where"] == "test.lua:5")
    }

    @Test func removedAndAddedDuringAPublish() throws {
        let f = try Fixture("""
            local root = hier.root
            local late
            local first = root:child("a"):subscribe("Go", function()
                print("a: removes c, adds to b")
                late:remove()
                root:child("b"):subscribe("Go", function() print("b (added during the publish)") end)
            end)
            late = root:child("c"):subscribe("Go", function() print("c (removed)") end)
            print(root:publish("Go"))
            first:remove(); first:remove()
            print(root:publish("Go"))
            print(tostring(first):match("^subscription Go %(test.lua:3%)$") ~= nil)
            """)
        #expect(f.printed == ["a: removes c, adds to b", "1", "b (added during the publish)", "1", "true"])
    }

    @Test func badArgumentsAreClearErrors() throws {
        let f = try Fixture()
        let cases: [(String, String)] = [
            ("hier.root:publish({type = 'A'}, {to = 'middle'})", #"test.lua:1: bad argument #2 to 'publish' ('to' must be "first", "last" or "all""#),
            ("hier.root:publish('A', {toward = 'all'})", "test.lua:1: bad argument #2 to 'publish' (unknown option 'toward'; the options are: to)"),
            ("hier.root:publish('A', 'all')", "test.lua:1: bad argument #2 to 'publish' (options table expected"),
            ("hier.root:publish({name = 'A'})", "test.lua:1: bad argument #1 to 'publish' (event expected, got a table without a string 'type'"),
            ("hier.root:subscribe('A')", "test.lua:1: subscribe takes (type, function), got 1 arguments"),
            ("hier.root:subscribe(nil, print)", "test.lua:1: bad argument #1 to 'subscribe' (type name or list of type names expected"),
            ("hier.root:subscribe('A', 'print')", "test.lua:1: bad argument #2 to 'subscribe' (function expected"),
        ]
        for (source, expected) in cases {
            let error = try #require(f.failure(source))
            #expect(error.description.hasPrefix(expected), "\(source): \(error.description)")
        }
        #expect(try f.output("print(hier.root:publish('A'))") == ["0"])
    }

    @Test func aSubscriberThatPublishesForeverHitsTheDepthLimit() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            a:child("b"):subscribe("Echo", function() a:publish("Echo") end)
            print(a:publish("Echo"))
            """)
        #expect(f.printed == ["1"])
        let types = f.presented.map { $0.error["type"]?.stringValue }
        #expect(types.contains("DispatchDepthExceeded"))
        #expect(try f.output("print(hier.root:publish('Echo'))") == ["1"])
    }

    @Test func aSubscriberOverItsInstructionBudgetEndsThePublish() throws {
        var options = Hierarchy.Options()
        // The publish from Swift gets the dispatch budget, far above the chunk's; no clock, so
        // the count alone ends the spin, however slowly the machine runs it.
        options.limits = Limits(instructions: 100_000, time: nil, memory: 16 << 20, dispatchInstructions: 10_000_000, dispatchTime: nil)
        let f = try Fixture(options: options)
        try f.lua("""
            hier.root:child("a"):subscribe("Spin", function() while true do end end)
            hier.root:child("b"):subscribe("Spin", function() print("never") end)
            """)
        let result = try f.hierarchy.publish("Spin", at: "/")
        #expect(result == PublishResult(delivered: 1, failed: 1))
        #expect(f.presented.first?.error["type"] == "InstructionLimitExceeded")
        #expect(f.presented.first?.reportedAt == "/a")
        #expect(!f.printed.contains("never"))
        // The next entry has a fresh budget.
        #expect(try f.output("print(hier.root:child('c'):publish('Spin'))") == ["0"])
    }

    @Test func swiftSubscribersAndPublish() throws {
        let f = try Fixture()
        let a = try f.hierarchy.makeNode(at: "/a")
        let b = try a.child("b")
        var log: [String] = []
        a.subscribe(.type("Sync")) { event in log.append("a \(event["n"]!)") }
        let handle = b.subscribe(.types(["Sync", "Other"])) { _ in log.append("b") }
        b.subscribe(.type("Sync")) { _ in throw QuotaExceeded() }
        b.receiveError(.type("QuotaExceeded")) { error in log.append("b caught \(error["where"]!)"); return .handled }
        #expect(try f.hierarchy.publish(.map(["type": "Sync", "n": 1]), at: "/", to: .last) == PublishResult(delivered: 2, failed: 1))
        #expect(log.count == 2 && log[0] == "b" && log[1].hasPrefix("b caught \"LuaHierarchyTests/PublishTests.swift:"))
        log = []
        handle.remove()
        #expect(handle.isRemoved)
        #expect(try f.hierarchy.publish(.map(["type": "Sync", "n": 2]), at: "/", to: .first).delivered == 1)
        #expect(log == ["a 2"])
        #expect(throws: HierarchyError.noSuchNode("/zz")) { try f.hierarchy.publish("Sync", at: "/zz") }
    }

    @Test func aMillionDeepChainDoesNotOverflowTheStack() throws {
        // No limits: walking 200,000 levels is long work, and the depth is the point, not the clock.
        var options = Hierarchy.Options()
        options.limits = .none
        let f = try Fixture(options: options)
        var node = f.hierarchy.root
        for level in 0..<200_000 { node = try node.child("n\(level % 10)") }
        var received = 0
        node.subscribe(.type("Deep")) { _ in received += 1 }
        for scope in PublishScope.allCases {
            #expect(try f.hierarchy.publish("Deep", at: "/", to: scope).delivered == 1)
        }
        #expect(received == 3)
    }
}
