import CLua
import Foundation
import LuaHierarchy

// Side-by-side measurements (docs/performance.md). Each figure is the best of `rounds` runs (the
// machine is shared and noisy: the minimum is the least disturbed), in ns per dispatch.
// Usage: swift run -c release luahier-bench [--quick]
//        swift run -c release luahier-bench --json FILE   (parsers only, see jsonParsers)

let quick = CommandLine.arguments.contains("--quick")
let rounds = quick ? 3 : 7
let dispatches = quick ? 20_000 : 200_000

/// Best time per iteration, in nanoseconds, of `body(iterations)` over `rounds` runs.
func measure(_ iterations: Int, _ body: (Int) throws -> Void) rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        try body(iterations)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
        best = min(best, elapsed / Double(iterations))
    }
    return best
}

func row(_ name: String, _ ns: Double, against baseline: (String, Double)? = nil) {
    var line = name.padding(toLength: 58, withPad: " ", startingAt: 0) + String(format: "%10.1f ns", ns)
    if let (label, base) = baseline { line += String(format: "   %.2fx %@", ns / base, label) }
    print(line)
}

let responder = "function(e) return 'notHandled' end"

// MARK: JSON parsers on the dispatch input, per line.

/// Foundation's JSONSerialization against this package's parser on every line of `path`.
/// (JSONSerialization cannot tell 3 from 3.0, and reports no column: reasons of their own.)
func jsonParsers(_ path: String) throws {
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { Data($0.utf8) }
    let foundation = try measure(lines.count) { _ in
        for line in lines { _ = try JSONSerialization.jsonObject(with: line) }
    }
    let own = try measure(lines.count) { _ in
        for line in lines { _ = try line.withUnsafeBytes { try JSON.parse($0) } }
    }
    print("JSON parse of \(lines.count) lines of \(path), per line (best of \(rounds)):")
    row("Foundation JSONSerialization", foundation)
    row("LuaHierarchy JSON.parse (to Value)", own, against: ("Foundation", foundation))
}

/// `--profile-swift N [DEPTH]`: only N dispatches (depth 10 unless given) through Swift
/// closures, for a profiler (valgrind --tool=callgrind .build/release/luahier-bench --profile-swift 20000).
if let flag = CommandLine.arguments.firstIndex(of: "--profile-swift"), flag + 1 < CommandLine.arguments.count,
    let count = Int(CommandLine.arguments[flag + 1])
{
    let depth = flag + 2 < CommandLine.arguments.count ? Int(CommandLine.arguments[flag + 2]) ?? 10 : 10
    let hierarchy = try Hierarchy(options: engineOptions())
    var node = hierarchy.root
    for level in 1...depth {
        node = try node.child("s\(level)")
        node.receiveEvent(.any) { event in event["type"] == nil ? .handled : .notHandled }
    }
    let event = Value.event("Tap")
    for _ in 0..<count { _ = try hierarchy.trigger(event, at: node) }
    exit(0)
}

/// `--profile-swift-lua N [DEPTH]`: only N dispatches (depth 10 unless given) started from
/// Swift through Lua responders, for a profiler.
if let flag = CommandLine.arguments.firstIndex(of: "--profile-swift-lua"), flag + 1 < CommandLine.arguments.count,
    let count = Int(CommandLine.arguments[flag + 1])
{
    let depth = flag + 2 < CommandLine.arguments.count ? Int(CommandLine.arguments[flag + 2]) ?? 10 : 10
    _ = try engineFromSwift(depth: depth, count: count)
    exit(0)
}

/// `--profile-swift-chain N [DEPTH]`: only N dispatches (depth 10 unless given) from Swift
/// through Swift closures that return .notHandled, as the Lua responders of
/// `--profile-swift-lua` return "notHandled" (the two sides of the Swift-closures target).
if let flag = CommandLine.arguments.firstIndex(of: "--profile-swift-chain"), flag + 1 < CommandLine.arguments.count,
    let count = Int(CommandLine.arguments[flag + 1])
{
    let depth = flag + 2 < CommandLine.arguments.count ? Int(CommandLine.arguments[flag + 2]) ?? 10 : 10
    _ = try swiftFromSwift(depth: depth, count: count)
    exit(0)
}

