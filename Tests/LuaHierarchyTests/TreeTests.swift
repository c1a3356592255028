import Foundation
import Testing
@testable import LuaHierarchy

@Suite("Tree (contract §2)")
struct TreeTests {
    @Test func rootHasSlashPathNoParentAndIsFound() throws {
        let f = try Fixture()
        #expect(try f.output("""
            print(hier.root.path, hier.root.parent == nil, hier.node("/") == hier.root, hier.root.name)
            """) == ["/\ttrue\ttrue\troot"])
    }

    @Test func childIsGetOrCreateInOrderWithPaths() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local app = hier.root:child("app")
            local feed = app:child("feed")
            local settings = app:child("settings")
            print(app:child("feed") == feed, feed.path, feed.name, feed.parent == app)
            local names = {}
            for i, c in ipairs(app:children()) do names[i] = c.name end
            print(table.concat(names, ","), #feed:children())
            print(feed:child("cell-1").path)
            """) == ["true\t/app/feed\tfeed\ttrue", "feed,settings\t0", "/app/feed/cell-1"])
    }

    @Test func oneNodeIsOneLuaObject() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local cell = hier.root:child("a"):child("b")
            local seen = {}
            seen[hier.node("/a/b")] = true
            fullgc(); fullgc()
            print(hier.node("/a/b") == hier.node("/a/b"), rawequal(hier.node("/a/b"), cell), seen[cell])
            print(hier.node("/a/zzz"), hier.node("/nope"))
            """) == ["true\ttrue\ttrue", "nil\tnil"])
    }

    @Test func nodeObjectSurvivesGarbageCollectionWhileTheTreeHoldsIt() throws {
        let f = try Fixture()
        _ = try f.output("""
            hier.root:child("kept"):receiveEvent(function() return "handled" end)
            fullgc(); fullgc()
            """)
        #expect(try f.output("""
            fullgc(); fullgc()
            print(hier.node("/kept"):triggerEvent("Tap").status)
            """) == ["handled"])
    }

    @Test(arguments: ["\"\"", "\"a/b\"", "42"])
    func invalidChildNamesAreRefusedWithFileAndLine(_ name: String) throws {
        let f = try Fixture()
        let error = try #require(f.failure("\nhier.root:child(\(name))"))
        #expect(error.location == "test.lua:2")
        #expect(error.message.contains("child"))
    }

    @Test func malformedPathsAreErrorsAbsentOnesNil() throws {
        let f = try Fixture()
        #expect(try f.output(#"print(pcall(hier.node, "a/b"))"#).first?.contains("invalid path") == true)
        #expect(try f.output(#"print(pcall(hier.node, "/a//b"))"#).first?.contains("invalid path") == true)
        #expect(try f.hierarchy.node(at: "/missing") == nil)
        #expect(throws: TreeError.invalidPath("x")) { try f.hierarchy.node(at: "x") }
    }

    @Test func removeDetachesTheSubtreeAndMoveToReattaches() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local feed = hier.root:child("app"):child("feed")
            local cell = feed:child("cell")
            feed:remove()
            print(hier.node("/app/feed"), feed.parent, cell.path, #hier.node("/app"):children())
            feed:moveTo(hier.node("/app"))
            print(hier.node("/app/feed/cell") == cell, cell.path)
            """) == ["nil\tnil\tfeed/cell\t0", "true\t/app/feed/cell"])
    }

    /// `node.path` is kept between reads (luahier_nodeindex): every move or removal of the node
    /// or of an ancestor, and only those, must show in the next read.
    @Test func aKeptPathFollowsRemovalsAndMoves() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local app, other = hier.root:child("app"), hier.root:child("other")
            local cell = app:child("feed"):child("cell")
            local seen = { cell.path, cell.path }
            app:child("feed"):receiveEvent(function() return "notHandled" end)
            seen[#seen + 1] = cell.path
            app:child("feed"):remove()
            seen[#seen + 1] = cell.path
            app:child("feed")
            seen[#seen + 1] = cell.path .. " " .. app:child("feed").path
            cell:moveTo(other)
            seen[#seen + 1] = cell.path
            other:moveTo(app)
            seen[#seen + 1] = cell.path
            print(table.concat(seen, ","))
            """) == ["/app/feed/cell,/app/feed/cell,/app/feed/cell,feed/cell,feed/cell /app/feed,/other/cell,/app/other/cell"])
    }

    @Test func moveToRefusesCyclesNameClashesAndTheRoot() throws {
        let f = try Fixture()
        let lines = try f.output("""
            local a = hier.root:child("a")
            local b = a:child("b")
            hier.root:child("x"):child("b")
            print(pcall(a.moveTo, a, b))
            print(pcall(a.moveTo, a, a))
            print(pcall(b.moveTo, b, hier.node("/x")))
            print(pcall(hier.root.remove, hier.root))
            print(b.path, a.path)
            """)
        #expect(lines[0].hasPrefix("false") && lines[0].contains("cycle"))
        #expect(lines[1].hasPrefix("false") && lines[1].contains("cycle"))
        #expect(lines[2].hasPrefix("false") && lines[2].contains("already has a child named \"b\""))
        #expect(lines[3].hasPrefix("false") && lines[3].contains("root"))
        #expect(lines[4] == "/a/b\t/a")
    }

    @Test func nodeFieldsAreReadOnly() throws {
        let f = try Fixture()
        let error = try #require(f.failure("local a = hier.root:child('a')\na.name = 'b'"))
        #expect(error.location == "test.lua:2")
        #expect(error.message.contains("cannot set field 'name'"))
    }

    @Test func swiftTreeAPI() throws {
        let f = try Fixture()
        let cell = try f.hierarchy.makeNode(at: "/app/feed/cell")
        #expect(cell.path == "/app/feed/cell")
        #expect(try f.hierarchy.node(at: "/app/feed") === cell.parent)
        let other = try f.hierarchy.makeNode(at: "/other")
        #expect(throws: TreeError.cycle(moving: "/app", under: "/app/feed/cell")) {
            try f.hierarchy.node(at: "/app")!.move(to: cell)
        }
        try cell.move(to: other)
        #expect(cell.path == "/other/cell")
        let foreign = try Hierarchy().root
        #expect(throws: TreeError.differentTree) { try cell.move(to: foreign) }
        #expect(throws: TreeError.invalidName("")) { try cell.child("") }
    }

    @Test func wideNodesFindChildrenByName() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local wide = hier.root:child("wide")
            for i = 1, 100 do wide:child("c" .. i) end
            print(#wide:children(), wide:child("c77").path, hier.node("/wide/c100") ~= nil)
            hier.node("/wide/c50"):remove()
            print(#wide:children(), hier.node("/wide/c50"), wide:children()[50].name)
            """) == ["100\t/wide/c77\ttrue", "99\tnil\tc51"])
    }
}

@Suite("Tree at scale")
struct TreeScaleTests {
    @Test func removingManySiblingsFrontToBackIsLinear() throws {
        let f = try Fixture()
        let started = Date()
        #expect(try f.output("""
            local wide = hier.root:child("wide")
            for i = 1, 50000 do wide:child("c" .. i) end
            local kids = wide:children()
            for i = 1, #kids do kids[i]:remove() end
            print(#wide:children(), #kids)
            """) == ["0\t50000"])
        #expect(Date().timeIntervalSince(started) < 20)
    }

    @Test func aMillionDeepChainIsReleasedWithoutRecursion() throws {
        var options = Hierarchy.Options()
        options.limits = .none
        let f = try Fixture(options: options)
        weak var top: Node?
        do {
            var node = try f.hierarchy.root.child("deep")
            top = node
            for _ in 0..<1_000_000 { node = try node.child("d") }
            #expect(node.depth == 1_000_001)
            top?.remove()
        }
        #expect(top == nil, "the whole chain was freed")
    }

    @Test func childOrderSurvivesRemovalAndMoves() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local p = hier.root:child("p")
            for _, n in ipairs({"a", "b", "c", "d"}) do p:child(n) end
            p:child("b"):remove()
            p:child("a"):moveTo(hier.root)
            hier.node("/a"):moveTo(p)
            local names = {}
            for i, c in ipairs(p:children()) do names[i] = c.name end
            print(table.concat(names, ","))
            """) == ["c,d,a"])
    }
}
