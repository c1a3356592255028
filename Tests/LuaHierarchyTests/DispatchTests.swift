import Testing
@testable import LuaHierarchy

@Suite("Dispatch: snapshot, nesting, detached chains, outcomes (contract §2, §4, §5)")
struct DispatchTests {
    // MARK: snapshot

    @Test func aResponderRemovedDuringTheDispatchIsNotCalled() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local a = hier.root:child("a")
            local b = a:child("b")
            local later
            b:receiveEvent(function() later:remove() return "notHandled" end)
            later = a:receiveEvent(function() print("removed one called") return "handled" end)
            print(b:triggerEvent("Tap").status)
            """) == ["unhandled"])
    }

    @Test func aResponderAddedDuringTheDispatchWaitsForTheNextOne() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local a = hier.root:child("a")
            local b = a:child("b")
            local added = false
            b:receiveEvent(function()
              if not added then
                added = true
                a:receiveEvent(function() print("added one called") return "handled" end)
              end
              return "notHandled"
            end)
            print(b:triggerEvent("Tap").status)
            print(b:triggerEvent("Tap").status)
            """) == ["unhandled", "added one called", "handled"])
    }

    @Test func handleRemoveIsIdempotentAndOnlyRemovesItsOwnResponder() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")
            local h1 = n:receiveEvent(function() print("one") return "notHandled" end)
            local h2 = n:receiveEvent(function() print("two") return "notHandled" end)
            h1:remove(); h1:remove(); h1:remove()
            n:triggerEvent("Tap")
            print(tostring(h2):match("^responder receiveEvent %(test.lua:3%)$") ~= nil)
            """) == ["two", "true"])
    }

    @Test func aRemovedNodeMidDispatchStillFinishesItsSnapshottedChain() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function() b:remove() return "notHandled" end)
            a:receiveEvent(function() print("parent still called") return "handled" end)
            print(b:triggerEvent("Tap").status, b:triggerEvent("Tap").status)
            """) == ["parent still called", "handled\tdetached"])
    }

    // MARK: nesting

    @Test func nestedDispatchFromInsideAResponder() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local a = hier.root:child("a")
            local b = a:child("b")
            hier.root:handleEvent("Inner", function(e) print("inner handled from " .. e.from) end)
            b:receiveEvent("Outer", function(e)
              local inner = b:triggerEvent({type = "Inner", from = e.type})
              print("inner status " .. inner.status)
              return "handled"
            end)
            print(b:triggerEvent("Outer").status)
            """) == ["inner handled from Outer", "inner status handled", "handled"])
    }

    @Test func nestingDeeperThanTheLimitIsAReportedDispatchDepthExceeded() throws {
        let f = try Fixture()
        let lines = try f.output("""
            local n = hier.root:child("loop")
            local depth = 0
            n:receiveEvent(function(e)
              depth = depth + 1
              n:triggerEvent(e)
              return "handled"
            end)
            print(n:triggerEvent("Echo").status, depth)
            hier.depthLimit = 5
            depth = 0
            print(n:triggerEvent("Echo").status, depth, hier.depthLimit)
            """)
        #expect(lines == ["handled\t100", "handled\t5\t5"])
        let presented = try #require(f.presented.first)
        #expect(presented.error["type"] == "DispatchDepthExceeded")
        #expect(presented.error["where"] == "test.lua:5")
        #expect(presented.error["limit"] == .int(100))
        #expect(f.hierarchy.dispatcher.depth == 0)
    }

    @Test func errorsRecursingThroughReportAlsoStopAtTheLimit() throws {
        let f = try Fixture()
        f.hierarchy.depthLimit = 20
        let lines = try f.output("""
            local n = hier.root:child("n")
            n:receiveError(function(e) return n:reportError({type = "Again", message = "x"}).status end)
            print(n:reportError("start").kind)
            """)
        #expect(lines == ["error"])
        #expect(f.presented.contains { $0.error["type"] == "DispatchDepthExceeded" })
    }

    // MARK: detached chains

    @Test func aDetachedSubtreeIsACutChain() throws {
        let f = try Fixture()
        let lines = try f.output("""
            local feed = hier.root:child("app"):child("feed")
            local cell = feed:child("cell")
            feed:receiveEvent(function() print("feed saw it") return "notHandled" end)
            hier.root:receiveEvent(function() print("root saw it") return "handled" end)
            hier.root:receiveError(function() print("root saw the error") return "notHandled" end)
            feed:remove()
            local o = cell:triggerEvent("Tap")
            print(o.status, o.kind)
            o = cell:reportError("lost")
            print(o.status, o.kind, o.value.message)
            feed:moveTo(hier.node("/app"))
            print(cell:triggerEvent("Tap").status)
            """)
        #expect(lines == [
            "feed saw it", "detached\tevent",
            "detached\terror\tlost",
            "feed saw it", "root saw it", "handled",
        ])
        #expect(f.presented.isEmpty, "a detached error never reaches the presenter")
    }

    @Test func aHandledValueInsideADetachedSubtreeIsHandled() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local top = hier.root:child("top")
            local leaf = top:child("leaf")
            top:handleEvent(function() end)
            top:remove()
            local o = leaf:triggerEvent("Tap")
            print(o.status, o.by)
            """) == ["handled\ttop"])
    }

    // MARK: outcomes

    @Test func outcomeFields() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local a = hier.root:child("a")
            local b = a:child("b")
            a:receiveEvent(function() return "notHandled" end)
            a:handleEvent(function() end)
            local o = b:triggerEvent({type = "Tap", x = 1})
            print(o.status, o.kind, o.value.type, o.value.x, o.by, o.at)
            print(o.responder.index, o.responder.where, o.responder.kind, o.trace)
            """) == ["handled\tevent\tTap\t1\t/a\t/a/b", "2\ttest.lua:4\thandleEvent\tnil"])
    }

    @Test func anEventCanEndAsAnErrorAndAnErrorAsAnEvent() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")
            n:receiveEvent("Fails", function() error("nope") end)
            n:catchError("Recoverable", function() return "Recovered" end)
            local o = n:triggerEvent("Fails")
            print(o.status, o.kind, o.value.type)
            o = n:reportError({type = "Recoverable"})
            print(o.status, o.kind, o.value.type)
            """) == ["unhandled\terror\tLuaError", "unhandled\tevent\tRecovered"])
        #expect(f.presented.count == 1, "only the error that ended as an error is presented")
    }

    @Test func tracingRecordsEveryStep() throws {
        let f = try Fixture()
        #expect(try f.output("""
            hier.tracing = true
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function() return "notHandled" end)
            b:transformEvent(function(e) return "Swipe" end)
            a:receiveEvent("Swipe", function() error("bad") end)
            a:catchError(function() return "Recovered" end)
            hier.root:handleEvent(function() end)
            local o = b:triggerEvent("Tap")
            for i, s in ipairs(o.trace) do
              print(i, s.node, s.index, s.kind, s.where, s.input, s.result)
            end
            hier.tracing = false
            print(b:triggerEvent("Tap").trace, hier.tracing)
            """) == [
                "1\t/a/b\t1\treceiveEvent\ttest.lua:4\tTap\tnotHandled",
                "2\t/a/b\t2\ttransformEvent\ttest.lua:5\tTap\tevent Swipe",
                "3\t/a\t1\treceiveEvent\ttest.lua:6\tSwipe\traised LuaError",
                "4\t/a\t2\tcatchError\ttest.lua:7\tLuaError\tevent Recovered",
                "5\t/\t1\thandleEvent\ttest.lua:8\tRecovered\thandled",
                "nil\toff",
            ])
    }

    @Test func fullTracingKeepsValuesBeforeAndAfterReplacements() throws {
        let f = try Fixture()
        f.hierarchy.traceLevel = .full
        try f.lua("hier.root:child('a'):transformEvent(function(e) return {type = 'Big', n = e.n * 10} end)")
        let outcome = try f.hierarchy.trigger(.event("Small", ["n": 4]), at: "/a")
        let step = try #require(outcome.trace?.first)
        #expect(step.before == .event("Small", ["n": 4]))
        #expect(step.after == .event("Big", ["n": 40]))
        #expect(step.description == "/a #1 transformEvent (test.lua:1): Small -> event Big")
        // Path tracing records no values at all (not even a null one).
        f.hierarchy.traceLevel = .path
        let pathStep = try #require(try f.hierarchy.trigger(.event("Small", ["n": 4]), at: "/a").trace?.first)
        #expect(pathStep.before == nil)
        #expect(pathStep.after == nil)
    }

    /// The largest nesting limit accepted is one the host honours: nested dispatches, reports
    /// and publishes from Lua, through the fast path's runner at the top, and Swift closures,
    /// all reach `DispatchDepthExceeded` at exactly that depth, never Lua's "C stack overflow".
    @Test func theLargestDepthLimitIsHonouredOnEveryPath() throws {
        let largest = Hierarchy.depthLimits.upperBound
        let f = try Fixture()
        #expect(f.failure("hier.depthLimit = \(largest + 1)")?.message.contains("from 1 to \(largest)") == true)
        f.hierarchy.depthLimit = 100_000
        #expect(f.hierarchy.depthLimit == largest)
        let output = try f.output("""
            hier.depthLimit = \(largest)
            local n = hier.root:child("n")
            local depth, deepest, last = 0, 0, nil
            local function nest(step)
              depth = depth + 1
              deepest = math.max(deepest, depth)
              local o = step()
              depth = depth - 1
              if type(o) == "table" and o.kind == "error" and not last then last = o.value.type end
            end
            n:receiveEvent("ByEvent", function() nest(function() return n:triggerEvent("ByEvent") end) return "handled" end)
            n:handleError("ByError", function() nest(function() return n:reportError({type = "ByError"}) end) end)
            n:child("s"):subscribe("ByPublish", function() nest(function() return n:publish("ByPublish") end) end)
            for _, kind in ipairs({"ByEvent", "ByError"}) do
              depth, deepest, last = 0, 0, nil
              if kind == "ByEvent" then n:triggerEvent(kind) else n:reportError({type = kind}) end
              print(kind, deepest, last)
            end
            depth, deepest = 0, 0
            local ok, message = pcall(n.publish, n, "ByPublish")
            print("ByPublish", deepest, ok or message:match("DispatchDepthExceeded") ~= nil)
            """)
        // The responder at level `largest` tries once more and is refused.
        #expect(output == [
            "ByEvent\t\(largest)\tDispatchDepthExceeded", "ByError\t\(largest)\tDispatchDepthExceeded",
            "ByPublish\t\(largest)\ttrue",
        ])
        // Swift closures nesting: the same limit, and no stack overflow.
        let swiftNode = try f.hierarchy.makeNode(at: "/swift")
        var deepest = 0
        var depth = 0
        swiftNode.handleEvent(.type("Nest")) { [unowned hierarchy = f.hierarchy] _ in
            depth += 1
            deepest = max(deepest, depth)
            defer { depth -= 1 }
            _ = try hierarchy.trigger(.event("Nest"), at: swiftNode)
        }
        let outcome = try f.hierarchy.trigger(.event("Nest"), at: swiftNode)
        #expect(deepest == largest)
        #expect(outcome.value.typeName == "DispatchDepthExceeded" || outcome.status == .handled)
    }

    @Test func badSettingsAreErrorsAtTheCallersLine() throws {
        let f = try Fixture()
        let error = try #require(f.failure("\nhier.tracng = true"))
        #expect(error.location == "test.lua:2")
        #expect(error.message.contains("hier has no setting 'tracng'"))
        #expect(f.failure("hier.depthLimit = 0")?.message.contains("from 1 to \(Hierarchy.depthLimits.upperBound)") == true)
        #expect(f.failure("hier.tracing = 'loud'")?.message.contains("hier.tracing takes") == true)
    }

    // MARK: the presenter

    @Test func onlyErrorsPassingTheRootArePresented() throws {
        let f = try Fixture()
        try f.lua("""
            local n = hier.root:child("n")
            n:handleError("Handled", function() end)
            n:reportError({type = "Handled"})
            n:triggerEvent("Unhandled event")
            n:reportError({type = "Unhandled", message = "m"})
            """)
        #expect(f.presented.count == 1)
        #expect(f.presented.first?.error["type"] == "Unhandled")
        #expect(f.presented.first?.reportedAt == "/n")
        #expect(f.presented.first?.error["where"] == "test.lua:5")
    }
}

@Suite("Lifetimes and coroutines")
struct LifetimeTests {
    @Test func aRemovedNodeNothingHoldsIsFreedWithItsResponders() throws {
        let f = try Fixture()
        weak var removed: Node?
        try f.lua("""
            local gone = hier.root:child("gone")
            gone:child("leaf"):receiveEvent(function() return "handled" end)
            """)
        removed = try f.hierarchy.node(at: "/gone")
        #expect(removed != nil)
        try f.lua("hier.node('/gone'):remove(); fullgc(); fullgc()")
        try f.lua("fullgc()")
        #expect(removed == nil)
    }

    @Test func aRemovedNodeLuaStillHoldsStaysUsable() throws {
        let f = try Fixture()
        #expect(try f.output("""
            kept = hier.root:child("kept")
            kept:handleEvent(function() end)
            kept:remove()
            fullgc(); fullgc()
            print(kept:triggerEvent("Tap").status, kept.path)
            """) == ["handled\tkept"])
    }

    @Test func churnDoesNotAccumulate() throws {
        let f = try Fixture()
        #expect(try f.output("""
            for i = 1, 5000 do
              local c = hier.root:child("tmp" .. i)
              c:receiveEvent(function() return "handled" end)
              c:triggerEvent("x")
              c:remove()
            end
            fullgc(); fullgc()
            print(#hier.root:children(), collectgarbage("count") < 2048)
            """) == ["0\ttrue"])
    }

    @Test func yieldingAcrossTheHostIsAReportedErrorNotACrash() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")
            n:receiveEvent(function() coroutine.yield() return "handled" end)
            local co = coroutine.wrap(function()
              local o = n:triggerEvent("Tap")
              print(o.value.type, o.value.message:match("yielded: responders run inside the host") ~= nil)
              coroutine.yield()
              print("dispatch inside a coroutine:", n:reportError("x").status)
            end)
            co()
            co()
            """) == ["ResponderContractError\ttrue", "dispatch inside a coroutine:\tunhandled"])
    }
}

@Suite("Dispatch keeps nothing alive")
struct DispatchRetentionTests {
    @Test func aDispatchedThenRemovedNodeIsFreed() throws {
        let f = try Fixture()
        weak var removed: Node?
        do {
            let node = try f.hierarchy.makeNode(at: "/gone")
            node.handleEvent { _ in }
            removed = node
            #expect(try f.hierarchy.trigger("Tap", at: node).status == .handled)
            node.remove()
        }
        #expect(removed == nil, "the dispatcher's reusable chain buffer must not hold it")
    }
}