/// `--profile-swift-typed N [DEPTH] [untyped]`: only N dispatches (depth 10 unless given) of a
/// small event through typed Swift responders (or untyped ones reading the same field).
if let flag = CommandLine.arguments.firstIndex(of: "--profile-swift-typed"), flag + 1 < CommandLine.arguments.count,
    let count = Int(CommandLine.arguments[flag + 1])
{
    let depth = flag + 2 < CommandLine.arguments.count ? Int(CommandLine.arguments[flag + 2]) ?? 10 : 10
    _ = try typedSwift(depth: depth, typed: !CommandLine.arguments.contains("untyped"), count: count)
    exit(0)
}

if let flag = CommandLine.arguments.firstIndex(of: "--json"), flag + 1 < CommandLine.arguments.count {
    try jsonParsers(CommandLine.arguments[flag + 1])
    exit(0)
}

// MARK: Baseline 1: the C-API floor — the same Lua functions called through lua_pcall.

func cApiFloor(depth: Int) -> Double {
    let L = luaL_newstate()!
    defer { lua_close(L) }
    luaL_openlibs(L)
    var refs: [Int32] = []
    for _ in 0..<depth {
        _ = luaL_loadstring(L, "return " + responder)
        _ = luahier_pcall(L, 0, 1, 0)
        refs.append(luaL_ref(L, luahier_REGISTRYINDEX))
    }
    luahier_newtable(L)
    lua_pushstring(L, "Tap")
    lua_setfield(L, -2, "type")
    let event = luaL_ref(L, luahier_REGISTRYINDEX)
    return measure(dispatches) { n in
        for _ in 0..<n {
            for ref in refs {
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(ref))
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(event))
                _ = luahier_pcall(L, 1, 1, 0)
                var length = 0
                let text = lua_tolstring(L, -1, &length)
                precondition(length == 10 && text != nil)
                luahier_pop(L, 1)
            }
        }
    }
}

// MARK: Baseline 2: plain Lua — a table tree and the loop a Lua user would write.

func plainLua(depth: Int, handledAt: Int? = nil) -> Double {
    // The handled-early case puts 'handled' in the leaf's responder; others say notHandled.
    let script = """
        local depth, n, handledAtLeaf = ...
        local parent, leaf = nil, nil
        for level = 1, depth do
          local answer = (handledAtLeaf and level == depth) and 'handled' or 'notHandled'
          leaf = { parent = parent, responders = { function(e) return answer end } }
          parent = leaf
        end
        local function trigger(start, event)
          local node = start
          while node do
            local responders = node.responders
            for i = 1, #responders do
              if responders[i](event) == 'handled' then return 'handled', node end
            end
            node = node.parent
          end
          return 'unhandled'
        end
        local event = { type = 'Tap' }
        for i = 1, n do trigger(leaf, event) end
        """
    return measureInBareLua(script, depth: depth, flag: handledAt != nil)
}

/// Best time per dispatch of `script` in a Lua state of its own with the standard libraries
/// and no host: the script gets (depth, dispatches, flag) as `...` and makes the dispatches.
func measureInBareLua(_ script: String, depth: Int, flag: Bool = false) -> Double {
    let L = luaL_newstate()!
    defer { lua_close(L) }
    luaL_openlibs(L)
    precondition(luaL_loadstring(L, script) == LUA_OK)
    let function = luaL_ref(L, luahier_REGISTRYINDEX)
    return measure(dispatches) { n in
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(function))
        lua_pushinteger(L, lua_Integer(depth))
        lua_pushinteger(L, lua_Integer(n))
        lua_pushboolean(L, flag ? 1 : 0)
        precondition(luahier_pcall(L, 3, 0, 0) == LUA_OK)
    }
}

// MARK: The spec's floor, in plain Lua

