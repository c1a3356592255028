import Testing
@testable import LuaHierarchy

/// The engine's walk is Lua (walk.c), so the count hook can fire in its own instructions.
/// These tests pin what that must not change, and that a host without instruction or time
/// limits runs unhooked.
@Suite("The walk in Lua, and the count hook")
struct PlanWalkTests {
    /// A tripped limit is never raised in the walk's own instructions: the hook holds it to the
    /// first instruction of the next responder (or the walk ends and the script's next
    /// instruction raises it). Raised in the walk, the error would name the calling line (7
    /// here) and the responder before it would be blamed. The padding moves where the hook's
    /// every-1,000-instructions firings land in the dispatch loop, so that across the runs
    /// they land everywhere in it, the walk's own instructions included.
    @Test func aLimitTrippedAnywhereInAWalkIsRaisedInAResponder() throws {
        var presentedInResponders = 0
        for pad in 0..<128 {
            var options = Hierarchy.Options()
            options.limits = Limits(instructions: 3_000 + 53 * pad, time: nil, memory: nil)
            let f = try Fixture("""
                local a = hier.root:child("a")
                local b = a:child("b")
                for i = 1, 3 do b:receiveEvent(function(e) return "notHandled" end) end
                a:receiveEvent("Other", function(e) return "handled" end)
                a:receiveEvent(function(e) return "notHandled" end)
                leaf, ev = b, {type = "Tap"}
                """, options: options)
            // The dispatches are on line 7, which no responder is on.
            let error = f.failure("for i = 1, \(pad) do end\n\n\n\n\n\nfor i = 1, 1000 do leaf:triggerEvent(ev) end")
            #expect(error?.type == "InstructionLimitExceeded", "pad \(pad)")
            for presented in f.presented {
                #expect(presented.error.typeName == "InstructionLimitExceeded", "pad \(pad)")
                // A responder's line, or, when the budget ran out in the walk's own instructions
                // after the last responder (no responder to blame), the line that dispatched.
                #expect(["test.lua:3", "test.lua:5", "test.lua:7"].contains(presented.error["where"]?.stringValue ?? "none"), "pad \(pad): \(presented.error)")
                presentedInResponders += 1
            }
            // A new budget: the next dispatch goes along the kept plan as before.
            let before = f.hierarchy.engineCounts
            #expect(try f.output("print(leaf:triggerEvent(ev).status)") == ["unhandled"], "pad \(pad)")
            #expect(f.hierarchy.engineCounts.dispatches == before.dispatches + 1, "pad \(pad)")
            #expect(f.hierarchy.engineCounts.plans == before.plans, "pad \(pad)")
        }
        // Some runs tripped inside a responder, so the sweep reached the walks.
        #expect(presentedInResponders > 0)
    }

    /// The count hook slows every instruction, so it is installed only for an exact
    /// instruction budget; time limits are the watchdog's, except with the full libraries,
    /// whose coroutine functions run threads the watchdog's signal cannot find.
    @Test func theCountHookIsInstalledOnlyForAnInstructionBudget() throws {
        func hooked(_ limits: Limits, _ libraries: Libraries = .sandboxed) throws -> Bool {
            var options = Hierarchy.Options()
            options.limits = limits
            options.libraries = libraries
            return try Hierarchy(options: options).countHookInstalled
        }
        #expect(try !hooked(Limits()))
        #expect(try hooked(Limits(instructions: 10_000, time: nil, memory: nil)))
        #expect(try !hooked(Limits(instructions: nil, time: 5, memory: nil)))
        #expect(try hooked(Limits(instructions: nil, time: 5, memory: nil), .full))
        #expect(try hooked(Limits(), .full))
        #expect(try hooked(Limits(instructions: nil, time: nil, memory: nil, dispatchInstructions: 100, dispatchTime: nil)))
        #expect(try !hooked(Limits(instructions: nil, time: nil, memory: 64 << 20, dispatchInstructions: nil, dispatchTime: nil)))
        #expect(try !hooked(.none))
        #expect(try !hooked(.none, .full))
    }

    /// Without the hook, the allocator notes where Lua was when it first refused.
    @Test func aMemoryLimitAloneStillNamesTheLineThatRanOut() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: nil, time: nil, memory: 8 << 20)
        let f = try Fixture(options: options)
        let error = f.failure("""
            local t = {}
            for i = 1, 1e8 do t[i] = {i} end
            """)
        #expect(error?.type == "MemoryLimitExceeded")
        #expect(error?.location == "test.lua:2")
        #expect(try f.output("print(1 + 1)") == ["2"])
    }
}
