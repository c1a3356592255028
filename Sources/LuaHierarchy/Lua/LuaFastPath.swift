import CLua
import CLuaHost

/// The fast path of `node:triggerEvent(event)` (issue 4's hot path).
///
/// A top-level dispatch of an event table from a node the host has a current plan for is
/// taken by C (`luahier_trigger` in Sources/CLuaHost/fastpath.c): the chain's Lua `receiveEvent` responders are
/// called in one protected call of a small Lua loop (the plan walk, so each is a Lua-to-Lua
/// call), and while they answer "notHandled" and end in "handled" or at the top, Swift is
/// never entered and the outcome is made in C, as `pushOutcome` makes it.
/// Whatever else happens (a replacement, an error, a responder of another kind or in Swift,
/// a tree change) goes back to the dispatcher, which finishes the dispatch from there with the
/// same plan (`Dispatcher.resume`), so every rule of SPEC §4 stays the dispatcher's.
///
/// The plan (a `ChainPlan`, and its Lua table that the plan walk reads) is made by the host's
/// own `triggerEvent` the first time it dispatches from the node at the top level, and only
/// while nothing it skips is on (tracing, safety declarations, an observer). It is current
/// while the tree's chain-change count stands still. At most `maxPlans` are kept, in a
/// weak-keyed table (node userdata -> plan), so they cost memory only for nodes Lua holds
/// (`makeRoom` says what happens at the limit).
extension LuaBridge {
    /// How many plans are kept before all are dropped and made again as needed.
    static let maxPlans = 1024

    /// For a call that only looks like a hand-over (trusted code can reach the closure's
    /// upvalues through the debug library): refused, never read as one.
    private static let notFinishable = LuaArgumentError("triggerEvent: not a dispatch the host can finish")