/// The least any host can spend per dispatch and still do what contract §5 asks, measured in plain
/// Lua: a method call, one Lua-to-Lua call per responder (no tree, no filters, no protection),
/// and the outcome table with its three required fields. The target "1.5x faster than plain
/// Lua" needs the engine below 0.67x of plain Lua; where this floor is above that, no host
/// that calls each responder and returns an outcome table can meet it.
func specFloor(depth: Int) -> Double {
    measureInBareLua(floorScript(trigger: """
        function methods.triggerEvent(self, event)
          for i = 1, #responders do
            if responders[i](event) ~= 'notHandled' then break end
          end
          return {status = 'unhandled', kind = 'event', value = event}
        end
        """), depth: depth)
}

/// The spec floor and what contract §5 asks of every dispatch beyond it, in plain Lua: the
/// responders called under a protected call (a responder's error must not end its caller) and
/// the outcome's fourth field, `at`, with the outcome's metatable. No check of the value, no
/// plan, no limits: the least a conforming host adds to `specFloor`, written where it costs
/// least (Benchmarks/profile/floor.lua's `conforming`).
func conformingFloor(depth: Int) -> Double {
    measureInBareLua(floorScript(trigger: """
        local outcomeMeta = {}
        local function walk(event)
          for i = 1, #responders do
            if responders[i](event) ~= 'notHandled' then break end
          end
        end
        function methods.triggerEvent(self, event)
          pcall(walk, event)
          return setmetatable({status = 'unhandled', kind = 'event', value = event, at = self}, outcomeMeta)
        end
        """), depth: depth)
}

/// A floor's script: `depth` responders and a node whose `triggerEvent` is `trigger`'s, called
/// `n` times (the two floors differ only in that method).
func floorScript(trigger: String) -> String {
    """
    local depth, n = ...
    local responders = {}
    for level = 1, depth do responders[level] = function(e) return 'notHandled' end end
    local methods = {}
    local node = setmetatable({}, {__index = methods})
    \(trigger)
    local event = { type = 'Tap' }
    for i = 1, n do node:triggerEvent(event) end
    """
}

// MARK: The engine

func engineOptions() -> Hierarchy.Options {
    var options = Hierarchy.Options()
    options.limits = .none
    return options
}

/// A chain of `depth` nodes below the root, one Lua responder each (the leaf's may handle).
func engineFromLua(
    depth: Int, handledAtLeaf: Bool = false, tracing: TraceLevel = .off, readTrace: Bool = false, limits: Limits = .none
) throws -> Double {
    var options = engineOptions()
    options.limits = limits
    let hierarchy = try Hierarchy(options: options)
    hierarchy.traceLevel = tracing
    try hierarchy.run(source: """
        local node = hier.root
        for level = 1, \(depth) do
          node = node:child("n" .. level)
          local answer = (\(handledAtLeaf) and level == \(depth)) and "handled" or "notHandled"
          node:receiveEvent(function(e) return answer end)
        end
        leaf = node
        event = { type = "Tap" }
        function bench(n) for i = 1, n do leaf:triggerEvent(event) end end
        function benchReading(n) for i = 1, n do local _ = #leaf:triggerEvent(event).trace end end
        """, chunkName: "bench.lua")
    let loop = readTrace ? "benchReading" : "bench"
    return try measure(dispatches) { n in try hierarchy.run(source: "\(loop)(\(n))", chunkName: "run.lua") }
}

/// `count`: that many dispatches, unmeasured (for a profiler), instead of a measure.
func engineFromSwift(depth: Int, count: Int? = nil) throws -> Double {
    let hierarchy = try Hierarchy(options: engineOptions())
    try hierarchy.run(source: """
        local node = hier.root
        for level = 1, \(depth) do
          node = node:child("n" .. level)
          node:receiveEvent(function(e) return "notHandled" end)
        end
        """, chunkName: "bench.lua")
    let leaf = try hierarchy.node(at: (1...depth).map { "/n\($0)" }.joined())!
    let event = Value.event("Tap")
    if let count {
        for _ in 0..<count { _ = try hierarchy.trigger(event, at: leaf) }
        return 0
    }
    return try measure(dispatches / 4) { n in
        for _ in 0..<n { _ = try hierarchy.trigger(event, at: leaf) }
    }
}

