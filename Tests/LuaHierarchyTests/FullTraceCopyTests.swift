import Testing
@testable import LuaHierarchy

/// Full tracing's copies of values (walk.c, luahier_copyvalue): every key kept, a table met
/// twice copied once, what the cap cannot hold said to be left out, and the dispatch's outcome
/// the same as untraced.
@Suite("Full trace copies")
struct FullTraceCopyTests {
    /// Keys of every type stay in the copy: a number or boolean key as it is, a table key the
    /// same table (the writer describes it; it is not copied).
    @Test func everyKeyOfAReplacedValueIsKept() throws {
        let f = try Fixture()
        #expect(try f.output("""
            hier.tracing = "full"
            local key = {}
            local a = hier.root:child("a")
            a:receiveEvent("E", function(e)
              return {type = "R", m = {[1.5] = 6, [true] = 7, [2] = "int", [key] = {deep = 1}, x = 1}}
            end)
            a:handleEvent("R", function(e) end)
            local o = a:triggerEvent("E")
            local m = o.trace[1].after.m
            print(m[1.5], m[true], m[2], m[key].deep, m.x, m[key] ~= o.value.m[key])
            """) == ["6\t7\tint\t1\t1\ttrue"])
    }

    /// The last step's `after` reads as the outcome's value does, described keys and all.
    @Test func theLastCopyReadsAsTheValue() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            a:receiveEvent("E", function(e)
              return {type = "R", m = {[1.5] = 6, [false] = 7, [{}] = 8, x = 1}, mixed = {10, 20, n = 1}}
            end)
            """)
        f.hierarchy.traceLevel = .full
        let outcome = try f.hierarchy.trigger(.event("E"), at: "/a")
        let trace = try #require(outcome.trace)
        #expect(trace.count == 1)
        #expect(trace[0].after == outcome.value)
        #expect(trace[0].after?["m"]?["<number 1.5>"] == 6)
        #expect(trace[0].after?["m"]?["<boolean false>"] == 7)
    }

    /// A table met many times is copied once: 2^40 paths through 40 tables cost 40 copies,
    /// and the copy has the shape of the value (the same table under both keys).
    @Test func aSharedTableIsCopiedOnce() throws {
        let f = try Fixture()
        #expect(try f.output("""
            hier.tracing = "full"
            local a = hier.root:child("a")
            a:receiveEvent("E", function(e)
              local x = {1}
              for i = 1, 40 do x = {l = x, r = x} end
              return {type = "R", x = x}
            end)
            a:handleEvent("R", function(e) end)
            local o = a:triggerEvent("E")
            local x = o.trace[1].after.x
            local leaf = x
            for i = 1, 40 do leaf = leaf.r end
            print(o.status, x.l == x.r, x.l ~= o.value.x.l, leaf[1])
            """) == ["handled\ttrue\ttrue\t1"])
    }

    /// A cycle is cut where it closes, wherever the table is met; a table whose copy was cut
    /// is not shared with a place where it would not be.
    @Test func cyclesAreCutWhereTheyClose() throws {
        let f = try Fixture()
        #expect(try f.output("""
            hier.tracing = "full"
            local a = hier.root:child("a")
            a:receiveEvent("E", function(e)
              local p, q = {name = "p"}, {name = "q"}
              p.q, q.p = q, p
              return {type = "R", p = p, q = q}
            end)
            a:handleEvent("R", function(e) end)
            local after = a:triggerEvent("E").trace[1].after
            print(after.p.q.p, after.q.p.q, after.p.q.name, after.q.p.name)
            """) == ["<cycle>\t<cycle>\tq\tp"])
    }

    /// A copy the cap cannot hold is `{omitted = "MemoryLimitExceeded"}`, and the dispatch is
    /// answered as it is untraced.
    @Test func aCopyTheCapCannotHoldIsSaidToBeOmitted() throws {
        var options = Hierarchy.Options()
        options.limits.memory = 24 << 20
        let f = try Fixture(options: options)
        #expect(try f.output("""
            local a = hier.root:child("a")
            a:receiveEvent("E", function(e)
              local t = {type = "R"}
              for i = 1, 150000 do t[i] = {i} end
              return t
            end)
            a:handleEvent("R", function(e) end)
            for _, mode in ipairs({"off", "full"}) do
              hier.tracing = mode
              local o = a:triggerEvent("E")
              local after = o.trace and o.trace[1].after
              print(mode, o.status, after and after.omitted)
            end
            """) == ["off\thandled\tnil", "full\thandled\tMemoryLimitExceeded"])
    }
}
