import CLua
import CLuaHost

/// The dispatch engine of a hierarchy (Sources/CLuaHost/include/luahier_enginetypes.h): every
/// dispatch, from Lua, from Swift or from `luahier dispatch`, nested or not, runs the one walk
/// (walk.c) along a plan the dispatcher makes, driven by C (engine.c). This side:
/// - lays a `ChainPlan` out as the Lua table the walk reads, and keeps one per origin node
///   (by its address: a plan holds no node), current while the tree's chains stand still;
/// - is what the walk calls for entries that are not Lua functions: Swift closures, alert
///   responders, the safety check's arrivals (host closures over the plan and the entry);
/// - starts dispatches from Swift and reads how they ended;
/// - makes removals reach the dispatches under way (the empty filter).
final class LuaEngine: DispatchEngine {
    // Unchecked: the bridge owns this engine, and the hierarchy owns the bridge, the host and the
    // dispatcher, so both outlive every call into it; a checked `unowned` reference costs an
    // atomic retain and release on every access (a fifth of a Swift responder's call).
    unowned(unsafe) let host: LuaHost
    unowned(unsafe) let dispatcher: Dispatcher
    /// `host`, for the calls of Swift closures: used through `_withUnsafeGuaranteedRef`, which
    /// retains nothing (a load of `host` is a retain and a release).
    private let hostReference: Unmanaged<LuaHost>
    /// What C shares with this side.
    let state = UnsafeMutablePointer<luahier_Engine>.allocate(capacity: 1)
    /// The metatable of the userdata that holds an entry's Swift object (LUAHIER_ENTRY_OBJECT).
    private var objectMetatable: Int32 = 0
    /// The host function behind every entry that is not a Lua function.
    private var entryFunction = 0
    /// What a dispatch started from Lua costs against the instruction budget, beyond the
    /// instructions its responders run: the host's own work.
    static let dispatchCharge: Int64 = 200
    /// How many plans the plans table holds at most (by node, and by path for request lines).
    static let maxPlans = 1024
    /// The node at a request line's path, if any (the hierarchy's lookup).
    var nodeAtPath: ((String) throws(TreeError) -> Node?)?
    /// The lines of a run of request lines, as C reads them (LuaLines.swift), reused.
    var lineBuffer: [luahier_Line] = []
    private var planCount = 0
    /// Per nesting depth, the Swift value the dispatch there holds as a Lua table, while no Lua
    /// code can have changed the table: in a plan whose entries are all the host's
    /// (LUAHIER_PLAN_HOSTONLY), the table never reaches Lua code, so Swift closures get the value
    /// it was made from (or was first read as) instead of a new reading of it per call.
    @exclusivity(unchecked) private var known = [KnownValue?](repeating: nil, count: Int(LUAHIER_MAX_DEPTH) + 1)
    /// What typed Swift responders decoded in the dispatches under way.
    private let decodings = TypedDecodings(depths: Int(LUAHIER_MAX_DEPTH))
    /// A class, so a closure is lent the value it holds without a copy of it.
    private final class KnownValue {
        let serial: Int64
        let table: UnsafeRawPointer
        let value: Value
        /// Whether the dispatch's plan is the host's alone (LUAHIER_PLAN_HOSTONLY): only then
        /// may the value stand for the table.
        let hostOnly: Bool

        init(serial: Int64, table: UnsafeRawPointer, value: Value, hostOnly: Bool) {
            self.serial = serial
            self.table = table
            self.value = value
            self.hostOnly = hostOnly
        }
    }