/// The same chain as `engineFromSwift`, of Swift closures: each returns .notHandled as the
/// Lua responders there return "notHandled".
func swiftFromSwift(depth: Int, count: Int? = nil) throws -> Double {
    let hierarchy = try Hierarchy(options: engineOptions())
    var node = hierarchy.root
    for level in 1...depth {
        node = try node.child("n\(level)")
        node.receiveEvent(.any) { _ in .notHandled }
    }
    let event = Value.event("Tap")
    if let count {
        for _ in 0..<count { _ = try hierarchy.trigger(event, at: node) }
        return 0
    }
    return try measure(dispatches / 4) { n in for _ in 0..<n { _ = try hierarchy.trigger(event, at: node) } }
}

/// What the typed responders below decode: a small event of three fields.
struct Tap: Decodable {
    let type: String
    let x: Int
    let y: Int
}

/// `trigger(_:at:)` of a small event through a chain of `depth` Swift closure responders, typed
/// (`receiveEvent(Tap.self)`) or untyped reading the same field. `count`: that many dispatches,
/// unmeasured (for a profiler), instead of a measure.
func typedSwift(depth: Int, typed: Bool, count: Int? = nil) throws -> Double {
    let hierarchy = try Hierarchy(options: engineOptions())
    var node = hierarchy.root
    for level in 1...depth {
        node = try node.child("t\(level)")
        if typed {
            node.receiveEvent(Tap.self) { tap in tap.x < 0 ? .handled : .notHandled }
        } else {
            node.receiveEvent(.any) { event in (event["x"]?.intValue ?? 0) < 0 ? .handled : .notHandled }
        }
    }
    let event = Value.event("Tap", ["x": 1, "y": 2])
    if let count {
        for _ in 0..<count { _ = try hierarchy.trigger(event, at: node) }
        return 0
    }
    return try measure(dispatches / 4) { n in for _ in 0..<n { _ = try hierarchy.trigger(event, at: node) } }
}

// MARK: Performance targets

/// A CPU-bound responder: each dispatch computes fib(n) recursively inside a responder.
func fibInResponder(n: Int, limits: Limits) throws -> Double {
    var options = engineOptions()
    options.limits = limits
    let hierarchy = try Hierarchy(options: options)
    try hierarchy.run(source: """
        local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
        local node = hier.root:child("cpu")
        node:receiveEvent(function(e) e.result = fib(\(n)) return "handled" end)
        function bench(k) local event = { type = "Fib" } for i = 1, k do node:triggerEvent(event) end end
        """, chunkName: "fib.lua")
    return try measure(quick ? 20 : 100) { k in try hierarchy.run(source: "bench(\(k))", chunkName: "run.lua") }
}

/// One line per target: the measure, its baseline, the ratio (or difference) and the target.
func verdict(_ met: Bool) -> String { met ? "met" : "MISSED" }

print("luahier-bench: ns per dispatch, best of \(rounds); \(ProcessInfo.processInfo.activeProcessorCount) cores")
print("")
print("Target 1: the default limits (time and memory; no count hook) vs no limits, <= 1.05x")
let fibNone = try fibInResponder(n: 18, limits: .none)
let fibDefault = try fibInResponder(n: 18, limits: Limits())
let fibCounted = try fibInResponder(n: 18, limits: Limits(instructions: 1 << 50))
row("fib(18) in a responder, no limits", fibNone)
row("fib(18) in a responder, default limits", fibDefault, against: ("of no limits: " + verdict(fibDefault / fibNone <= 1.05), fibNone))
row("fib(18) in a responder, exact instruction budget", fibCounted, against: ("of no limits (the count hook)", fibNone))
let lua10 = try engineFromLua(depth: 10)
let limited10 = try engineFromLua(depth: 10, limits: Limits())
let counted10 = try engineFromLua(depth: 10, limits: Limits(instructions: 1 << 50))
row("depth-10 dispatch from Lua, no limits", lua10)
row("depth-10 dispatch from Lua, default limits", limited10, against: ("of no limits: " + verdict(limited10 / lua10 <= 1.05), lua10))
row("depth-10 dispatch from Lua, exact instruction budget", counted10, against: ("of no limits (the count hook)", lua10))