    /// Sets `triggerEvent` in the node methods table at `index` to the fast closure.
    func installFastTrigger(inMethodsAt index: Int32) {
        let L = host.thread
        let methods = lua_absindex(L, index)
        fastState.pointee = luahier_Fast(
            changes: UnsafePointer(hierarchy.root.tree.chainChanges), depth: hierarchy.dispatcher.depthCounter,
            not_handled: host.notHandledAddress, handled: host.handledAddress, dispatch_charge: Self.dispatchCharge,
            dispatch_instructions: Int64(host.limits.dispatchInstructions ?? 0),
            dispatch_seconds: host.limits.dispatchTime ?? 0, walks: 0, handovers: 0)
        host.pushFunction({ [unowned self] call in try triggerEvent(call) }, via: luahier_trigger) {
            // The upvalues after the trampoline's two, in the order of luahier_fastpath.h's LUAHIER_UP_*.
            lua_pushlightuserdata(L, fastState)
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(plans))
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(host.domainTags))
            let words: [InternedString] = [.type, .status, .kind, .value, .at, .by, .responder, .index, .whereKey, .event]
            for word in words { host.push(word) }
            host.push(ResponderKind.receiveEvent.rawValue)
            host.push(InternedString.handled)
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(pendingTraces))
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(tracedOutcomeMetatable))
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(outcomeMetatable))
            return Int32(LUAHIER_UP_COUNT) - 2
        }
        host.setRawField(of: methods, "triggerEvent")
    }

    /// The host side of `triggerEvent`: a call the fast path did not take, or one it hands
    /// over to be finished.
    private func triggerEvent(_ call: HostCall) throws -> Int32 {
        let L = call.L
        if call.top == 10, lua_type(L, 6) == LUA_TLIGHTUSERDATA, lua_touserdata(L, 6) == UnsafeMutableRawPointer(fastState) {
            return try finishFastDispatch(call)
        }
        let node = try requireNode(call, 1, "triggerEvent")
        let event: Message
        do { event = try host.message(at: 2, as: .event) } catch {
            throw call.argumentError(2, "triggerEvent", "event expected, got \(error)")
        }
        if hierarchy.dispatcher.depth == 0 && lua_type(L, 2) == LUA_TTABLE { preparePlan(for: node, nodeAt: 1) }
        return try dispatch(event, at: node, call)
    }

    /// Makes the plan for dispatching from `node` (whose userdata is at `index`) unless it
    /// has a current one, or plans are not allowed now.
    private func preparePlan(for node: Node, nodeAt index: Int32) {
        guard hierarchy.dispatcher.plansAllowed else { return }
        let L = host.thread
        let userdata = lua_absindex(L, index)
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(plans))
        let table = lua_gettop(L)
        defer { lua_settop(L, table - 1) }
        lua_pushvalue(L, userdata)
        if lua_rawget(L, table) == LUA_TTABLE {
            lua_rawgeti(L, -1, lua_Integer(LUAHIER_PLAN_STAMP))
            if luahier_tointeger(L, -1) == node.tree.chainChanges.pointee { return }
        }
        lua_settop(L, table)
        if planCount >= Self.maxPlans && !makeRoom(inPlansAt: table, changes: node.tree.chainChanges.pointee) { return }
        if planCount == 0 { plansEpoch = node.tree.chainChanges.pointee }
        lua_pushvalue(L, userdata)
        if let plan = ChainPlan.make(from: node, root: hierarchy.root, traced: hierarchy.traceLevel == .path) {
            push(plan, from: node)
            planCount += 1
        } else {
            lua_pushnil(L)
        }
        lua_rawset(L, table)
    }

    /// Whether a plan may be made with `maxPlans` made already. Once the tree has changed since
    /// the first of them, some may be stale: all go, and plans are made again as needed.
    /// Otherwise those kept stay (emptying them would make a script that cycles through more
    /// nodes than that make a plan per dispatch and use none); every `maxPlans` refusals the
    /// table is counted again, as the collector takes the plans of nodes Lua let go.
    private func makeRoom(inPlansAt table: Int32, changes: Int) -> Bool {
        if changes != plansEpoch {
            clear(tableAt: table)
            planCount = 0
            return true
        }
        refusedPlans += 1
        guard refusedPlans >= Self.maxPlans else { return false }
        refusedPlans = 0
        planCount = count(tableAt: table)
        return planCount < Self.maxPlans
    }

    /// [-0, +0, -] How many entries the table at `index` has.
    private func count(tableAt index: Int32) -> Int {
        let L = host.thread
        var count = 0
        lua_pushnil(L)
        while lua_next(L, index) != 0 {
            luahier_pop(L, 1)
            count += 1
        }
        return count
    }

    /// [-0, +0, -] Empties the table at `index`.
    private func clear(tableAt index: Int32) {
        let L = host.thread
        lua_pushnil(L)
        while lua_next(L, index) != 0 {
            luahier_pop(L, 1)
            lua_pushvalue(L, -1)
            lua_pushnil(L)
            lua_rawset(L, index)
        }
    }

    /// [-0, +1, m] The Lua table of `plan`, laid out as luahier_fastpath.h's LUAHIER_PLAN_* say.
    private func push(_ plan: ChainPlan, from origin: Node) {
        let L = host.thread
        let count = plan.eventEntries.count
        let stride = LUAHIER_PLAN_STRIDE
        let first = LUAHIER_PLAN_ENTRIES
        lua_createtable(L, Int32(first - 1 + stride * count), 0)
        func set(_ slot: Int) { lua_rawseti(L, -2, lua_Integer(slot)) }
        lua_pushinteger(L, lua_Integer(plan.stamp))
        set(LUAHIER_PLAN_STAMP)
        host.pushRetainingUserdata(plan, metatableRef: planMetatable)
        set(LUAHIER_PLAN_OBJECT)
        host.push(origin.path)
        set(LUAHIER_PLAN_AT)
        host.push(plan.detached ? InternedString.detached : InternedString.unhandled)
        set(LUAHIER_PLAN_END)
        lua_pushinteger(L, lua_Integer(plan.links.count))
        set(LUAHIER_PLAN_HOPS)
        lua_pushinteger(L, lua_Integer(count))
        set(LUAHIER_PLAN_COUNT)
        lua_pushboolean(L, plan.traced ? 1 : 0)
        set(LUAHIER_PLAN_TRACED)
        for entry in 0..<count {
            let position = plan.eventEntries[entry].position
            let link = plan.links[Int(position.node)]
            let responder = plan.eventEntries[entry].responder
            let slot = first + stride * entry
            // Lua receiveEvent responders are called in C; the others are the host's to call.
            if responder.kind == .receiveEvent && responder.runToken != 0 {
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(responder.runToken))
            } else {
                lua_pushboolean(L, 0)
            }
            set(slot)
            // The walk reads a filter as false (any) or a set of type names.
            switch responder.filter {
            case .any:
                lua_pushboolean(L, 0)
            case .types(let names):
                lua_createtable(L, 0, Int32(names.count))
                for name in names {
                    host.push(name)
                    lua_pushboolean(L, 1)
                    lua_rawset(L, -3)
                }
            }
            set(slot + 1)
            host.push(link.node.path)
            set(slot + 2)
            lua_pushinteger(L, lua_Integer(position.offset + 1))
            set(slot + 3)
            host.push(responder.location)
            set(slot + 4)
        }
    }

    /// Finishes a dispatch the fast path walked until something the dispatcher must apply,
    /// or to its end when traced. Arguments: (node, event, plan, type, answer or error, fast,
    /// entry, code, memory refused, the entries called as bytes).
    private func finishFastDispatch(_ call: HostCall) throws -> Int32 {
        let L = call.L
        lua_rawgeti(L, 3, lua_Integer(LUAHIER_PLAN_OBJECT))
        let plan = host.retainedObject(at: -1, metatableRef: planMetatable) as? ChainPlan
        luahier_pop(L, 1)
        let entry = Int(luahier_tointeger(L, 7))
        guard let plan, let node = node(at: 1), plan.links[0].node === node, let type = host.string(at: 4),
            let called = host.bytes(at: 10), called.allSatisfy({ plan.eventEntries.indices.contains(Int($0)) }),
            (0...plan.eventEntries.count).contains(entry)
        else {
            throw Self.notFinishable
        }
        lua_pushvalue(L, 2)
        let event = Message(
            domain: .event, type: type,
            payload: .foreign(LuaPayload(host: host, ref: host.ref(), identity: lua_topointer(L, 2))))
        var passed = called.map(Int.init)
        var reply: (ResponderReply, atEntry: Int)?
        let code = Int(luahier_tointeger(L, 8))
        // Only the end is past the last entry; an answer or a failure came from the last one called.
        let answered = code == LUAHIER_STOP_ANSWER || code > 0
        guard (entry < plan.eventEntries.count) != (code == LUAHIER_STOP_END), !answered || passed.last == entry else {
            throw Self.notFinishable
        }
        var start = entry < plan.eventEntries.count ? plan.eventEntries[entry].position : RunPosition(node: 0, offset: 0)
        switch code {
        case LUAHIER_STOP_ANSWER:
            passed.removeLast()
            reply = (host.reply(at: 5, as: .event), entry)
        case LUAHIER_STOP_HOST:
            break
        case LUAHIER_STOP_CHANGED:
            start.offset += 1
        case LUAHIER_STOP_END:
            start = RunPosition(node: Int32(plan.links.count), offset: 0)
        case Int(LUA_ERRRUN), Int(LUA_ERRMEM), Int(LUA_ERRERR):
            passed.removeLast()
            lua_pushvalue(L, 5)
            let failure = host.failure(
                status: Int32(luahier_tointeger(L, 8)), memoryRefused: lua_toboolean(L, 9) != 0)
            luahier_pop(L, 1)
            reply = (ResponderReply(failure: failure, location: plan.responder(atEntry: entry).location), entry)
        default:
            throw Self.notFinishable
        }
        return try pushOutcome(of: call) { () throws(DispatchDepthExceeded) in
            try hierarchy.dispatcher.resume(plan, passed: passed, reply: reply, start: start, with: event)
        }
    }

    /// [-0, +1, m] The trace of a traced walk the fast path finished by itself, from the
    /// record at `index` (luahier_fastpath.h's LUAHIER_WALKTRACE_*): a step per responder called, as
    /// `pushTraceStep` makes them, all "notHandled" but a last "handled" if it ended so.
    func pushWalkTrace(recordAt index: Int32) {
        let L = host.thread
        let record = lua_absindex(L, index)
        lua_rawgeti(L, record, lua_Integer(LUAHIER_WALKTRACE_CALLED))
        let called = host.bytes(at: -1) ?? []
        luahier_pop(L, 1)
        lua_rawgeti(L, record, lua_Integer(LUAHIER_WALKTRACE_HANDLED))
        let handled = lua_toboolean(L, -1) != 0
        luahier_pop(L, 1)
        lua_rawgeti(L, record, lua_Integer(LUAHIER_WALKTRACE_PLAN))
        let plan = lua_gettop(L)
        lua_createtable(L, Int32(called.count), 0)
        for (step, entry) in called.enumerated() {
            let slot = lua_Integer(LUAHIER_PLAN_ENTRIES + Int(entry) * LUAHIER_PLAN_STRIDE)
            lua_createtable(L, 0, 6)
            let fields: [(InternedString, () -> Void)] = [
                (.index, { lua_rawgeti(L, plan, slot + 3) }),
                (.whereKey, { lua_rawgeti(L, plan, slot + 4) }),
                (.kind, { self.host.push(ResponderKind.receiveEvent.rawValue) }),
                (.node, { lua_rawgeti(L, plan, slot + 2) }),
                (.input, { lua_rawgeti(L, record, lua_Integer(LUAHIER_WALKTRACE_TYPE)) }),
                (.result, {
                    self.host.push(handled && step == called.count - 1 ? InternedString.handled : .notHandled)
                }),
            ]
            for (key, pushValue) in fields {
                pushValue()
                host.setRawField(of: -2, key)
            }
            lua_rawseti(L, -2, lua_Integer(step + 1))
        }
        luahier_remove(L, plan)
    }
}
