import CLua
import CLuaHost
#if canImport(Glibc)
import Glibc
#endif

typealias LuaState = OpaquePointer

/// A Swift function callable from Lua. It reads its arguments from `call`, pushes its
/// results and returns how many; it throws to raise a Lua error.
typealias HostFunction = (_ call: HostCall) throws -> Int32

/// The one owner of a `lua_State` (Redis's rule): every call into Lua goes through
/// `callProtected`, every call out of Lua through `hostEntry` and the C trampoline.
///
/// Nothing here may let a Lua error cross a Swift frame: Swift code only calls Lua API
/// functions that cannot raise (raw access, pushes of plain values) or protected calls.
final class LuaHost {
    /// The main thread. Valid until `close()`.
    let mainThread: LuaState
    /// The Lua thread now running: the main thread, or the coroutine that called the
    /// innermost host function. Every push and call goes to it.
    @exclusivity(unchecked) private(set) var thread: LuaState
    @exclusivity(unchecked) private(set) var isClosed = false
    @exclusivity(unchecked) private var functions: [HostFunction] = []
    /// Scratch for copying Lua values as plain data (LuaValues.swift): the tables being copied.
    @exclusivity(unchecked) var payloadAncestors: [UnsafeRawPointer] = []
    @exclusivity(unchecked) private var protectedDepth = 0
    /// Strings the hot path pushes or compares, each held by a registry reference: pushing
    /// one is a raw index instead of hashing its bytes again.
    @exclusivity(unchecked) private var internedRefs: [Int32] = []
    /// The addresses of the interned "handled" and "notHandled": Lua interns short strings,
    /// so a responder's verdict is recognised by address.
    /// The C JSON writer's buffer (LuaJSON.swift), made on first use.
    var jsonOutput: UnsafeMutablePointer<luahier_JSONOut>?
    private(set) var handledAddress: UnsafeRawPointer?
    private(set) var notHandledAddress: UnsafeRawPointer?
    /// Bytes of host copies charged for the host functions now running (LuaMemory.swift):
    /// each gives back what it added when it returns.
    @exclusivity(unchecked) var transientBytes = 0

    /// Memory and budget counters shared with the C allocator and count hook.
    let guardState: UnsafeMutablePointer<luahier_Guard>
    let limits: Limits

    init(limits: Limits, libraries: Libraries) throws(HierarchyError) {
        if limits.memory != nil { luahier_fixmmapthreshold() }
        guardState = .allocate(capacity: 1)
        guardState.initialize(to: luahier_Guard())
        guardState.pointee.in_host = 1
        guardState.pointee.limit = limits.memory.map { size_t(max(0, $0)) } ?? 0
        self.limits = limits
        guard let state = lua_newstate(luahier_alloc, guardState) else {
            luahier_dropcachedblocks(guardState)
            guardState.deallocate()
            throw .luaStateUnavailable
        }
        mainThread = state
        thread = state
        // Coroutines copy the main thread's extra space, so `from(_:)` works on any thread.
        luahier_getextraspace(state)!.storeBytes(of: UnsafeRawPointer(guardState), as: UnsafeRawPointer.self)
        guardState.pointee.host = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        guardState.pointee.main = state
        guardState.pointee.running = state
        // The watchdog enforces deadlines, and lets an interrupt (SIGINT) reach a state with
        // no limits too (Sources/CLuaHost/watchdog.c): every state is watched.
        if let cell = luahier_watch(guardState) {
            guardState.pointee.watch = cell.assumingMemoryBound(to: luahier_WatchCell.self)
        }
        // The count hook sends every Lua instruction through the VM's hook check
        // (luaG_traceexec): 1.5-2x slower. It is installed only for what needs it: an exact
        // instruction budget, or a time limit the watchdog cannot enforce (no watch cell, or
        // the full libraries, whose coroutine functions run threads the host does not note).
        // Otherwise a deadline costs one coarse clock read per dispatch, and the watchdog
        // hooks the running thread only once it has passed. (Memory is capped by the
        // allocator, which notes the place of a refusal itself.)
        let watched = guardState.pointee.watch != nil && libraries == .sandboxed
        if limits.countsInstructions || (limits.hasTime && !watched) {
            guardState.pointee.hooked = 1
            luahier_installhook(state)
        }
        luahier_tagsopen(state, &guardState.pointee.tags)
        for word in InternedString.allCases {
            push(word.text)
            internedRefs.append(ref())
        }
        push(InternedString.handled)
        handledAddress = lua_topointer(state, -1)
        push(InternedString.notHandled)
        notHandledAddress = lua_topointer(state, -1)
        luahier_pop(state, 2)
    }