print("")
print("Target 3: fixed cost of triggerEvent over the spec floor at depth 10 <= 120 ns; per hop <= plain Lua's")
let spec10 = specFloor(depth: 10)
let plain10 = plainLua(depth: 10)
let lua50 = try engineFromLua(depth: 50)
let plain50 = plainLua(depth: 50)
row("spec floor: method + 10 Lua calls + outcome table", spec10, against: ("of plain Lua", plain10))
row("engine from Lua, depth 10", lua10, against: ("of the spec floor", spec10))
let fixedOverFloor = lua10 - spec10
print(String(format: "%@%10.1f ns   %@", "fixed cost over the spec floor (engine minus floor)".padding(toLength: 58, withPad: " ", startingAt: 0), fixedOverFloor, verdict(fixedOverFloor <= 120)))
let conforming10 = conformingFloor(depth: 10)
row("conforming floor: spec floor + pcall + `at` + metatable", conforming10, against: ("of the spec floor", spec10))
let fixedOverConforming = lua10 - conforming10
print(String(format: "%@%10.1f ns   %@", "fixed cost over the conforming floor (proposed <= 120 ns)".padding(toLength: 58, withPad: " ", startingAt: 0), fixedOverConforming, verdict(fixedOverConforming <= 120)))
let engineHop = (lua50 - lua10) / 40, plainHop = (plain50 - plain10) / 40
row("per hop, engine (depths 10 and 50)", engineHop, against: ("of plain Lua's: " + verdict(engineHop <= plainHop), plainHop))

print("")
print("Swift closures: a chain of Swift closure responders <= the same chain of Lua responders,")
print("  both through trigger(_:at:) from Swift")
for depth in [1, 10] {
    let lua = try engineFromSwift(depth: depth)
    let swift = try swiftFromSwift(depth: depth)
    row("depth \(depth): Lua responders", lua)
    row("depth \(depth): Swift closures", swift, against: ("of Lua responders: " + verdict(swift <= lua), lua))
}
print("Typed Swift responders: receiveEvent(Tap.self) (3 fields) <= 1.5x untyped reading a field")
for depth in [1, 10] {
    let untyped = try typedSwift(depth: depth, typed: false)
    let typed = try typedSwift(depth: depth, typed: true)
    row("depth \(depth): untyped", untyped)
    row("depth \(depth): typed", typed, against: ("of untyped: " + verdict(typed <= 1.5 * untyped), untyped))
}
print("")
print("Target 2 (luahier dispatch >= 1.5x Lua + cjson, --jobs 2 >= 1.85x --jobs 1): Benchmarks/dispatch/run.sh,")
print("  which runs the peer and the CLI as whole processes side by side.")
print("Targets 4 (one dispatch engine) and 5 (C in a C target) are structure: ArchitectureTests, and the")
print("  docs/architecture.md.")

print("")
print("Depth 10, one responder per node returning \"notHandled\" (unhandled):")
let floor10 = cApiFloor(depth: 10)
row("C-API floor (lua_pcall per level, no tree)", floor10)
row("plain Lua (table tree + while loop)", plain10, against: ("of the C-API floor", floor10))
row("engine: leaf:triggerEvent from Lua", lua10, against: ("of the C-API floor", floor10))
row("", lua10, against: ("of plain Lua", plain10))
let swift10 = try engineFromSwift(depth: 10)
row("engine: trigger(_:at:) from Swift", swift10, against: ("of the C-API floor", floor10))

print("")
print("Depth sweep (engine from Lua / plain Lua):")
for depth in [1, 10, 50] {
    let engine = try engineFromLua(depth: depth)
    let plain = plainLua(depth: depth)
    row("depth \(depth): engine", engine, against: ("of plain Lua", plain))
    row("depth \(depth): plain Lua", plain)
    row("depth \(depth): spec floor", specFloor(depth: depth), against: ("of plain Lua", plain))
}
let early = try engineFromLua(depth: 10, handledAtLeaf: true)
let earlyPlain = plainLua(depth: 10, handledAt: 10)
row("depth 10, handled at the leaf: engine", early, against: ("of plain Lua", earlyPlain))
row("depth 10, handled at the leaf: plain Lua", earlyPlain)