    init(host: LuaHost, dispatcher: Dispatcher) throws(HierarchyError) {
        self.host = host
        hostReference = Unmanaged.passUnretained(host)
        self.dispatcher = dispatcher
        state.initialize(to: luahier_Engine())
        let L = host.thread
        state.pointee.host = Unmanaged.passUnretained(self).toOpaque()
        state.pointee.changes = UnsafePointer(OpaquePointer(dispatcher.root.tree.chainChanges))
        state.pointee.depth = UnsafeMutablePointer(OpaquePointer(dispatcher.depthCounter))
        state.pointee.handled = host.handledAddress
        state.pointee.not_handled = host.notHandledAddress
        state.pointee.dispatch_charge = Self.dispatchCharge
        state.pointee.dispatch_instructions = Int64(host.limits.dispatchInstructions ?? 0)
        state.pointee.dispatch_seconds = host.limits.dispatchTime ?? 0
        state.pointee.tags = UnsafeMutableRawPointer(host.guardState)
            .advanced(by: MemoryLayout<luahier_Guard>.offset(of: \.tags)!)
            .assumingMemoryBound(to: luahier_TagSet.self)
        state.pointee.plans_ref = host.makeTableRef()
        // The words C pushes, by LUAHIER_WORD_* (spelled in luahier_enginetypes.h, the one list).
        luahier_pushwords(L)
        state.pointee.words_ref = host.ref()
        // What each kind must return, for contract errors (worded once, by ResponderKind).
        lua_createtable(L, 0, Int32(ResponderKind.allCases.count))
        for kind in ResponderKind.allCases {
            host.push(kind.expectedReturn)
            host.setRawField(of: -2, kind.rawValue)
        }
        state.pointee.expected_ref = host.ref()
        objectMetatable = host.makeTableRef()
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(objectMetatable))
        luahier_pushcfunction(L, luahier_finalize)
        host.setRawField(of: -2, "__gc")
        luahier_pop(L, 1)
        for traced in [false, true] {
            let walk: HostChunk = traced ? .tracedWalk : .walk
            let status = walk.bytecode.withUnsafeBufferPointer { bytes in
                luahier_pushwalk(L, state, traced ? 1 : 0, walk.source, bytes.baseAddress, bytes.count)
            }
            guard status == LUA_OK else {
                let message = lua_tolstring(L, -1, nil).map { String(cString: $0) } ?? "the dispatch walk did not load"
                luahier_pop(L, 1)
                throw .preludeFailed(message)
            }
            if traced { state.pointee.traced_walk_ref = host.ref() } else { state.pointee.walk_ref = host.ref() }
        }
        host.guardState.pointee.walk_ref = state.pointee.walk_ref
        host.guardState.pointee.traced_walk_ref = state.pointee.traced_walk_ref
        entryFunction = host.register { [unowned(unsafe) self] call in try callEntry(call) }
        state.pointee.plan_for = { engine, L, node in
            LuaEngine.from(engine).planFor(L!, Unmanaged<Node>.fromOpaque(node!).takeUnretainedValue())
        }
        state.pointee.ended = { engine, L, plan, result in LuaEngine.from(engine).ended(L!, plan, result!.pointee) }
        state.pointee.push_failure = { engine, L, failure in LuaEngine.from(engine).pushFailure(L!, failure) }
        state.pointee.json_out = host.jsonOut
        state.pointee.plan_at = { engine, L, path, length, make in
            let path = String(decoding: UnsafeRawBufferPointer(start: path, count: length), as: UTF8.self)
            return LuaEngine.from(engine).planAt(L!, path, make: make != 0)
        }
        settingsChanged()
        dispatcher.root.tree.responderRemoved = { [unowned self] responder in removedDuringDispatch(responder) }
    }

    deinit { state.deallocate() }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> LuaEngine {
        Unmanaged<LuaEngine>.fromOpaque(pointer!).takeUnretainedValue()
    }

    /// Copies what C reads of the dispatcher's settings.
    func settingsChanged() {
        state.pointee.depth_limit = dispatcher.depthLimit
        state.pointee.presents = dispatcher.presenter != nil ? 1 : 0
        state.pointee.presents_from = dispatcher.presentsFromDepth
        state.pointee.observes = dispatcher.observer != nil ? 1 : 0
    }

    /// How many dispatches ran, and how many plans were made (for tests).
    var counts: (dispatches: Int, plans: Int) { (Int(state.pointee.dispatches), Int(state.pointee.plans_made)) }

    // MARK: Dispatches from Swift

    func dispatch(_ message: consuming Message, at origin: Node) throws(DispatchDepthExceeded) -> DispatchResult {
        let L = host.thread
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        lua_checkstack(L, 8)
        pushPlan(for: origin)
        var message = message
        let made: Value? = if case .value(let value) = message.payload { value } else { nil }
        host.pushPayload(of: &message)
        host.push(message.type)
        // The table made of a Swift value stands for it: closures of a plan the host alone
        // answers get it as it is.
        if let made, lua_type(L, top + 2) == LUA_TTABLE, dispatcher.depth < Int(LUAHIER_MAX_DEPTH) {
            known[dispatcher.depth + 1] = KnownValue(
                serial: state.pointee.dispatches + 1, table: lua_topointer(L, top + 2), value: made,
                hostOnly: hostOnly(planAt: top + 1))
        }
        var result = luahier_Result()
        let failure = luahier_rundispatch(L, state, top + 1, top + 2, top + 3, message.domain == .error ? 1 : 0, &result)
        guard failure == 0 else {
            if made != nil { known[dispatcher.depth + 1] = nil }
            throw DispatchDepthExceeded(limit: dispatcher.depthLimit)
        }
        return dispatchResult(result, planAt: top + 1)
    }

    /// How the dispatch `r` describes ended, its final value held from Swift.
    func dispatchResult(_ r: luahier_Result, planAt plan: Int32) -> DispatchResult {
        let L = host.thread
        let payload: Payload
        if let kept = knownValue(of: r.value, on: L, serial: r.serial, depth: dispatcher.depth + 1) {
            payload = .value(kept.value)
        } else {
            lua_pushvalue(L, r.value)
            payload = .foreign(LuaPayload(host: host, ref: host.ref()))
        }
        let message = Message(domain: r.is_error != 0 ? .error : .event, type: host.string(at: r.type) ?? "", payload: payload)
        var result = DispatchResult(
            status: Self.status(r.status),
            message: message, by: nil, responder: nil, trace: nil, at: field(LUAHIER_PLAN_AT, of: plan) ?? "",
            hops: Int(integer(LUAHIER_PLAN_HOPS, of: plan)),
            chainCut: integer(LUAHIER_PLAN_END, of: plan) == LUAHIER_STATUS_DETACHED)
        if r.status == LUAHIER_STATUS_HANDLED {
            result.by = field(Int(r.slot) + LUAHIER_ENTRY_NODE, of: plan)
            result.responder = info(ofSlot: Int(r.slot), in: plan)
        }
        result.choice = host.string(at: r.choice)
        result.interrupted = r.tripped == LUAHIER_TRIPPED_INTERRUPTED
        if lua_type(L, r.trace) == LUA_TTABLE {
            result.trace = DispatchTrace(
                LuaTrace(engine: self, planAt: plan, recordAt: r.trace), meter: dispatcher.root.tree.meter)
        }
        return result
    }

    // MARK: Plans

    /// [-0, +1, m] The current plan of `origin`, made if need be.
    func pushPlan(for origin: Node) {
        let L = host.thread
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(state.pointee.plans_ref))
        let plans = lua_gettop(L)
        forgetStalePlans(in: plans)
        lua_pushlightuserdata(L, Unmanaged.passUnretained(origin).toOpaque())
        if lua_rawget(L, plans) == LUA_TTABLE {
            luahier_remove(L, plans)
            return
        }
        lua_settop(L, plans)
        let plan = dispatcher.plan(from: origin)
        state.pointee.plans_made += 1
        let whole = push(plan)
        // Kept unless `maxPlans` are kept already: those stay (a script cycling through more
        // nodes would otherwise make a plan per dispatch and use none). One laid out empty
        // (a trip cut it short, or its paths passed the cap) is never kept.
        if planCount < Self.maxPlans && whole {
            lua_pushlightuserdata(L, Unmanaged.passUnretained(origin).toOpaque())
            lua_pushvalue(L, -2)
            lua_rawset(L, plans)
            planCount += 1
        }
        luahier_remove(L, plans)
    }

    /// Once the tree's chains changed, every plan kept is stale: they all go. (The table stays
    /// the same one: the C trigger holds it.)
    private func forgetStalePlans(in plans: Int32) {
        let changes = dispatcher.root.tree.chainChanges.pointee
        guard changes != state.pointee.plans_epoch else { return }
        let L = host.thread
        if planCount > 0 {
            lua_pushnil(L)
            while lua_next(L, plans) != 0 {
                luahier_pop(L, 1)
                lua_pushvalue(L, -1)
                lua_pushnil(L)
                lua_rawset(L, plans)
            }
        }
        planCount = 0
        state.pointee.plans_epoch = changes
    }

    /// How many plans are kept now (for tests).
    var keptPlans: Int { planCount }

    /// [-0, +1, m] The path of the chain's node `node`: a prefix of the origin's.
    private func pushPath(of node: PathPrefix, in plan: ChainPlan) {
        if node.length == 0 {
            host.push("/")
            return
        }
        var origin = plan.origin
        origin.withUTF8 { bytes in
            _ = bytes.withMemoryRebound(to: CChar.self) { lua_pushlstring(host.thread, $0.baseAddress, node.length) }
        }
    }

    /// Whether the paths `plan` names fit under the memory cap: a plan holds each of its
    /// nodes' paths once, and a deep chain with responders all the way up names paths whose
    /// sizes add up to the square of its depth. Past the cap, the running budget trips on
    /// memory (the plan is then laid out without them).
    private func pathsFit(_ plan: ChainPlan) -> Bool {
        var total = 0
        var last: PathPrefix?
        for entry in plan.events + plan.errors where entry.node != last {
            last = entry.node
            total += MemoryCost.bytes(entry.node.length)
        }
        guard total > 0, host.memoryAvailable != nil else { return true }
        guard host.charge(total) else { return false }
        host.release(total)
        return true
    }

    /// [-0, +1, m] The Lua table of `plan`, laid out as luahier_enginetypes.h's LUAHIER_PLAN_* say.
    /// A plan a trip cut short (or whose paths would pass the cap) is laid out empty: the walk
    /// raises the limit's error at its first instruction. Returns whether it was laid out whole.
    private func push(_ plan: ChainPlan) -> Bool {
        let whole = plan.complete && pathsFit(plan)
        let plan = whole ? plan : plan.emptied
        let L = host.thread
        let stride = Int(LUAHIER_ENTRY_STRIDE)
        let first = Int(LUAHIER_PLAN_ENTRIES)
        let errorsFirst = first + stride * plan.events.count
        let last = errorsFirst + stride * plan.errors.count
        lua_createtable(L, Int32(last - 1), 0)
        let table = lua_gettop(L)
        func set(_ slot: Int) { lua_rawseti(L, table, lua_Integer(slot)) }
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(plan.trace == .off ? state.pointee.walk_ref : state.pointee.traced_walk_ref))
        set(Int(LUAHIER_PLAN_WALK))
        host.push(plan.origin)
        set(Int(LUAHIER_PLAN_AT))
        lua_pushinteger(L, lua_Integer(plan.detached ? LUAHIER_STATUS_DETACHED : LUAHIER_STATUS_UNHANDLED))
        set(Int(LUAHIER_PLAN_END))
        lua_pushinteger(L, lua_Integer(plan.hops))
        set(Int(LUAHIER_PLAN_HOPS))
        if plan.trace == .off { lua_pushboolean(L, 0) } else { host.push(plan.trace.rawValue) }
        set(Int(LUAHIER_PLAN_TRACE))
        let hostOnly = !(plan.events + plan.errors).contains { entry in
            entry.responder.map { callsLua($0) || $0.body is LuaResponderBody } ?? false
        }
        lua_pushboolean(L, hostOnly ? 1 : 0)
        set(Int(LUAHIER_PLAN_HOSTONLY))
        if plan.trace == .off { lua_pushboolean(L, 0) } else { lua_createtable(L, 0, 2) }
        set(Int(LUAHIER_PLAN_RECORDS))
        for (slot, value) in [(LUAHIER_PLAN_EVENTS, first), (LUAHIER_PLAN_ERRORS, errorsFirst), (LUAHIER_PLAN_LAST, last)] {
            lua_pushinteger(L, lua_Integer(value))
            set(Int(slot))
        }
        for (entries, base, otherBase) in [(plan.events, first, errorsFirst), (plan.errors, errorsFirst, first)] {
            var lastNode: (node: PathPrefix, slot: Int)?
            for (index, entry) in entries.enumerated() {
                let slot = base + stride * index
                // The object first: a host closure's call binds it (pushCall).
                pushObject(of: entry)
                set(slot + Int(LUAHIER_ENTRY_OBJECT))
                pushCall(of: entry, slot: slot, planAt: table)
                set(slot + Int(LUAHIER_ENTRY_CALL))
                pushFilter(of: entry)
                set(slot + Int(LUAHIER_ENTRY_FILTER))
                lua_pushinteger(L, lua_Integer(Self.entryClass(of: entry)))
                set(slot + Int(LUAHIER_ENTRY_CLASS))
                lua_pushinteger(L, lua_Integer(otherBase + stride * entry.cross))
                set(slot + Int(LUAHIER_ENTRY_CROSS))
                // Each node's path once: its entries share the string.
                if let lastNode, lastNode.node == entry.node {
                    lua_rawgeti(L, table, lua_Integer(lastNode.slot + Int(LUAHIER_ENTRY_NODE)))
                } else {
                    pushPath(of: entry.node, in: plan)
                }
                lastNode = (entry.node, slot)
                set(slot + Int(LUAHIER_ENTRY_NODE))
                lua_pushinteger(L, lua_Integer(entry.offset + 1))
                set(slot + Int(LUAHIER_ENTRY_INDEX))
                host.push(entry.responder?.location ?? "")
                set(slot + Int(LUAHIER_ENTRY_WHERE))
                host.push(entry.responder?.kind.rawValue ?? "arrive")
                set(slot + Int(LUAHIER_ENTRY_KIND))
            }
            // Runs of plain receives, each entry of one naming the run's last slot.
            var runLast: Int?
            for (index, entry) in entries.enumerated().reversed() {
                let slot = base + stride * index
                if let responder = entry.responder, responder.filter == .any,
                    responder.kind == .receiveEvent || responder.kind == .receiveError
                {
                    runLast = runLast ?? slot
                    lua_pushinteger(L, lua_Integer(runLast!))
                } else {
                    runLast = nil
                    lua_pushboolean(L, 0)
                }
                set(slot + Int(LUAHIER_ENTRY_RUN))
            }
        }
        return whole
    }

    /// [-0, +1, m] What the walk calls for `entry`: a Lua responder's own function, else a
    /// host closure over the plan (at `table`) and the entry's slot.
    private func pushCall(of entry: PlanEntry, slot: Int, planAt table: Int32) {
        let L = host.thread
        if let responder = entry.responder, callsLua(responder), let body = responder.body as? LuaResponderBody {
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(body.ref))
            return
        }
        // A Swift closure: its own entry (luahier_closureentry), bound to this engine and the
        // responder, which the entry's object userdata (pushObject) keeps alive.
        if case .responder(let responder) = entry.role, responder.kind != .handleAlertErrors {
            precondition(responder.body is SwiftResponderBody, "a responder body of another host")
            lua_pushvalue(L, table)
            host.push(InternedString.notHandled)
            host.push(InternedString.handled)
            luahier_pushskipmark(L)
            var binding = luahier_ClosureBinding(
                entry: swiftClosureEntry, engine: Unmanaged.passUnretained(self).toOpaque(),
                responder: Unmanaged.passUnretained(responder).toOpaque(),
                body: Unmanaged.passUnretained(unsafeDowncast(responder.body, to: SwiftResponderBody.self)).toOpaque())
            luahier_pushclosureentry(L, &binding)
            return
        }
        // A host closure over (plan, slot, the object, its role): the object is kept alive by
        // the entry's object userdata (pushObject), in the same plan.
        lua_pushvalue(L, table)
        lua_pushinteger(L, lua_Integer(slot))
        let role: EntryRole
        switch entry.role {
        case .responder(let responder):
            role = .alert
            lua_pushlightuserdata(L, Unmanaged.passUnretained(responder).toOpaque())
        case .arrival:
            role = .arrival
            lua_rawgeti(L, table, lua_Integer(slot + LUAHIER_ENTRY_OBJECT))
            lua_pushlightuserdata(L, lua_touserdata(L, -1)!.load(as: UnsafeMutableRawPointer.self))
            luahier_remove(L, -2)
        }
        lua_pushinteger(L, lua_Integer(role.rawValue))
        host.pushFunction(registered: entryFunction, upvalues: 4)
    }

    /// Whether the walk calls `responder`'s own Lua function.
    private func callsLua(_ responder: Responder) -> Bool {
        guard responder.kind != .handleAlertErrors, let body = responder.body as? LuaResponderBody else { return false }
        return body.host === host
    }

    /// [-0, +1, m] The host's object of an entry: what a host closure needs, held; else only
    /// the responder's address.
    private func pushObject(of entry: PlanEntry) {
        switch entry.role {
        case .responder(let responder) where callsLua(responder):
            lua_pushlightuserdata(host.thread, Unmanaged.passUnretained(responder).toOpaque())
        case .responder(let responder):
            host.pushRetainingUserdata(responder, metatableRef: objectMetatable)
        case .arrival(let arrival):
            host.pushRetainingUserdata(ArrivalBox(arrival), metatableRef: objectMetatable)
        }
    }

    /// [-0, +1, m] An entry's filter as the walk reads it: false (any type) or a set of names.
    private func pushFilter(of entry: PlanEntry) {
        let L = host.thread
        guard let responder = entry.responder, case .types(let names) = responder.filter else {
            lua_pushboolean(L, 0)
            return
        }
        lua_createtable(L, 0, Int32(names.count))
        for name in names {
            host.push(name)
            lua_pushboolean(L, 1)
            lua_rawset(L, -3)
        }
    }

    /// What an entry's answers mean to the walk (LUAHIER_CLASS_*).
    private static func entryClass(of entry: PlanEntry) -> Int32 {
        guard let responder = entry.responder else { return Int32(LUAHIER_CLASS_ARRIVE) }
        switch responder.kind {
        case .receiveEvent, .receiveError: return Int32(LUAHIER_CLASS_RECEIVE)
        case .handleEvent, .handleError: return Int32(LUAHIER_CLASS_HANDLE)
        case .transformEvent, .transformError: return Int32(LUAHIER_CLASS_TRANSFORM)
        case .catchError: return Int32(LUAHIER_CLASS_CATCH)
        case .handleAlertErrors: return Int32(LUAHIER_CLASS_ALERT)
        }
    }

    /// [-0, +0, -] The string at slot `slot` of the plan table at `plan`.
    private func field(_ slot: Int, of plan: Int32) -> String? {
        lua_rawgeti(host.thread, plan, lua_Integer(slot))
        defer { luahier_pop(host.thread, 1) }
        return host.string(at: -1)
    }

    /// [-0, +0, -] The path at slot `slot` of the plan table at `plan`, as a message shows it:
    /// at most its last `PathText.shownBytes` bytes (a message per node of a deep chain must
    /// not cost the square of its depth).
    private func shownPath(_ slot: Int, of plan: Int32) -> String {
        lua_rawgeti(host.thread, plan, lua_Integer(slot))
        defer { luahier_pop(host.thread, 1) }
        return host.withBytes(at: -1) { PathText.shown(UnsafeRawBufferPointer($0)) }
    }

    /// [-0, +0, -] The integer at slot `slot` of the plan table at `plan`.
    private func integer(_ slot: Int, of plan: Int32) -> Int {
        lua_rawgeti(host.thread, plan, lua_Integer(slot))
        defer { luahier_pop(host.thread, 1) }
        return Int(luahier_tointeger(host.thread, -1))
    }

    /// The responder at entry `slot` of the plan table at `plan`, as outcomes and traces name it.
    private func info(ofSlot slot: Int, in plan: Int32) -> ResponderInfo? {
        guard let kind = field(slot + LUAHIER_ENTRY_KIND, of: plan).flatMap(ResponderKind.init(rawValue:)) else { return nil }
        return ResponderInfo(
            index: integer(slot + LUAHIER_ENTRY_INDEX, of: plan), location: field(slot + LUAHIER_ENTRY_WHERE, of: plan) ?? "",
            kind: kind)
    }

    /// [-0, +0, -] The Swift object an entry's userdata at `index` holds (LUAHIER_ENTRY_OBJECT).
    private func object(at index: Int32) -> AnyObject? {
        host.retainedObject(at: index, metatableRef: objectMetatable)
    }

    // MARK: Calls from C

    /// `plan_for`: [-0, +1] the current plan of `node`.
    private func planFor(_ L: LuaState, _ node: Node) {
        host.asHost(on: L) { pushPlan(for: node) }
    }

    /// `plan_at`: [-0, +(0|1)] the current plan of the node at `path`, kept by the path too (a
    /// request line names its node by path); false with nothing pushed when there is none.
    private func planAt(_ L: LuaState, _ path: String, make: Bool) -> Int32 {
        host.asHost(on: L) {
            let node: Node
            do {
                guard let found = try nodeAtPath?(path) else { return Int32(LUAHIER_PLAN_NO_NODE) }
                node = found
            } catch {
                return Int32(LUAHIER_PLAN_NOT_A_PATH)
            }
            guard make else { return Int32(LUAHIER_PLAN_FOUND) }
            pushPlan(for: node)
            if planCount < Self.maxPlans {
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(state.pointee.plans_ref))
                host.push(path)
                lua_pushvalue(L, -3)
                lua_rawset(L, -3)
                luahier_pop(L, 1)
                planCount += 1
            }
            return Int32(LUAHIER_PLAN_FOUND)
        }
    }

    /// `ended`: a dispatch ended; an unhandled error goes to the presenter (the policy decides),
    /// and an observer sees the end.
    private func ended(_ L: LuaState, _ planIndex: Int32, _ r: luahier_Result) {
        host.asHost(on: L) {
            if r.is_error != 0 && r.status != LUAHIER_STATUS_HANDLED && dispatcher.presenter != nil {
                lua_pushvalue(L, r.value)
                let error = Message(
                    domain: .error, type: host.string(at: r.type) ?? "Error",
                    payload: .foreign(LuaPayload(host: host, ref: host.ref())))
                dispatcher.present(error, reportedAt: field(LUAHIER_PLAN_AT, of: planIndex) ?? "", chainCut: r.chain_cut != 0)
            }
            if let observer = dispatcher.observer {
                var result = dispatchResult(r, planAt: planIndex)
                result.enclosingStep = stepsRecorded(atDepth: dispatcher.depth - 1)
                observer(result, dispatcher.depth)
            }
        }
    }

    /// How many steps the traced dispatch at `depth` has recorded so far (nil when none runs
    /// there, or it records no trace): a dispatch nested in it was started by the responder of
    /// the step after those, the one running.
    private func stepsRecorded(atDepth depth: Int) -> Int? {
        guard depth >= 1, depth <= Int(LUAHIER_MAX_DEPTH) else { return nil }
        let ref = withUnsafeBytes(of: &state.pointee.state_refs) { $0.bindMemory(to: Int32.self)[depth] }
        guard ref != 0 else { return nil }
        let L = host.thread
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(ref))
        let state = lua_gettop(L)
        lua_rawgeti(L, state, lua_Integer(LUAHIER_STATE_RECORD))
        defer { luahier_pop(L, 2) }
        // True: traced, and no step written yet (luahier_enginetypes.h).
        let written = lua_type(L, -1) == LUA_TTABLE ? stepPlaces(ofRecordAt: lua_gettop(L)).count
            : lua_toboolean(L, -1) != 0 ? 0 : nil
        guard let written else { return nil }
        // With the entries of a run that passed the value by, not written yet: the run under
        // way, up to the entry reached, or one whose step waits, up to its last entry.
        let passedFrom = integer(Int(LUAHIER_STATE_PASSED), of: state)
        let passedTo = integer(Int(LUAHIER_STATE_PASSEDTO), of: state)
        let reached = integer(Int(LUAHIER_STATE_REACHED), of: state)
        let stride = Int(LUAHIER_ENTRY_STRIDE)
        let unwritten = passedFrom <= 0 ? 0
            : passedTo > 0 ? (passedTo - passedFrom) / stride + 1
            : reached > passedFrom ? (reached - passedFrom) / stride : 0
        return written + unwritten
    }

    /// `push_failure`: [-0, +1] a host-made error.
    private func pushFailure(_ L: LuaState, _ failure: Int32) {
        host.asHost(on: L) {
            // Where a refused dispatch was started is the caller's line, which the raiser sets.
            var error = failure == LUAHIER_FAIL_DEPTH
                ? Message(swiftError: DispatchDepthExceeded(limit: dispatcher.depthLimit), where: "?")
                : host.unlimitedMemoryError
            host.pushPayload(of: &error)
        }
    }

    // MARK: Entries the host calls

    /// The walk's call of an entry that is not a Lua function, with the value: upvalue 3 is
    /// the plan, 4 the entry's slot. Answers as a responder would.
    private func callEntry(_ call: HostCall) throws -> Int32 {
        let L = call.L
        let plan = luahier_upvalueindex(3)
        lua_settop(L, 1)
        // The entry's object and role, as pushCall bound them (the plan's object userdata keeps
        // the object alive): no lookup and no cast per call.
        let object = lua_touserdata(L, luahier_upvalueindex(5))!
        switch EntryRole(rawValue: Int(luahier_tointeger(L, luahier_upvalueindex(6)))) {
        case .arrival:
            let slot = Int(luahier_tointeger(L, luahier_upvalueindex(4)))
            let arrival = Unmanaged<ArrivalBox>.fromOpaque(object).takeUnretainedValue().arrival
            let domain: Domain = slot < integer(LUAHIER_PLAN_ERRORS, of: plan) ? .event : .error
            let type = host.stringField(ofTableAt: 1, "type") ?? ""
            // The paths are read only for a message: a value passing many declaring nodes of a
            // deep chain reads none (each read is as long as the path).
            let violation = dispatcher.arrive(
                at: arrival, node: { self.shownPath(slot + Int(LUAHIER_ENTRY_NODE), of: plan) },
                from: { self.shownPath(Int(LUAHIER_PLAN_AT), of: plan) },
                domain: domain, type: type
            ) {
                (try? host.value(at: 1, strict: false, bounded: true)) ?? .null
            }
            guard var violation else {
                lua_pushnil(L)
                return 1
            }
            host.pushPayload(of: &violation)
            host.push(violation.type)
            return 2
        case .alert:
            let slot = Int(luahier_tointeger(L, luahier_upvalueindex(4)))
            let responder = Unmanaged<Responder>.fromOpaque(object).takeUnretainedValue()
            let origin = field(LUAHIER_PLAN_AT, of: plan) ?? ""
            return try alert(responder, handledBy: field(slot + LUAHIER_ENTRY_NODE, of: plan) ?? "", reportedAt: origin, call)
        case nil:
            throw LuaArgumentError("not a responder of this hierarchy")
        }
    }

    /// What an entry the walk calls through the host is (pushCall).
    private enum EntryRole: Int {
        case alert = 2, arrival
    }

    /// luahier_closureentry's call of the Swift closure `binding` names, as a host function
    /// runs: LUAHIER_ANSWER_*.
    fileprivate func callClosure(_ L: LuaState, _ binding: luahier_ClosureBinding) -> Int32 {
        // The plan's object userdata holds the responder, the responder its body, and the
        // hierarchy the host: none is retained for the call.
        hostReference._withUnsafeGuaranteedRef { host in
            host.runAsFunction(on: L) { call in
                try Unmanaged<Responder>.fromOpaque(binding.responder)._withUnsafeGuaranteedRef { responder in
                    try Unmanaged<SwiftResponderBody>.fromOpaque(binding.body)._withUnsafeGuaranteedRef { body in
                        try callSwift(body, of: responder, planAt: luahier_upvalueindex(5), call)
                    }
                }
            }
        }
    }

    /// A Swift closure's call: its answer as Lua's are read (a value goes to the walk as it
    /// is), LUAHIER_ANSWER_*: the verdicts are the entry's to push.
    private func callSwift(_ body: SwiftResponderBody, of responder: Responder, planAt plan: Int32, _ call: HostCall) throws -> Int32 {
        // The depth as C counts it (a load of `dispatcher` is a retain and a release).
        let depth = state.pointee.depth.pointee
        let serial = luahier_dispatchserial(state)
        let answer: ReceiveResult?
        do {
            decodings.depth = depth
            if let kept = knownValue(of: 1, on: call.L, serial: serial, depth: depth) {
                // The value is the one kept: typed responders decode it once.
                decodings.identity = kept
                answer = try body.receive(kept.value, decodings: decodings)
            } else {
                decodings.identity = nil
                let value = try host.value(at: 1, strict: true)
                remember(value, madeAt: 1, serial: serial, depth: depth, planAt: plan)
                answer = try body.receive(value, decodings: decodings)
            }
        } catch {
            throw RaisedMessage(message: Message(swiftError: error, where: responder.location))
        }
        switch answer {
        case nil:
            // Not for it after all (a typed responder's value that does not decode): passed
            // untouched, as the walk passes a removed responder.
            return Int32(LUAHIER_ANSWER_SKIP)
        case .handled: return Int32(LUAHIER_ANSWER_HANDLED)
        case .notHandled: return Int32(LUAHIER_ANSWER_NOTHANDLED)
        case .replace(let value):
            do { try host.push(value) } catch {
                throw RaisedMessage(message: Message(swiftError: error, where: responder.location))
            }
            // An event table goes on as it is (an error gets `where` and `cause`): it stands
            // for the value it was made of.
            if responder.kind.replacementDomain == .event, value["type"]?.stringValue != nil {
                remember(value, madeAt: -1, serial: serial, depth: depth, planAt: plan)
            }
            return Int32(LUAHIER_ANSWER_PUSHED)
        }
    }

    /// The Swift value the table at `index` stands for in dispatch `serial` (at `depth`), if
    /// it is known and its plan is the host's alone.
    private func knownValue(of index: Int32, on L: LuaState, serial: Int64, depth: Int) -> KnownValue? {
        guard depth >= 1, depth < known.count, let kept = known[depth], kept.serial == serial,
            kept.hostOnly, kept.table == lua_topointer(L, index)
        else { return nil }
        return kept
    }

    /// Keeps `value` as what the table at `index` stands for, in a plan that is the host's alone.
    private func remember(_ value: Value, madeAt index: Int32, serial: Int64, depth: Int, planAt plan: Int32) {
        guard depth >= 1, depth < known.count, lua_type(host.thread, index) == LUA_TTABLE, hostOnly(planAt: plan) else { return }
        known[depth] = KnownValue(serial: serial, table: lua_topointer(host.thread, index), value: value, hostOnly: true)
    }

    private func hostOnly(planAt plan: Int32) -> Bool {
        lua_rawgeti(host.thread, plan, lua_Integer(LUAHIER_PLAN_HOSTONLY))
        defer { luahier_pop(host.thread, 1) }
        return lua_toboolean(host.thread, -1) != 0
    }

    /// An alert responder (contract §6): offered alertable errors only (nil otherwise); its body
    /// may choose one of the error's recovery options, the host's presenter shows the alert,
    /// and it is handled, with the choice settled (`Dispatcher.resolve`).
    private func alert(_ responder: Responder, handledBy node: String, reportedAt origin: String, _ call: HostCall) throws -> Int32 {
        let L = call.L
        guard host.stringField(ofTableAt: 1, "title") != nil else {
            lua_pushnil(L)
            return 1
        }
        lua_pushvalue(L, 1)
        var input = Message(
            domain: .error, type: host.stringField(ofTableAt: 1, "type") ?? "Error",
            payload: .foreign(LuaPayload(host: host, ref: host.ref())))
        let reply = responder.body.callForChoice(with: &input)
        let choice: String?
        switch reply {
        case .choice(let chosen): choice = chosen
        case .raised(let error), .aborted(let error): throw RaisedMessage(message: error)
        default:
            let got: String
            if case .unusable(let description) = reply { got = description } else { got = "a value" }
            throw RaisedMessage(message: .contractError(responder.kind, at: responder.location, returned: got))
        }
        // The title was read raw; a value that cannot be read as plain data after all is left
        // to the responders after this one.
        guard var alert = Alert(input.describedValue(bounded: true), handledBy: node, reportedAt: origin) else {
            lua_pushnil(L)
            return 1
        }
        if let choice, !alert.recovery.contains(choice) {
            throw RaisedMessage(
                message: .contractError(responder.kind, at: responder.location, returned: "\"\(choice)\"", options: alert.recovery))
        }
        alert.scriptChoice = choice
        let settled = dispatcher.resolve(alert)
        host.push(InternedString.handled)
        host.push(optional: settled)
        return 2
    }

    // MARK: Traces

    /// Where a step of a trace record is: the first slot of the record's step that holds it, and
    /// the slot of its entry (a record step can hold a run of steps: luahier_enginetypes.h).
    fileprivate struct StepPlace {
        let first: Int
        let entry: Int
    }

    /// The steps of the trace record at `record`, in order.
    fileprivate func stepPlaces(ofRecordAt record: Int32) -> [StepPlace] {
        let L = host.thread
        var places: [StepPlace] = []
        var first = Int(LUAHIER_TRACE_STEPS)
        while lua_rawgeti(L, record, lua_Integer(first + Int(LUAHIER_STEP_ENTRY))) == LUA_TNUMBER {
            let entry = Int(luahier_tointeger(L, -1))
            // A run's steps name their last entry where other steps have a type.
            let last = lua_rawgeti(L, record, lua_Integer(first + Int(LUAHIER_STEP_TYPE))) == LUA_TNUMBER
                ? Int(luahier_tointeger(L, -1)) : entry
            luahier_pop(L, 2)
            for slot in stride(from: entry, through: last, by: Int(LUAHIER_ENTRY_STRIDE)) {
                places.append(StepPlace(first: first, entry: slot))
            }
            first += Int(LUAHIER_STEP_STRIDE)
        }
        luahier_pop(L, 1)
        return places
    }

    /// A step of the trace record at `record`, of a dispatch along the plan at `plan`.
    fileprivate func step(at place: StepPlace, ofRecordAt record: Int32, planAt plan: Int32) -> TraceStep? {
        let L = host.thread
        let first = lua_Integer(place.first)
        lua_rawgeti(L, record, first + lua_Integer(LUAHIER_STEP_INPUT))
        lua_rawgeti(L, record, first + lua_Integer(LUAHIER_STEP_RESULT))
        defer { luahier_pop(L, 2) }
        guard let responder = info(ofSlot: place.entry, in: plan) else { return nil }
        let result: TraceStep.Result
        switch host.string(at: -1) {
        // A step that passed the value by writes no result.
        case nil: result = .notHandled
        case "handled": result = .handled
        case let written:
            lua_rawgeti(L, record, first + lua_Integer(LUAHIER_STEP_TYPE))
            let type = host.string(at: -1) ?? ""
            luahier_pop(L, 1)
            switch written {
            case "event": result = .replaced(.event, type: type)
            case "error": result = .replaced(.error, type: type)
            default: result = .raised(type: type)
            }
        }
        return TraceStep(
            node: field(place.entry + LUAHIER_ENTRY_NODE, of: plan) ?? "", responder: responder,
            input: host.string(at: -2) ?? "", result: result, before: nil, after: nil)
    }

    /// [-0, +1, m] The trace of the record at `record`, as Lua reads `outcome.trace`: a step
    /// table each ({index, where, kind, node, input, result, before, after}), its values the
    /// copies the walk made (no copy more).
    func pushTrace(ofRecordAt record: Int32, planAt plan: Int32) {
        let L = host.thread
        let record = lua_absindex(L, record)
        let plan = lua_absindex(L, plan)
        let places = stepPlaces(ofRecordAt: record)
        lua_createtable(L, Int32(places.count), 0)
        for (index, place) in places.enumerated() {
            guard let step = step(at: place, ofRecordAt: record, planAt: plan) else { continue }
            lua_createtable(L, 0, 8)
            lua_pushinteger(L, lua_Integer(step.responder.index))
            host.setRawField(of: -2, InternedString.index)
            host.push(step.responder.location)
            host.setRawField(of: -2, InternedString.whereKey)
            host.push(step.responder.kind.rawValue)
            host.setRawField(of: -2, InternedString.kind)
            host.push(step.node)
            host.setRawField(of: -2, InternedString.node)
            host.push(step.input)
            host.setRawField(of: -2, InternedString.input)
            switch step.result {
            case .handled: host.push(InternedString.handled)
            case .notHandled: host.push(InternedString.notHandled)
            default: host.push(step.resultDescription)
            }
            host.setRawField(of: -2, InternedString.result)
            let first = lua_Integer(place.first)
            for (field, key) in [(LUAHIER_STEP_BEFORE, InternedString.before), (LUAHIER_STEP_AFTER, .after)] {
                if lua_rawgeti(L, record, first + lua_Integer(field)) == LUA_TTABLE || lua_type(L, -1) == LUA_TSTRING {
                    host.setRawField(of: -2, key)
                } else {
                    luahier_pop(L, 1)
                }
            }
            lua_rawseti(L, -2, lua_Integer(index + 1))
        }
    }

    /// A trace record and its plan, held for a Swift reader (DispatchTrace).
    fileprivate final class LuaTrace: RecordedSteps {
        unowned let engine: LuaEngine
        let plan: Int32
        let record: Int32

        init(engine: LuaEngine, planAt plan: Int32, recordAt record: Int32) {
            self.engine = engine
            let L = engine.host.thread
            lua_pushvalue(L, plan)
            self.plan = engine.host.ref()
            lua_pushvalue(L, record)
            self.record = engine.host.ref()
        }

        deinit {
            engine.host.unref(plan)
            engine.host.unref(record)
        }

        private func withPushed<T>(_ body: (_ record: Int32, _ plan: Int32) -> T) -> T {
            let L = engine.host.thread
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(record))
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(plan))
            defer { luahier_pop(L, 2) }
            return body(lua_gettop(L) - 1, lua_gettop(L))
        }

        /// The record's steps, read once (a trace is read after its dispatch, which wrote it).
        private var readPlaces: [StepPlace]?
        private var places: [StepPlace] {
            if let readPlaces { return readPlaces }
            guard !engine.host.isClosed else { return [] }
            let places = withPushed { record, _ in engine.stepPlaces(ofRecordAt: record) }
            readPlaces = places
            return places
        }

        /// The slot of step `index`'s value before (or after) its replacement.
        private func valueSlot(ofStep index: Int, after: Bool) -> lua_Integer {
            lua_Integer(places[index].first + (after ? LUAHIER_STEP_AFTER : LUAHIER_STEP_BEFORE))
        }

        var count: Int { places.count }

        func step(_ index: Int) -> TraceStep {
            let place = places[index]
            return withPushed { record, plan in
                engine.step(at: place, ofRecordAt: record, planAt: plan)
                    ?? TraceStep(
                        node: "?", responder: ResponderInfo(index: 0, location: "?", kind: .receiveEvent), input: "?",
                        result: .notHandled)
            }
        }

        func hasValue(ofStep index: Int, after: Bool) -> Bool {
            guard !engine.host.isClosed else { return false }
            let slot = valueSlot(ofStep: index, after: after)
            return withPushed { record, _ in
                let L = engine.host.thread
                let type = lua_rawgeti(L, record, slot)
                luahier_pop(L, 1)
                return type == LUA_TTABLE || type == LUA_TSTRING
            }
        }

        func writeValue(ofStep index: Int, after: Bool, into writer: inout JSONWriter) -> Bool? {
            guard !engine.host.isClosed else { return nil }
            let slot = valueSlot(ofStep: index, after: after)
            return withPushed { record, _ in
                let host = engine.host
                let L = host.thread
                lua_rawgeti(L, record, slot)
                defer { luahier_pop(L, 1) }
                guard lua_type(L, -1) == LUA_TTABLE || lua_type(L, -1) == LUA_TSTRING else { return nil }
                // Written from the copy Lua holds (its strings shared with the values it copied),
                // within what the cap leaves: no Swift copy of a large value is ever made.
                for collected in [false, true] {
                    let limit = host.memoryAvailable ?? Int.max
                    Self.reserveTheRest(of: &writer, available: limit)
                    switch host.writeJSON(at: -1, into: &writer, limit: limit) {
                    case Int32(LUAHIER_JSON_WRITTEN): return true
                    case Int32(LUAHIER_JSON_LIMIT):
                        if collected || host.memoryAvailable == nil { return false }
                        host.collectGarbage()
                    default:
                        writer.write((try? host.value(at: -1, strict: false, bounded: true)) ?? .null)
                        return true
                    }
                }
                return false
            }
        }

        /// Output past which a trace's line is given, at once, room for all the cap still lets
        /// it hold (limits.md: the complexity audit, tracing `full`).
        static let reservingPast = 4 << 20

        /// A line of many large values, grown value by value, would be copied into a larger
        /// buffer at each one, holding it twice at the end; given room for the rest of what
        /// the cap leaves once large, it is copied once, while small, and the rest is pages
        /// it never touches.
        static func reserveTheRest(of writer: inout JSONWriter, available: Int) {
            let count = writer.bytes.count
            guard count >= reservingPast, available < Int.max - count, writer.bytes.capacity < count + available else { return }
            writer.bytes.reserveCapacity(count + available)
        }

        func value(ofStep index: Int, after: Bool) -> Value? {
            guard !engine.host.isClosed else { return nil }
            let slot = valueSlot(ofStep: index, after: after)
            return withPushed { record, _ in
                let L = engine.host.thread
                lua_rawgeti(L, record, slot)
                defer { luahier_pop(L, 1) }
                guard lua_type(L, -1) == LUA_TTABLE || lua_type(L, -1) == LUA_TSTRING else { return nil }
                return (try? engine.host.value(at: -1, strict: false, bounded: true)) ?? .null
            }
        }
    }

    // MARK: Removals

    /// A responder removed while dispatches are under way is not called by them either (contract
    /// §4): their plans call the skipper in its place (luahier_skipremoved). Those plans are
    /// stale from now on, so no later dispatch uses them.
    private func removedDuringDispatch(_ responder: Responder) {
        guard dispatcher.depth > 0, !host.isClosed else { return }
        luahier_skipremoved(host.thread, state, Unmanaged.passUnretained(responder).toOpaque())
    }
}

/// An arrival, held by its plan entry for the host closure that checks it.
private final class ArrivalBox {
    let arrival: Arrival
    init(_ arrival: Arrival) { self.arrival = arrival }
}

/// The Swift side of luahier_closureentry: the engine and the responder as the plan bound them.
private let swiftClosureEntry: luahier_ClosureEntry = { binding, L in
    let binding = binding!.pointee
    return Unmanaged<LuaEngine>.fromOpaque(binding.engine)._withUnsafeGuaranteedRef { $0.callClosure(L!, binding) }
}
