import Testing
@testable import LuaHierarchy

/// Each row of contract §4's table, filters, order, and the position rule for every kind.
@Suite("Responders (contract §4)")
struct ResponderTests {
    /// A chain /a/b with a log of which responders ran.
    static let prelude = """
        local a = hier.root:child("a")
        local b = a:child("b")
        local log = {}
        local function mark(name) log[#log + 1] = name end
        local function show(o)
          print(o.status, o.kind, o.value.type, o.by, o.responder and o.responder.index, table.concat(log, ","))
        end

        """

    func run(_ body: String) throws -> [String] {
        try Fixture().output(Self.prelude + body)
    }

    // MARK: receive

    @Test func receiveHandledStops() throws {
        #expect(try run("""
            b:receiveEvent(function() mark("b1") return "handled" end)
            b:receiveEvent(function() mark("b2") return "handled" end)
            a:receiveEvent(function() mark("a1") return "handled" end)
            show(b:triggerEvent("Tap"))
            """) == ["handled\tevent\tTap\t/a/b\t1\tb1"])
    }

    @Test func receiveNotHandledContinuesInOrderThenParent() throws {
        #expect(try run("""
            b:receiveEvent(function() mark("b1") return "notHandled" end)
            b:receiveEvent(function() mark("b2") return "notHandled" end)
            a:receiveEvent(function() mark("a1") return "notHandled" end)
            hier.root:receiveEvent(function() mark("root") return "notHandled" end)
            show(b:triggerEvent("Tap"))
            """) == ["unhandled\tevent\tTap\tnil\tnil\tb1,b2,a1,root"])
    }

    /// contract §4: "unhandled" is the seeds' other name for "notHandled" (it replaced the value
    /// with the string, a trap for everyone porting from them), in plain receives, in filtered
    /// ones, and in error receives; a transform that returns it broke its contract.
    @Test func unhandledIsTheSeedsOtherNameForNotHandled() throws {
        #expect(try run("""
            b:receiveEvent(function() mark("b1") return "unhandled" end)
            b:receiveEvent("Tap", function() mark("b2") return "unhandled" end)
            a:receiveError(function() mark("a-error") return "unhandled" end)
            a:receiveEvent(function() mark("a1") return "notHandled" end)
            show(b:triggerEvent("Tap"))
            """) == ["unhandled\tevent\tTap\tnil\tnil\tb1,b2,a1"])
        #expect(try run("""
            b:receiveError(function() mark("b1") return "unhandled" end)
            show(b:reportError("boom"))
            """) == ["unhandled\terror\tError\tnil\tnil\tb1"])
        let transformed = try run("""
            b:transformEvent(function() return "unhandled" end)
            local o = b:triggerEvent("Tap")
            print(o.value.type, o.value.message)
            """).first ?? ""
        #expect(transformed.hasPrefix("ResponderContractError\ttransformEvent responder at test.lua:"), "\(transformed)")
        #expect(transformed.contains("returned \"unhandled\""), "\(transformed)")
    }

    @Test func swiftResponderMayAnswerUnhandled() throws {
        let fixture = try Fixture()
        let node = try fixture.hierarchy.root.child("a")
        node.receiveEvent { _ in .unhandled }
        node.receiveEvent { _ in .handled }
        let outcome = try fixture.hierarchy.trigger("Tap", at: node)
        #expect(outcome.status == .handled)
        #expect(outcome.responder?.index == 2)
    }

    /// contract §4: a registration's handle registers the next responder on the same node, so
    /// modifiers chain as in the seeds; a removed handle has no node to register on.
    @Test func aHandleRegistersTheNextResponderOnTheSameNode() throws {
        let output = try run("""
            local h = b:receiveError(function(e) mark("receive") return "notHandled" end)
              :transformError(function(e) mark("transform") return {type = "Wrapped", message = e.message} end)
              :handleError("Wrapped", function(e) mark("handle:" .. e.cause.type) end)
            show(b:reportError("boom"))
            h:remove()
            print(select(2, pcall(h.receiveEvent, h, function() end)))
            print(b:subscribe("Tick", function() end):subscribe("Tock", function() end))
            """)
        #expect(output.count == 3)
        #expect(output.first == "handled\terror\tWrapped\t/a/b\t3\treceive,transform,handle:Error")
        #expect(output.dropFirst().first == "receiveEvent: this handle's registration was removed, so it has no node to register on")
        #expect(output.last?.hasPrefix("subscription Tock (test.lua:") == true, "\(output)")
    }

    @Test func aSwiftHandleRegistersTheNextResponderOnTheSameNode() throws {
        let fixture = try Fixture()
        let node = try fixture.hierarchy.root.child("a")
        var seen: [String] = []
        node.receiveError { error in
            seen.append("receive")
            return .notHandled
        }.transformError { error in
            seen.append("transform")
            return ["type": "Wrapped"]
        }.handleError(.types(["Wrapped"])) { _ in
            seen.append("handle")
        }
        let outcome = try fixture.hierarchy.report("boom", at: node)
        #expect(outcome.status == .handled && outcome.by == "/a" && outcome.responder?.index == 3)
        #expect(seen == ["receive", "transform", "handle"])
    }

    @Test func receiveReplacementContinuesInPlaceOfTheOriginal() throws {
        #expect(try run("""
            b:receiveEvent(function(e) mark("b1:" .. e.type) return {type = "Swipe", from = e.type} end)
            b:receiveEvent(function(e) mark("b2:" .. e.type .. "<" .. e.from) return "notHandled" end)
            a:receiveEvent(function(e) mark("a1:" .. e.type) return "Pinch" end)
            hier.root:receiveEvent(function(e) mark("root:" .. e.type) return "notHandled" end)
            show(b:triggerEvent("Tap"))
            """) == ["unhandled\tevent\tPinch\tnil\tnil\tb1:Tap,b2:Swipe<Tap,a1:Swipe,root:Pinch"])
    }

    @Test func receiveErrorRowsMirrorEvents() throws {
        #expect(try run("""
            b:receiveError(function(e) mark("b1:" .. e.message) return "notHandled" end)
            b:receiveError(function(e) mark("b2") return {type = "Wrapped", message = "w"} end)
            a:receiveError(function(e) mark("a1:" .. e.type .. "<" .. e.cause.type) return "handled" end)
            show(b:reportError("disk full"))
            """) == ["handled\terror\tWrapped\t/a\t1\tb1:disk full,b2,a1:Wrapped<Error"])
    }

    // MARK: handle

    @Test func handleConsumesWhateverItReturns() throws {
        #expect(try run("""
            b:handleEvent(function() mark("b1") return "notHandled" end)
            a:handleEvent(function() mark("a1") end)
            show(b:triggerEvent("Tap"))
            a:handleError(function() mark("a-err") return 42 end)
            show(b:reportError("x"))
            """) == ["handled\tevent\tTap\t/a/b\t1\tb1", "handled\terror\tError\t/a\t2\tb1,a-err"])
    }

    // MARK: transform

    @Test func transformReplacementContinues() throws {
        #expect(try run("""
            b:transformEvent(function(e) mark("b1") return {type = "Big" .. e.type} end)
            b:receiveEvent(function(e) mark("b2:" .. e.type) return "notHandled" end)
            a:transformError(function(e) mark("a1") return {type = "Fatal", message = "from " .. e.message} end)
            a:receiveError(function(e) mark("a2:" .. e.type .. "<" .. e.cause.message) return "handled" end)
            show(b:triggerEvent("Tap"))
            show(b:reportError("x"))
            """) == [
                "unhandled\tevent\tBigTap\tnil\tnil\tb1,b2:BigTap",
                "handled\terror\tFatal\t/a\t2\tb1,b2:BigTap,a1,a2:Fatal<x",
            ])
    }

    // MARK: catch

    @Test func catchTurnsTheErrorIntoAnEventThatContinuesAsAnEvent() throws {
        #expect(try run("""
            b:catchError("Unauthenticated", function(e) mark("catch") return {type = "ShowSignIn", reason = e.message} end)
            b:receiveError(function() mark("never: error responders no longer see it") return "handled" end)
            a:receiveEvent(function(e) mark("a:" .. e.type .. ":" .. e.reason) return "handled" end)
            show(b:reportError({type = "Unauthenticated", message = "expired"}))
            """) == ["handled\tevent\tShowSignIn\t/a\t1\tcatch,a:ShowSignIn:expired"])
    }

    // MARK: filters

    @Test func filtersByNameAndByListAndNonMatchingPassesUntouched() throws {
        #expect(try run("""
            b:receiveEvent("Swipe", function() mark("swipe-only") return "handled" end)
            b:receiveEvent({"Tap", "Pinch"}, function(e) mark("list:" .. e.type) return "notHandled" end)
            a:handleEvent(function(e) mark("a:" .. e.type) end)
            show(b:triggerEvent("Tap"))
            log = {}
            show(b:triggerEvent("Swipe"))
            log = {}
            show(b:triggerEvent("Other"))
            """) == [
                "handled\tevent\tTap\t/a\t1\tlist:Tap,a:Tap",
                "handled\tevent\tSwipe\t/a/b\t1\tswipe-only",
                "handled\tevent\tOther\t/a\t1\ta:Other",
            ])
    }

    /// A filter of up to 8 names is checked by comparing names, a longer one through a set
    /// (TypeMatcher): on either side of the cut a listed type passes and no other does, for
    /// Lua responders, Swift responders and subscriptions alike.
    @Test(arguments: [1, 2, 8, 9, 40])
    func filtersOfEverySizeSeeExactlyTheirTypes(names: Int) throws {
        let f = try Fixture()
        let listed = (1...names).map { "T\($0)" }
        let lua = listed.map { "\"\($0)\"" }.joined(separator: ", ")
        try f.lua("""
            local n = hier.root:child("n")
            n:receiveEvent({\(lua)}, function(e) print("lua " .. e.type) return "notHandled" end)
            """)
        let n = try f.hierarchy.node(at: "/n")!
        var swiftSaw: [String] = [], subscriberSaw: [String] = []
        n.receiveEvent(.types(Set(listed))) { swiftSaw.append($0.typeName!); return .notHandled }
        let leaf = try n.child("leaf")
        leaf.subscribe(.types(Set(listed))) { subscriberSaw.append($0.typeName!) }
        let probes = listed + ["T0", "T\(names + 1)", "t1", "T1 ", ""]
        for type in probes where !type.isEmpty {
            _ = try f.hierarchy.trigger(.string(type), at: "/n")
            _ = try f.hierarchy.publish(.string(type), at: "/n")
        }
        #expect(f.printed == listed.map { "lua " + $0 })
        #expect(swiftSaw == listed)
        #expect(subscriberSaw == listed)
        // An empty list from Swift matches nothing (Lua refuses one).
        var none = 0
        n.receiveEvent(.types([])) { _ in none += 1; return .notHandled }
        _ = try f.hierarchy.trigger("T1", at: "/n")
        #expect(none == 0)
    }

    @Test func badFiltersAndFunctionsAreArgumentErrors() throws {
        let lines = try run("""
            print(pcall(b.receiveEvent, b, 42, function() end))
            print(pcall(b.receiveEvent, b, {}, function() end))
            print(pcall(b.receiveEvent, b, {1}, function() end))
            print(pcall(b.receiveEvent, b, "Tap"))
            print(pcall(b.receiveEvent, b, "Tap", "not a function"))
            print(pcall(b.handleError, b))
            """)
        #expect(lines.count == 6)
        #expect(lines.allSatisfy { $0.hasPrefix("false\t") })
        #expect(lines[0].contains("filter expected"))
        #expect(lines[1].contains("filter list is empty"))
        #expect(lines[4].contains("function expected"))
    }

    @Test func domainsAreSeparate() throws {
        #expect(try run("""
            b:receiveError(function() mark("error-responder") return "handled" end)
            b:receiveEvent(function() mark("event-responder") return "notHandled" end)
            show(b:triggerEvent("Tap"))
            """) == ["unhandled\tevent\tTap\tnil\tnil\tevent-responder"])
    }

    // MARK: contract violations

    @Test(arguments: [
        ("receiveEvent", "return nil", "returned nil"),
        ("receiveEvent", "return 42", "returned a number"),
        ("receiveEvent", "return {}", "returned a table without a string 'type'"),
        ("receiveEvent", "return {type = 1}", "returned a table whose 'type' is a number"),
        ("transformEvent", "return 'handled'", "returned \"handled\""),
        ("transformEvent", "return true", "returned a boolean"),
        ("catchError", "return 'notHandled'", "returned \"notHandled\""),
        ("catchError", "return e", "returned an error (Error)"),
        ("transformError", "return evt", "returned an event (Tap)"),
        ("receiveError", "return function() end", "returned a function"),
    ])
    func contractViolationsBecomeResponderContractErrors(_ kind: String, _ body: String, _ expected: String) throws {
        let domainSetup = kind.hasSuffix("Event") ? "b:triggerEvent(evt)" : "b:reportError('boom')"
        let f = try Fixture()
        let lines = try f.output(Self.prelude + """
            local evt = {type = "Tap"}
            b:triggerEvent(evt)
            b:\(kind)(function(e)
              \(body)
            end)
            local o = \(domainSetup)
            print(o.kind, o.value.type, o.value.where, o.value.responder)
            print(o.value.message)
            """)
        #expect(lines.first == "error\tResponderContractError\ttest.lua:10\t\(kind)")
        #expect(lines.last?.contains("\(kind) responder at test.lua:10 \(expected)") == true, "\(lines)")
        #expect(f.presented.last?.error["type"] == "ResponderContractError")
    }

    @Test func contractErrorOnAnErrorKeepsTheErrorAsCause() throws {
        #expect(try run("""
            b:receiveError(function() return nil end)
            local o = b:reportError({type = "Original", message = "m"})
            print(o.value.type, o.value.cause.type, o.value.cause.message)
            """) == ["ResponderContractError\tOriginal\tm"])
    }

    // MARK: the position rule, for every kind

    @Test func positionRuleReceiveReplacementContinuesAtTheNextResponderOfTheSameNode() throws {
        #expect(try run("""
            b:receiveEvent("Tap", function() mark("k") return "Swipe" end)
            b:receiveEvent("Swipe", function() mark("k+1") return "handled" end)
            a:receiveEvent(function() mark("parent") return "handled" end)
            show(b:triggerEvent("Tap"))
            """) == ["handled\tevent\tSwipe\t/a/b\t2\tk,k+1"])
    }

    @Test func positionRuleTransformContinuesAtTheNextResponder() throws {
        #expect(try run("""
            b:transformError(function() mark("k") return {type = "Replaced", message = "r"} end)
            b:handleError("Replaced", function() mark("k+1") end)
            show(b:reportError("x"))
            """) == ["handled\terror\tReplaced\t/a/b\t2\tk,k+1"])
    }

    @Test func positionRuleCaughtEventContinuesAtTheNextResponder() throws {
        #expect(try run("""
            b:catchError(function() mark("k") return "Recovered" end)
            b:handleEvent("Recovered", function() mark("k+1") end)
            show(b:reportError("x"))
            """) == ["handled\tevent\tRecovered\t/a/b\t2\tk,k+1"])
    }

    @Test func positionRuleErrorRaisedInAnEventResponderContinuesAtTheNextResponder() throws {
        #expect(try run("""
            b:receiveError(function() mark("k-1: before the raise, not called") return "handled" end)
            b:receiveEvent(function() mark("k") error({type = "Broken", message = "b"}) end)
            b:receiveError(function(e) mark("k+1:" .. e.type .. "@" .. e.where) return "handled" end)
            show(b:triggerEvent("Tap"))
            """) == ["handled\terror\tBroken\t/a/b\t3\tk,k+1:Broken@test.lua:9"])
    }

    @Test func positionRuleErrorRaisedInAnErrorResponderReplacesItWithCause() throws {
        #expect(try run("""
            b:handleError(function(e) mark("k") error("while handling " .. e.message) end)
            b:receiveError(function(e) mark("k+1:" .. e.type .. ":" .. e.message .. "<" .. e.cause.message) return "handled" end)
            show(b:reportError("first"))
            """) == ["handled\terror\tLuaError\t/a/b\t2\tk,k+1:LuaError:while handling first<first"])
    }

    @Test func positionRuleForTransformEventAndHandleEventRaises() throws {
        #expect(try run("""
            b:transformEvent(function() mark("t") error("bad transform") end)
            b:handleEvent(function() mark("never: the value is an error now") end)
            b:catchError(function(e) mark("catch:" .. e.message) return "Back" end)
            a:handleEvent(function(e) mark("a:" .. e.type) error("in handle") end)
            a:receiveError(function(e) mark("a2:" .. e.message) return "handled" end)
            show(b:triggerEvent("Tap"))
            """) == ["handled\terror\tLuaError\t/a\t2\tt,catch:bad transform,a:Back,a2:in handle"])
    }

    @Test func positionRuleForCatchErrorAndReceiveErrorRaises() throws {
        #expect(try run("""
            b:catchError(function(e) mark("c") error({type = "CatchFailed", message = "c"}) end)
            b:receiveError(function(e) mark("r:" .. e.type .. "<" .. e.cause.type) error("r failed") end)
            b:receiveError(function(e) mark("r2:" .. e.message .. "<" .. e.cause.type .. "<" .. e.cause.cause.type) return "handled" end)
            show(b:reportError({type = "Root"}))
            """) == ["handled\terror\tLuaError\t/a/b\t3\tc,r:CatchFailed<Root,r2:r failed<CatchFailed<Root"])
    }

    @Test func aResponderReturningItsOwnInputGetsNoCauseLoop() throws {
        #expect(try run("""
            b:transformError(function(e) e.seen = true return e end)
            local o = b:reportError("x")
            print(o.value.seen, o.value.cause)
            """) == ["true\tnil"])
    }
}