    /// [-0, +1, -] Pushes an interned string.
    @inline(__always)
    func push(_ word: InternedString) {
        lua_rawgeti(thread, luahier_REGISTRYINDEX, lua_Integer(internedRefs[word.rawValue]))
    }

    /// [-1, +0, m] Pops the top value into `table[word]` without metamethods.
    @inline(__always)
    func setRawField(of table: Int32, _ word: InternedString) {
        let table = lua_absindex(thread, table)
        push(word)
        luahier_insert(thread, -2)
        lua_rawset(thread, table)
    }

    /// How many signals the watchdog has sent in this process.
    static var watchdogSignals: Int { luahier_watchdog_signals() }

    /// `Lua 5.4`, from the library's own version number (no state needed).
    static var luaVersion: String {
        let number = Int(lua_version(nil))
        return "Lua \(number / 100).\(number % 100)"
    }

    /// How many live tables carry a domain tag (luahier_tags.h), the slots that hold them, the
    /// longest probe a tag went on with, and the hash's seed.
    var domainTagCounts: (tagged: Int, slots: Int, longestProbe: Int, seed: UInt64) {
        let tags = guardState.pointee.tags
        return (Int(tags.count), 1 << Int(tags.bits), Int(tags.longest_probe), tags.seed)
    }

    /// Sets the domain tags' seed (for tests that know it, as an attacker would): the slots are
    /// empty, so none moves.
    func setDomainTagSeed(_ seed: UInt64) {
        precondition(guardState.pointee.tags.count == 0)
        guardState.pointee.tags.seed = seed
    }

    /// Whether the state has a hook (the count hook is the only one the host sets).
    var countHookInstalled: Bool { lua_gethookmask(mainThread) != 0 }