print("")
print("Tracing (target: path tracing <= 1.3x):")
let traced = try engineFromLua(depth: 10, tracing: .path)
row("depth 10, tracing path", traced, against: ("of tracing off: " + verdict(traced <= 1.3 * lua10), lua10))
// The outcome's trace is built when first read: the row above never reads it, this one
// reads it every time.
let tracedAndRead = try engineFromLua(depth: 10, tracing: .path, readTrace: true)
row("depth 10, tracing path, trace read each time", tracedAndRead, against: ("of tracing off", lua10))

// MARK: Tree size, memory, Swift closures

/// Resident memory of this process, from /proc/self/status.
func residentKiB() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
}

print("")
print("Tree size (depth-10 dispatch from Lua; target: 1M nodes within 1.2x of 11):")
do {
    let small = try engineFromLua(depth: 10)
    let hierarchy = try Hierarchy(options: engineOptions())
    let before = residentKiB()
    let start = DispatchTime.now().uptimeNanoseconds
    try hierarchy.run(source: """
        local wide = hier.root:child("wide")
        for i = 1, 100 do
          local group = wide:child("g" .. i)
          for j = 1, 10000 do group:child("n" .. j) end
        end
        """, chunkName: "build.lua")
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let grown = residentKiB() - before
    print(String(format: "1,000,100 nodes built from Lua in %.2f s, %.0f MB resident (targets: <= 2 s, <= 200 MB)", seconds, Double(grown) / 1024))
    try hierarchy.run(source: """
        local node = hier.root
        for level = 1, 10 do node = node:child("n" .. level); node:receiveEvent(function(e) return "notHandled" end) end
        leaf, event = node, { type = "Tap" }
        function bench(n) for i = 1, n do leaf:triggerEvent(event) end end
        """, chunkName: "bench.lua")
    let large = try measure(dispatches) { n in try hierarchy.run(source: "bench(\(n))", chunkName: "run.lua") }
    row("depth 10 in a 1,000,000-node tree", large, against: ("of the 11-node tree", small))
}

print("")
print("Swift closures (receiveEvent returning .notHandled; target at depth 10: <= 1.5x):")
/// Per dispatch: the same closures in a plain loop, and `trigger(_:at:)` through a chain of
/// `depth` nodes with one of them each.
func swiftClosures(depth: Int) throws -> (loop: Double, engine: Double) {
    let hierarchy = try Hierarchy(options: engineOptions())
    var closures: [(Value) throws -> ReceiveResult] = []
    var node = hierarchy.root
    for level in 1...depth {
        node = try node.child("s\(level)")
        let closure: (Value) throws -> ReceiveResult = { event in event["type"] == nil ? .handled : .notHandled }
        closures.append(closure)
        node.receiveEvent(.any, closure)
    }
    let leaf = node
    let event = Value.event("Tap")
    let loop = try measure(dispatches) { n in
        for _ in 0..<n {
            for closure in closures where try closure(event) == .handled { break }
        }
    }
    let engine = try measure(dispatches / 4) { n in for _ in 0..<n { _ = try hierarchy.trigger(event, at: leaf) } }
    return (loop, engine)
}
var swiftSweep: [Int: (loop: Double, engine: Double)] = [:]
for depth in [1, 10, 50] {
    let (loop, engine) = try swiftClosures(depth: depth)
    swiftSweep[depth] = (loop, engine)
    row("depth \(depth): plain loop over the same closures", loop)
    row("depth \(depth): engine, trigger(_:at:)", engine, against: ("of the plain loop", loop))
}
// What the engine adds: a fixed cost per dispatch, and per hop (from depths 1 and 50).
if let one = swiftSweep[1], let fifty = swiftSweep[50] {
    let loopHop = (fifty.loop - one.loop) / 49, engineHop = (fifty.engine - one.engine) / 49
    row("per hop: engine", engineHop, against: ("of the plain loop's", loopHop))
    row("per dispatch, fixed: engine minus plain loop", (one.engine - engineHop) - (one.loop - loopHop))
}

extension ReceiveResult: Equatable {
    public static func == (a: ReceiveResult, b: ReceiveResult) -> Bool {
        switch (a, b) {
        case (.handled, .handled), (.notHandled, .notHandled): return true
        default: return false
        }
    }
}
