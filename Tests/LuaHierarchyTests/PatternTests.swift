import Foundation
import Testing
@testable import LuaHierarchy

/// The sandbox's step-counting pattern functions must give stock Lua's answers: random
/// patterns and subjects, every function, compared result by result (and error by error).
@Suite("Pattern matching with a step budget")
struct PatternTests {
    static let cases = Int(ProcessInfo.processInfo.environment["FUZZ_CASES"] ?? "") ?? 3000

    @Test func sameAnswersAsStockLua() throws {
        var options = Hierarchy.Options()
        options.libraries = .full
        options.limits = .none
        let f = try Fixture(options: options)
        try f.hierarchy.exposePatternFunctions(as: "lh")
        let lines = try f.output("""
            math.randomseed(7)
            local atoms = {"a", "b", ".", "%a", "%d", "%s", "%w", "%W", "[ab]", "[^a]", "[a-c]", "[%d.]", "%%", "x", "%.", "1", " "}
            local quants = {"", "", "", "*", "+", "-", "?"}
            local function pick(t) return t[math.random(#t)] end
            local function pattern()
              local parts = {}
              if math.random() < 0.2 then parts[#parts + 1] = "^" end
              local captures = 0
              for _ = 1, math.random(1, 5) do
                local r = math.random()
                if r < 0.12 then parts[#parts + 1] = "(" .. pick(atoms) .. pick(quants) .. ")"; captures = captures + 1
                elseif r < 0.16 then parts[#parts + 1] = "()"; captures = captures + 1
                elseif r < 0.20 then parts[#parts + 1] = "%b()"
                elseif r < 0.24 then parts[#parts + 1] = "%f[%w]"
                elseif r < 0.27 and captures > 0 then parts[#parts + 1] = "%" .. math.random(captures)
                else parts[#parts + 1] = pick(atoms) .. pick(quants) end
              end
              if math.random() < 0.2 then parts[#parts + 1] = "$" end
              return table.concat(parts)
            end
            local chars = {"a", "b", "c", "1", "2", " ", "(", ")", ".", "%", "x", "\\0"}
            local function subject()
              local t = {}
              for i = 1, math.random(0, 14) do t[i] = pick(chars) end
              return table.concat(t)
            end
            local function same(a, b)
              if a.ok ~= b.ok then return false end
              if not a.ok then return true end
              if a.n ~= b.n then return false end
              for i = 1, a.n do if a[i] ~= b[i] then return false end end
              return true
            end
            local function run(f, ...)
              local r = table.pack(pcall(f, ...))
              local out = {ok = r[1], n = r.n - 1}
              for i = 2, r.n do out[i - 1] = r[i] end
              return out
            end
            local function collect(gmatch)
              return function(s, p, init)
                local all = {}
                for a, b in gmatch(s, p, init) do all[#all + 1] = tostring(a) .. "|" .. tostring(b) end
                return table.concat(all, ",")
              end
            end
            local replacements = {"<%0>", "%1-", "[%%]", function(a, b) return a and (a .. "!") end, {a = "A", b = false}}
            local mismatches = 0
            for case = 1, \(Self.cases) do
              local s, p, init = subject(), pattern(), math.random(-3, 6)
              local repl = pick(replacements)
              local checks = {
                {"find", run(string.find, s, p, init), run(lh.find, s, p, init)},
                {"plain find", run(string.find, s, p, init, true), run(lh.find, s, p, init, true)},
                {"match", run(string.match, s, p, init), run(lh.match, s, p, init)},
                {"gmatch", run(collect(string.gmatch), s, p, init), run(collect(lh.gmatch), s, p, init)},
                {"gsub", run(string.gsub, s, p, repl), run(lh.gsub, s, p, repl)},
                {"gsub max", run(string.gsub, s, p, "#", 2), run(lh.gsub, s, p, "#", 2)},
              }
              for _, check in ipairs(checks) do
                if not same(check[2], check[3]) and mismatches < 5 then
                  mismatches = mismatches + 1
                  print(("mismatch %s: s=%q p=%q init=%d stock=%s/%s ours=%s/%s"):format(check[1], s, p, init,
                    tostring(check[2].ok), tostring(check[2][1]), tostring(check[3].ok), tostring(check[3][1])))
                end
              end
            end
            print("mismatches", mismatches)
            """)
        #expect(lines == ["mismatches\t0"], "\(lines.joined(separator: "\n"))")
    }

    @Test func catastrophicBacktrackingIsStoppedInTheSandbox() throws {
        var options = Hierarchy.Options()
        // No clock: the matcher's step bound must be what stops it.
        options.limits = Limits(instructions: 50_000_000, time: nil, memory: 64 << 20, dispatchTime: nil)
        let f = try Fixture(options: options)
        let started = LimitContainmentTests.threadCPUSeconds()
        let error = try #require(f.failure("""
            local s = ("a"):rep(30000)
            return s:find(("a*"):rep(8) .. "b")
            """))
        #expect(error.type == "LuaError")
        #expect(error.message.contains("pattern too complex"))
        #expect(error.location == "test.lua:2")
        // Stopped soon (stock Lua's matcher runs for hours), in this thread's CPU time: the
        // wall clock is the load's.
        #expect(LimitContainmentTests.threadCPUSeconds() - started < 10)
        // Long subjects with sane patterns are fine.
        #expect(try f.output("""
            local line = ("word "):rep(20000)
            local n = 0
            for w in line:gmatch("%a+") do n = n + 1 end
            print(n, #line:gsub("%s+$", ""), line:match("^(%S+)%s+(%S+)"))
            """) == ["20000\t99999\tword\tword"])
    }

    @Test func eachCallChargesTheInstructionBudget() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: 2_000_000, time: nil, memory: 64 << 20, dispatchTime: nil)   // the count alone
        let f = try Fixture(options: options)
        let error = try #require(f.failure("""
            local s = ("ab"):rep(500000)
            for i = 1, 100 do s:gsub("%w", "x") end
            """))
        #expect(error.type == "InstructionLimitExceeded")
    }
}