    /// Closes the state: finalizers run, held userdata release their Swift objects.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        luahier_unwatch(guardState.pointee.watch)
        // lua_close frees the tags' slots and the tables in any order.
        luahier_tagsclose(&guardState.pointee.tags)
        lua_close(mainThread)
        luahier_dropcachedblocks(guardState)
        drainReleases()
        free(guardState.pointee.released)
        guardState.deallocate()
        if let out = jsonOutput {
            free(out.pointee.bytes)
            out.deallocate()
            jsonOutput = nil
        }
    }

    deinit {
        meterReference?.disconnect()
        close()
    }

    /// How trees and charges hold this host as their meter (LuaMemory.swift), made on first use.
    var meterReference: MeterReference?

    /// The host that owns `L`.
    static func from(_ L: LuaState) -> LuaHost {
        let host = luahier_guard(L)!.pointee.host!
        return Unmanaged<LuaHost>.fromOpaque(host).takeUnretainedValue()
    }

    /// Bytes the Lua state holds now, and at most so far.
    var memoryUsed: Int { Int(guardState.pointee.used) }
    var memoryPeak: Int { Int(guardState.pointee.peak) }

    // MARK: Budgets

    /// Whose limits a budget has.
    enum BudgetScope {
        /// A top-level chunk: `Limits.instructions` and `time`.
        case chunk
        /// A dispatch: `Limits.dispatchInstructions` and `dispatchTime`.
        case dispatch
    }

    /// Runs `body` inside a budget of `scope`: a fresh top-level entry if none is under way,
    /// else nested in the running one (its own limits, capped by what is left around it). A
    /// trip ends this budget; the enclosing one then goes on with what is left of it.
    func withBudget<T, E: Error>(_ scope: BudgetScope, _ body: () throws(E) -> T) throws(E) -> T {
        let L = thread
        if guardState.pointee.active == 0 {
            let budget = topLevelBudget(scope)
            if guardState.pointee.watch != nil { luahier_watchdog_prepare_thread() }
            luahier_beginentry(L, budget.instructions, budget.seconds, budget.scope)
            defer { luahier_endentry(L) }
            return try body()
        }
        let (instructions, seconds) =
            scope == .chunk
            ? (limits.instructions, limits.time) : (limits.dispatchInstructions, limits.dispatchTime)
        var enclosing = luahier_Budget()
        luahier_pushbudget(L, &enclosing, Int64(instructions ?? 0), seconds ?? 0)
        defer { luahier_popbudget(L, &enclosing) }
        return try body()
    }

    /// The budget of a top-level entry of `scope`, as luahier_beginentry takes it: the limits
    /// that apply, and how a trip is worded (which flag set the limit).
    func topLevelBudget(_ scope: BudgetScope) -> (instructions: Int64, seconds: Double, scope: Int32) {
        var (instructions, seconds) =
            scope == .chunk
            ? (limits.instructions, limits.time) : (limits.dispatchInstructions, limits.dispatchTime)
        var wording = scope
        if scope == .dispatch && (instructions ?? 0) == 0 && (seconds ?? 0) == 0 {
            // A top-level dispatch (from Swift, or a `dispatch` input line) has no script run
            // around it: with no limit of its own, the script's apply.
            (instructions, seconds, wording) = (limits.instructions, limits.time, .chunk)
        }
        return (Int64(instructions ?? 0), seconds ?? 0, Int32(wording == .chunk ? LUAHIER_SCOPE_CHUNK : LUAHIER_SCOPE_DISPATCH))
    }

    /// How rules failed since the last top-level entry began (luahier_Guard.failures): kept
    /// after it ends, until the next begins.
    var ruleFailures: RuleFailures {
        let flags = guardState.pointee.failures
        guard flags != 0 else { return [] }
        return Self.failureFlags.reduce(into: []) { failures, pair in
            if flags & UInt32(pair.flag) != 0 { failures.insert(pair.failure) }
        }
    }

    /// Notes an error of `type` that a subscriber raised among the rules' failures, if it is one
    /// the host makes of rules failing (luahier_noteraised, the one list).
    func noteRaised(type: String) {
        var type = type
        type.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { luahier_noteraised(thread, $0.baseAddress, $0.count) }
        }
    }

    /// Each of the guard's LUAHIER_FAILED_* flags, as the failure it stands for.
    private static let failureFlags: [(flag: Int, failure: RuleFailures)] = [
        (LUAHIER_FAILED_LUA, .luaError), (LUAHIER_FAILED_CONTRACT, .responderContractError),
        (LUAHIER_FAILED_DEPTH, .dispatchDepthExceeded), (LUAHIER_FAILED_HOST, .hostError),
        (LUAHIER_FAILED_PAYLOAD, .payloadError), (LUAHIER_FAILED_NOMEMORY, .memoryError),
        (LUAHIER_FAILED_INSTRUCTIONS, .instructionLimitExceeded), (LUAHIER_FAILED_TIME, .timeLimitExceeded),
        (LUAHIER_FAILED_MEMORY, .memoryLimitExceeded),
    ]

    /// Whether the running budget has tripped on a limit (it must end).
    var limitTripped: Bool { luahier_tripped(thread) != 0 }

    /// Whether the running budget was tripped by an interrupt (SIGINT, SIGTERM).
    var interruptTripped: Bool { luahier_tripped(thread) == Int32(LUAHIER_TRIPPED_INTERRUPTED) }

    /// The error of the limit that tripped (or of the memory cap, when the allocator refused
    /// outside any budget), as C words it (limits.c, the one place), naming where it tripped.
    func limitError() -> Message {
        luahier_pushlimiterror(thread, guardState)
        defer { luahier_pop(thread, 1) }
        do {
            return try message(at: -1, as: .error)
        } catch {
            return .hostError("LimitExceeded", "a host limit was exceeded", where: nil)
        }
    }

    /// Out of memory with no cap set: malloc itself failed.
    var unlimitedMemoryError: Message {
        let state = guardState.pointee
        let source = withUnsafeBytes(of: state.last_source) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return .hostError("MemoryError", "out of memory (no memory limit was set)", where: state.last_line > 0 ? "\(source):\(state.last_line)" : nil)
    }

    /// Charges host work to the running entry's instruction budget.
    func charge(instructions: Int64) {
        luahier_charge(thread, instructions)
    }

    // MARK: Host functions

    /// [-0, +1, -] Pushes `body` as a Lua function.
    func pushFunction(_ body: @escaping HostFunction) {
        pushFunction(registered: register(body), upvalues: 0)
    }

    /// Keeps `body` as a host function for the host's life; returns what `pushFunction(registered:)`
    /// knows it by. For a function pushed as many closures (one per upvalue set).
    func register(_ body: @escaping HostFunction) -> Int {
        functions.append(body)
        return functions.count - 1
    }

    /// [-upvalues, +1, -] Pushes the host function `registered` as a closure over the `upvalues`
    /// values on top of the stack (they follow the trampoline's two: its call reads them at
    /// `luahier_upvalueindex(3)` on).
    func pushFunction(registered index: Int, upvalues: Int32) {
        lua_pushinteger(thread, lua_Integer(index))
        luahier_insert(thread, -(upvalues + 1))
        luahier_pushhostfunction(thread, hostEntry, 1 + upvalues)
    }

    /// Runs `body` as host code on `L`, for C that calls into the host in the middle of Lua's
    /// work (the dispatch engine's driver): pushes go to `L`, and allocations are the host's,
    /// which never fail, as for a host function.
    @inline(__always)
    func asHost<T>(on L: LuaState, _ body: () -> T) -> T {
        let caller = thread
        let callerMode = guardState.pointee.in_host
        thread = L
        guardState.pointee.in_host = 1
        defer {
            thread = caller
            guardState.pointee.in_host = callerMode
        }
        return body()
    }

    /// [-0, +1, m] Pushes `function`, a C function that may hand its call to `body` through
    /// the trampoline (which it ends in), as a closure with the upvalues `pushUpvalues` pushes
    /// and returns the count of, after the trampoline's two.
    func pushFunction(_ body: @escaping HostFunction, via function: lua_CFunction, upvalues pushUpvalues: () -> Int32) {
        functions.append(body)
        lua_pushinteger(thread, lua_Integer(functions.count - 1))
        let count = pushUpvalues()
        luahier_pushhostclosure(thread, hostEntry, function, 1 + count)
    }

    /// Names what this state's entries run (a script, an input) and the input line being
    /// answered, for the message the watchdog writes when it must end the process because a
    /// state is stuck in one C call past its deadline (luahier_watchdog.h). `name` nil keeps
    /// the one set before. One store per line.
    func nameEntries(_ name: String?, line: Int) {
        guard let cell = guardState.pointee.watch else { return }
        if let name { luahier_watchdog_name(cell, name, line) } else { luahier_watchdog_name(cell, nil, line) }
    }

    /// Marks this state as a shadow candidate's: stuck in one C call, it is left there, and
    /// the process goes on (luahier_watchdog_background).
    func markBackground() {
        if let cell = guardState.pointee.watch { luahier_watchdog_background(cell) }
    }

    /// Runs host function `index` for the C trampoline. Returns its result count, or -1
    /// with the error value pushed for the trampoline to raise.
    fileprivate func runFunction(_ index: Int, on L: LuaState) -> Int32 {
        asHost(on: L) { runFunction(index, call: HostCall(host: self, L: L)) }
    }

    private func runFunction(_ index: Int, call: HostCall) -> Int32 {
        run(call, functions[index])
    }

    /// Runs `body` as host function `call`, as the trampoline's entry does (a host closure the
    /// walk calls through a C function pointer of its own, without a registered function):
    /// host mode on `call.L`, the copies it holds given back, an error it throws pushed. Returns
    /// its result count, or -1 with the error value pushed.
    @inline(__always)
    func runAsFunction(on L: LuaState, _ body: (HostCall) throws -> Int32) -> Int32 {
        asHost(on: L) { run(HostCall(host: self, L: L), body) }
    }

    @inline(__always)
    private func run(_ call: HostCall, _ body: (HostCall) throws -> Int32) -> Int32 {
        let L = call.L
        let transientMark = transientBytes
        defer {
            if transientBytes != transientMark {
                release(transientBytes - transientMark)
                transientBytes = transientMark
            }
            if guardState.pointee.released_count > 0 { drainReleases() }
        }
        do {
            return try body(call)
        } catch let error as LuaArgumentError {
            lua_settop(L, call.top)
            pushBytes(Array(error.message.utf8))
            return -1
        } catch let raised as RaisedMessage {
            lua_settop(L, call.top)
            var message = raised.message
            pushPayload(of: &message)
            return -1
        } catch {
            lua_settop(L, call.top)
            var message = Message(swiftError: error, where: call.callerLocation ?? "?")
            pushPayload(of: &message)
            return -1
        }
    }

    // MARK: Calling Lua

    /// How a protected call ended.
    enum CallResult {
        case ok
        /// The code raised an error (or broke a rule the host checks).
        case failed(Message)
        /// An instruction, time or memory limit tripped: the entry must end.
        case limitExceeded(Message)
    }

    /// [-(nargs+1), +(nresults|0), -] Calls the function below the `nargs` arguments on the
    /// running thread, protected, with the message handler, with host allocations off. On
    /// failure the stack loses the function and arguments, and the error comes back.
    func callProtected(nargs: Int32, nresults: Int32) -> CallResult {
        let L = thread
        let base = lua_gettop(L) - nargs
        luahier_pushcfunction(L, luahier_msgh)
        luahier_insert(L, base)
        let result = callProtected(nargs: nargs, nresults: nresults, handlerAt: base)
        luahier_remove(L, base)
        return result
    }

    /// [-(nargs+1), +(nresults|0), -] As above, with the message handler already on the
    /// stack at `handlerAt` (below the function), where it stays.
    func callProtected(nargs: Int32, nresults: Int32, handlerAt base: Int32) -> CallResult {
        let L = thread
        let state = guardState
        let callerMode = state.pointee.in_host
        let callerRefused = state.pointee.memory_refused
        state.pointee.in_host = 0
        state.pointee.memory_refused = 0
        protectedDepth += 1
        let status = luahier_pcall(L, nargs, nresults, base)
        protectedDepth -= 1
        state.pointee.in_host = callerMode
        let memoryRefused = state.pointee.memory_refused != 0
        state.pointee.memory_refused = callerRefused
        if protectedDepth == 0 && guardState.pointee.released_count > 0 { drainReleases() }
        if status == LUA_OK {
            // A trip the code swallowed (pcall, coroutine, ...) and returned from still ends it.
            guard limitTripped else { return .ok }
            lua_settop(L, base)
            return .limitExceeded(limitError())
        }
        defer { luahier_pop(L, 1) }
        return failure(status: status, memoryRefused: memoryRefused)
    }

    /// [-0, +0, -] How a protected call that ended with `status` (not LUA_OK) failed, its
    /// error value at the top of the stack; `memoryRefused`: whether the allocator refused
    /// memory during the call.
    func failure(status: Int32, memoryRefused: Bool) -> CallResult {
        if limitTripped { return .limitExceeded(limitError()) }
        if status == LUA_ERRMEM || (status == LUA_ERRERR && memoryRefused) {
            return .limitExceeded(guardState.pointee.limit > 0 ? limitError() : unlimitedMemoryError)
        }
        return .failed(errorMessage(at: -1, status: status))
    }

    /// [-0, +0, -] The error value at `index` (after a failed protected call) as a message.
    private func errorMessage(at index: Int32, status: Int32) -> Message {
        if lua_type(thread, index) == LUA_TTABLE {
            do {
                return try message(at: index, as: .error)
            } catch {
                return .hostError(
                    "LuaError", "(error object is \(error.description))", where: stringField(ofTableAt: index, "where"))
            }
        }
        let text = string(at: index) ?? "(error object is not a string)"
        if status == LUA_ERRERR { return .hostError("LuaError", "error while handling an error: \(text)", where: nil) }
        return .hostError("LuaError", text, where: nil)
    }

    // MARK: Lifetimes

    /// [-0, +1, -] A full userdata that keeps `object` alive until Lua collects it, with the
    /// metatable held in the registry at `metatableRef` (which must release it in `__gc`).
    func pushRetainingUserdata(_ object: AnyObject, metatableRef: Int32, userValues: Int32 = 0) {
        let L = thread
        let block = lua_newuserdatauv(L, MemoryLayout<UnsafeRawPointer>.size, userValues)!
        block.storeBytes(of: Unmanaged.passRetained(object).toOpaque(), as: UnsafeRawPointer?.self)
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(metatableRef))
        lua_setmetatable(L, -2)
    }

    /// [-0, +0, -] The object a retaining userdata at `index` holds, if it has the
    /// metatable at `metatableRef` and was not finalized.
    func retainedObject(at index: Int32, metatableRef: Int32) -> AnyObject? {
        let L = thread
        guard lua_type(L, index) == LUA_TUSERDATA, lua_getmetatable(L, index) != 0 else { return nil }
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(metatableRef))
        let matches = lua_rawequal(L, -1, -2) != 0
        luahier_pop(L, 2)
        guard matches, let block = lua_touserdata(L, index),
            let raw = block.load(as: UnsafeRawPointer?.self)
        else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Releases what finalizers queued: after a full collection asked for from Swift, so what
    /// it freed is freed.
    func releaseCollected() {
        drainReleases()
    }

    /// Releases the Swift objects whose userdata Lua finalized (host.c, luahier_finalize).
    /// Called where no Lua call is under way in Swift: a release may run a `deinit`.
    func drainReleases() {
        let state = guardState
        while state.pointee.released_count > 0 {
            state.pointee.released_count -= 1
            let object = state.pointee.released[state.pointee.released_count]!
            Unmanaged<AnyObject>.fromOpaque(object).release()
        }
    }

    /// [-0, +0, -] Releases a registry reference, once (callers own exactly one).
    func unref(_ ref: Int32) {
        guard !isClosed, ref > 0 else { return }
        luaL_unref(thread, luahier_REGISTRYINDEX, ref)
    }

    /// [-1, +0, m] Pops the top value into a new registry reference.
    func ref() -> Int32 {
        luaL_ref(thread, luahier_REGISTRYINDEX)
    }
}

/// The single Swift entry behind every host function; upvalue 2 is the function's index.
private let hostEntry: luahier_HostFunction = { L in
    guard let L else { return 0 }
    let index = Int(luahier_tointeger(L, luahier_upvalueindex(2)))
    return LuaHost.from(L).runFunction(index, on: L)
}

/// Thrown by a host function to raise a plain-string argument error; the trampoline puts
/// the caller's `file:line:` in front.
struct LuaArgumentError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Thrown by a host function to raise an error value as it is (a table, keeping `type`).
/// Unchecked: it lives only between a host function's throw and its catch, on one thread.
struct RaisedMessage: Error, @unchecked Sendable {
    var message: Message
}
