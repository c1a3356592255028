import CLua
import CLuaHost

/// Binds one hierarchy's tree and dispatcher into its Lua host: the `hier` table, node
/// objects (one userdata per node, cached), responder handles, `print`.
final class LuaBridge {
    let host: LuaHost
    unowned let hierarchy: Hierarchy
    private var nodeMetatable: Int32 = 0
    private var handleMetatable: Int32 = 0
    /// node address -> userdata, weak-valued: a node's userdata lives while Lua holds it,
    /// and the same node always reads as the same Lua object.
    private var nodeCache: Int32 = 0
    /// Lazy traces: an outcome's trace becomes a Lua table only when a script reads it. The
    /// outcome gets `tracedOutcomeMetatable`, whose `__index` builds it from the steps kept
    /// in `pendingTraces` (outcome -> userdata holding them, weak keys).
    private(set) var tracedOutcomeMetatable: Int32 = 0
    /// Every other outcome's metatable, and a trace's: locked, they only name what they are
    /// (contract §7: getmetatable on a host object returns a locked placeholder).
    private(set) var outcomeMetatable: Int32 = 0
    private var traceMetatable: Int32 = 0
    private(set) var pendingTraces: Int32 = 0
    /// The dispatch engine: every dispatch of this hierarchy runs through it.
    private(set) var engine: LuaEngine!

    init(host: LuaHost, hierarchy: Hierarchy) throws(HierarchyError) {
        self.host = host
        self.hierarchy = hierarchy
        try install()
    }

    // MARK: Nodes as Lua values

    /// [-0, +1, m] Pushes the one userdata of `node`.
    func push(_ node: Node) {
        let L = host.thread
        let key = Unmanaged.passUnretained(node).toOpaque()
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(nodeCache))
        if lua_rawgetp(L, -1, key) != LUA_TNIL {
            luahier_remove(L, -2)
            return
        }
        luahier_pop(L, 1)
        // Two user values: the path `__index` keeps (luahier_nodeindex).
        host.pushRetainingUserdata(node, metatableRef: nodeMetatable, userValues: 2)
        lua_pushvalue(L, -1)
        lua_rawsetp(L, -3, key)
        luahier_remove(L, -2)
    }

    /// [-0, +0, -] The node whose userdata is at `index`.
    func node(at index: Int32) -> Node? {
        host.retainedObject(at: index, metatableRef: nodeMetatable) as? Node
    }

    // MARK: Installation

    private func install() throws(HierarchyError) {
        let L = host.thread
        nodeMetatable = host.makeTableRef()
        handleMetatable = host.makeTableRef()
        nodeCache = host.makeTableRef(weakMode: "v")
        tracedOutcomeMetatable = host.makeTableRef()
        outcomeMetatable = host.makeTableRef()
        traceMetatable = host.makeTableRef()
        for (metatable, name) in [(outcomeMetatable, "outcome"), (traceMetatable, "trace")] {
            withTable(metatable) {
                host.push(name)
                host.setRawField(of: -2, "__metatable")
            }
        }
        pendingTraces = host.makeTableRef(weakMode: "k")
        engine = try LuaEngine(host: host, dispatcher: hierarchy.dispatcher)
        withTable(nodeMetatable) {
            luahier_pushcfunction(L, luahier_finalize)
            host.setRawField(of: -2, "__gc")
            host.pushFunction { [unowned self] call in
                host.push(node(at: 1).map { "node \($0.path)" } ?? "node (finalized)")
                return 1
            }
            host.setRawField(of: -2, "__tostring")
        }
        withTable(tracedOutcomeMetatable) {
            host.pushFunction { [unowned self] call in try materializeTrace(call) }
            host.setRawField(of: -2, "__index")
            // Locked: getmetatable(outcome) shows this word, never the table (contract §7).
            host.push("outcome")
            host.setRawField(of: -2, "__metatable")
        }
        withTable(handleMetatable) {
            luahier_pushcfunction(L, luahier_finalize)
            host.setRawField(of: -2, "__gc")
            host.pushFunction { [unowned self] call in
                host.push(registration(at: 1)?.summary ?? "handle (finalized)")
                return 1
            }
            host.setRawField(of: -2, "__tostring")
        }

        // The prelude, then its arguments, in order.
        try host.load(.hostPrelude, name: "=[luahier]")
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(nodeMetatable))
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(handleMetatable))
        pushFunctionTable(nodeMethods())
        installTriggers(inMethodsAt: -1)
        pushFunctionTable(nodeGetters())
        pushFunctionTable(handleMethods())
        pushFunctionTable(hierFunctions())
        push(hierarchy.root)
        host.setRawField(of: -2, "root")
        pushFunctionTable(settingsFunctions())
        host.pushFunction { [unowned self] call in
            if let byteOutput = hierarchy.byteOutput {
                guard lua_type(call.L, 1) == LUA_TSTRING else { throw call.argumentError(1, "print", "string expected") }
                try host.withBytes(at: 1) { bytes in
                    host.charge(instructions: Int64(bytes.count / 64))
                    try byteOutput(bytes)
                }
            } else {
                hierarchy.output(try call.string(1, "print"))
            }
            return 0
        }
        luahier_pushcfunction(L, luahier_makenodeindex)
        lua_pushlightuserdata(L, UnsafeMutableRawPointer(hierarchy.root.tree.chainChanges))
        try host.runSetup(nargs: 10, "the hier prelude")
    }

    /// Runs `body` with the table at `ref` pushed, popping it after.
    private func withTable(_ ref: Int32, _ body: () -> Void) {
        lua_rawgeti(host.thread, luahier_REGISTRYINDEX, lua_Integer(ref))
        body()
        luahier_pop(host.thread, 1)
    }

    /// [-0, +1, m] A table of host functions.
    private func pushFunctionTable(_ functions: [String: HostFunction]) {
        lua_createtable(host.thread, 0, Int32(functions.count))
        for (name, function) in functions.sorted(by: { $0.key < $1.key }) {
            host.pushFunction(function)
            host.setRawField(of: -2, name)
        }
    }

    /// The node argument at `index`, or an argument error.
    func requireNode(_ call: HostCall, _ index: Int32, _ function: String) throws -> Node {
        guard let node = node(at: index) else { throw call.argumentError(index, function, "node expected") }
        return node
    }

    private func registration(at index: Int32) -> (any Registration)? {
        host.retainedObject(at: index, metatableRef: handleMetatable) as? any Registration
    }

    // MARK: The API (contract §2, §4, §5)

    private func nodeGetters() -> [String: HostFunction] {
        [
            "name": { [unowned self] call in host.push(try requireNode(call, 1, "name").name); return 1 },
            "path": { [unowned self] call in
                let path = try requireNode(call, 1, "path").path
                host.charge(instructions: Int64(path.utf8.count / 64))
                host.push(path)
                return 1
            },
            "parent": { [unowned self] call in
                if let parent = try requireNode(call, 1, "parent").parent { push(parent) } else { lua_pushnil(call.L) }
                return 1
            },
        ]
    }

    private func nodeMethods() -> [String: HostFunction] {
        var methods: [String: HostFunction] = [
            "child": { [unowned self] call in
                let node = try requireNode(call, 1, "child")
                let name = try call.string(2, "child")
                do { push(try node.child(name)) } catch {
                    if case .memoryLimitExceeded? = error as? TreeError { throw RaisedMessage(message: host.limitError()) }
                    throw LuaArgumentError("bad argument #1 to 'child' (\(error))")
                }
                return 1
            },
            "children": { [unowned self] call in
                let children = try requireNode(call, 1, "children").children
                lua_createtable(call.L, Int32(clamping: children.count), 0)
                for (offset, child) in children.enumerated() {
                    push(child)
                    lua_rawseti(call.L, -2, lua_Integer(offset + 1))
                }
                return 1
            },
            "remove": { [unowned self] call in
                let node = try requireNode(call, 1, "remove")
                if node.isRoot { throw LuaArgumentError("the root cannot be removed") }
                node.remove()
                return 0
            },
            "moveTo": { [unowned self] call in
                let node = try requireNode(call, 1, "moveTo")
                guard let parent = self.node(at: 2) else { throw call.argumentError(2, "moveTo", "node expected") }
                do { try node.move(to: parent) } catch { throw LuaArgumentError("\(error)") }
                return 0
            },
        ]
        methods["subscribe"] = { [unowned self] call in try subscribe(call) }
        methods["triggers"] = { [unowned self] call in try declare(.event, call) }
        methods["reports"] = { [unowned self] call in try declare(.error, call) }
        methods["publish"] = { [unowned self] call in try publish(call) }
        for kind in ResponderKind.allCases where kind != .handleAlertErrors {
            methods[kind.rawValue] = { [unowned self] call in try register(kind, call) }
        }
        methods["handleAlertErrors"] = { [unowned self] call in try registerAlertHandler(call) }
        return methods
    }

    /// A handle's methods: `remove`, and every registration, which registers the next
    /// responder on the handle's node (`node:receiveError(f):transformError(g)`, contract §4).
    private func handleMethods() -> [String: HostFunction] {
        var methods: [String: HostFunction] = [
            "remove": { [unowned self] call in
                guard let registration = registration(at: 1) else { throw call.argumentError(1, "remove", "handle expected") }
                registration.remove()
                return 0
            }
        ]
        let nodeMethods = nodeMethods()
        for name in ResponderKind.allCases.map(\.rawValue) + ["subscribe"] {
            guard let register = nodeMethods[name] else { continue }
            methods[name] = { [unowned self] call in
                guard let registration = registration(at: 1) else { throw call.argumentError(1, name, "handle expected") }
                guard let node = registration.liveNode else {
                    throw LuaArgumentError("\(name): this handle's registration was removed, so it has no node to register on")
                }
                push(node)
                luahier_replace(call.L, 1)
                return try register(call)
            }
        }
        return methods
    }

    private func hierFunctions() -> [String: HostFunction] {
        [
            "node": { [unowned self] call in
                let path = try call.string(1, "node")
                // Looking the path up copies its names.
                try host.holdWhileCalled(MemoryCost.names(inPath: path))
                do {
                    if let node = try hierarchy.node(at: path) { push(node) } else { lua_pushnil(call.L) }
                } catch {
                    throw LuaArgumentError("\(error)")
                }
                return 1
            },
            "maskDecision": { [unowned self] call in
                if lua_type(call.L, 1) == LUA_TNIL {
                    hierarchy.decisionMask = nil
                    return 0
                }
                guard lua_type(call.L, 1) == LUA_TFUNCTION else { throw call.argumentError(1, "maskDecision", "function expected") }
                hierarchy.decisionMask = LuaDecisionMask(host: host, functionAt: 1)
                return 0
            },
        ]
    }

    /// `get(key)` returns a setting; `set(key, value)` returns true, or false and a message
    /// that the prelude raises at the caller's line.
    private func settingsFunctions() -> [String: HostFunction] {
        [
            "get": { [unowned self] call in
                switch host.string(at: 1) {
                case "tracing": host.push(hierarchy.traceLevel.rawValue)
                case "depthLimit": lua_pushinteger(call.L, lua_Integer(hierarchy.depthLimit))
                case "safety": host.push(hierarchy.safety.rawValue)
                case "detached": host.push(hierarchy.detachedPolicy.rawValue)
                default: lua_pushnil(call.L)
                }
                return 1
            },
            "set": { [unowned self] call in
                let L = call.L
                var problem: String?
                switch host.string(at: 1) {
                case "tracing":
                    if lua_type(L, 2) == LUA_TBOOLEAN {
                        hierarchy.traceLevel = lua_toboolean(L, 2) != 0 ? .path : .off
                    } else if let text = host.string(at: 2), let level = TraceLevel(rawValue: text) {
                        hierarchy.traceLevel = level
                    } else {
                        problem = "hier.tracing takes true, false, \"off\", \"path\" or \"full\""
                    }
                case "depthLimit":
                    let limits = Hierarchy.depthLimits
                    if lua_isinteger(L, 2) != 0, limits.contains(Int(truncatingIfNeeded: luahier_tointeger(L, 2))) {
                        hierarchy.depthLimit = Int(luahier_tointeger(L, 2))
                    } else {
                        problem = "hier.depthLimit takes an integer from \(limits.lowerBound) to \(limits.upperBound) (Lua's C stack allows no deeper nesting)"
                    }
                case "safety":
                    if let text = host.string(at: 2), let level = SafetyLevel(rawValue: text) {
                        hierarchy.safety = level
                    } else {
                        problem = "hier.safety takes \"strict\", \"relaxed\" or \"disabled\""
                    }
                case "detached":
                    if let text = host.string(at: 2), let policy = DetachedPolicy(rawValue: text) {
                        hierarchy.detachedPolicy = policy
                    } else {
                        problem = "hier.detached takes \"drop\" or \"presenter\""
                    }
                default:
                    problem = "hier has no setting \(host.string(at: 1).map { "'\($0)'" } ?? "of that key") (settings: tracing, depthLimit, safety, detached)"
                }
                lua_pushboolean(L, problem == nil ? 1 : 0)
                host.push(optional: problem)
                return 2
            },
        ]
    }

    /// `node:receiveEvent([filter,] fn)` and the six other kinds.
    private func register(_ kind: ResponderKind, _ call: HostCall) throws -> Int32 {
        let name = kind.rawValue
        let node = try requireNode(call, 1, name)
        let filter: TypeFilter
        let function: Int32
        switch call.top {
        case 2:
            filter = .any
            function = 2
        case 3:
            filter = try self.filter(at: 2, call, name)
            function = 3
        default:
            throw LuaArgumentError("\(name) takes ([filter,] function), got \(call.top - 1) arguments")
        }
        let body = try luaBody(at: function, call, name)
        body.charge = try registrationCharge(MemoryCost.registration + MemoryCost.string(body.location) + MemoryCost.filter(filter))
        let responder = Responder(kind: kind, filter: filter, body: body, location: body.location)
        node.appendResponder(responder)
        host.pushRetainingUserdata(responder, metatableRef: handleMetatable)
        return 1
    }

    /// `node:triggers{...}` / `node:reports{...}`: a type name or a list of them.
    private func declare(_ domain: Domain, _ call: HostCall) throws -> Int32 {
        let name = domain == .event ? "triggers" : "reports"
        let node = try requireNode(call, 1, name)
        guard call.top == 2, lua_type(call.L, 2) != LUA_TNIL else {
            throw LuaArgumentError("\(name) takes a list of type names, as in node:\(name){\"A\", \"B\"}")
        }
        let types = try filter(at: 2, call, name).typeNames
        guard node.declare(types, as: domain, at: call.callerLocation ?? "?", metered: true) else {
            throw RaisedMessage(message: host.limitError())
        }
        return 0
    }

    /// `node:subscribe(type, fn)`: `type` is a type name or a list of them.
    private func subscribe(_ call: HostCall) throws -> Int32 {
        let node = try requireNode(call, 1, "subscribe")
        guard call.top == 3 else {
            throw LuaArgumentError("subscribe takes (type, function), got \(call.top - 1) arguments")
        }
        guard lua_type(call.L, 2) != LUA_TNIL else {
            throw call.argumentError(2, "subscribe", "type name or list of type names expected")
        }
        let filter = try self.filter(at: 2, call, "subscribe")
        let body = try luaBody(at: 3, call, "subscribe")
        body.charge = try registrationCharge(MemoryCost.registration + MemoryCost.string(body.location) + MemoryCost.filter(filter))
        let subscription = Subscription(filter: filter, body: body, location: body.location)
        node.appendSubscription(subscription)
        host.pushRetainingUserdata(subscription, metatableRef: handleMetatable)
        return 1
    }

    /// `node:publish(event [, {to = "first" | "last" | "all"}])` returns how many
    /// subscriptions received the event.
    private func publish(_ call: HostCall) throws -> Int32 {
        let L = call.L
        let node = try requireNode(call, 1, "publish")
        let event: Message
        do { event = try host.message(at: 2, as: .event) } catch {
            throw call.argumentError(2, "publish", "event expected, got \(error)")
        }
        var scope = PublishScope.all
        switch lua_type(L, 3) {
        case LUA_TNONE, LUA_TNIL:
            break
        case LUA_TTABLE:
            lua_pushnil(L)
            while lua_next(L, 3) != 0 {
                defer { luahier_pop(L, 1) }
                guard host.string(at: -2) == "to", lua_type(L, -2) == LUA_TSTRING else {
                    let key = lua_type(L, -2) == LUA_TSTRING ? "'\(host.string(at: -2)!)'" : "a \(host.typeName(at: -2)) key"
                    throw LuaArgumentError("bad argument #2 to 'publish' (unknown option \(key); the options are: to)")
                }
                guard let text = host.string(at: -1), let chosen = PublishScope(rawValue: text) else {
                    throw LuaArgumentError("bad argument #2 to 'publish' ('to' must be \"first\", \"last\" or \"all\")")
                }
                scope = chosen
            }
        default:
            throw call.argumentError(3, "publish", "options table expected")
        }
        host.charge(instructions: LuaEngine.dispatchCharge)
        let result: PublishResult
        do {
            result = try hierarchy.withDispatchBudget { () throws(DispatchDepthExceeded) in
                try hierarchy.dispatcher.publish(event, from: node, to: scope)
            }
        } catch {
            throw RaisedMessage(message: Message(swiftError: error, where: call.callerLocation ?? "?"))
        }
        // Choosing the recipients, and checking them after the tree changed, was charged as
        // it went (Dispatcher.publish).
        lua_pushinteger(L, lua_Integer(result.delivered))
        return 1
    }

    /// `node:handleAlertErrors([fn])`: `fn(err)` may return one of `err.recovery`, or nil to
    /// leave the choice to the host.
    private func registerAlertHandler(_ call: HostCall) throws -> Int32 {
        let node = try requireNode(call, 1, "handleAlertErrors")
        let body: any ResponderBody
        let location: String
        switch call.top {
        case 1:
            location = call.callerLocation ?? "?"
            let choice = HostChoiceBody()
            choice.charge = try registrationCharge(MemoryCost.registration + MemoryCost.string(location))
            body = choice
        case 2:
            let function = try luaBody(at: 2, call, "handleAlertErrors")
            function.charge = try registrationCharge(MemoryCost.registration + MemoryCost.string(function.location))
            body = function
            location = function.location
        default:
            throw LuaArgumentError("handleAlertErrors takes ([function]), got \(call.top - 1) arguments")
        }
        let responder = Responder(kind: .handleAlertErrors, filter: .any, body: body, location: location)
        node.appendResponder(responder)
        host.pushRetainingUserdata(responder, metatableRef: handleMetatable)
        return 1
    }

    /// The function argument at `index` as a body for a responder or subscription, named by
    /// where it was defined (else where it was registered).
    private func luaBody(at index: Int32, _ call: HostCall, _ name: String) throws -> LuaResponderBody {
        guard lua_type(call.L, index) == LUA_TFUNCTION else { throw call.argumentError(index, name, "function expected") }
        let location = host.definitionLocation(ofFunctionAt: index) ?? call.callerLocation ?? "?"
        return LuaResponderBody(host: host, functionAt: index, location: location)
    }

    /// A registration's `bytes`, charged against the memory cap for as long as its body keeps
    /// the charge (or the host function fails with the limit error).
    private func registrationCharge(_ bytes: Int) throws -> MemoryCharge {
        let charge = MemoryCharge(meter: host)
        guard charge.add(bytes) else { throw RaisedMessage(message: host.limitError()) }
        return charge
    }

    /// A filter: nil (any), a type name, or a list of type names. The copies are charged
    /// while the host function runs (the registration charges what it keeps).
    private func filter(at index: Int32, _ call: HostCall, _ function: String) throws -> TypeFilter {
        let L = call.L
        switch lua_type(L, index) {
        case LUA_TNIL:
            return .any
        case LUA_TSTRING:
            try host.holdCopy(ofStringAt: index)
            return .type(host.string(at: index)!)
        case LUA_TTABLE:
            var names = Set<String>()
            let count = lua_rawlen(L, index)
            try host.holdWhileCalled(MemoryCost.filter(.types([])) + Int(clamping: count) &* 64)
            for position in 0..<count {
                lua_rawgeti(L, index, lua_Integer(position + 1))
                defer { luahier_pop(L, 1) }
                guard lua_type(L, -1) == LUA_TSTRING else {
                    throw call.argumentError(index, function, "filter list must hold type names (strings)")
                }
                try host.holdCopy(ofStringAt: -1)
                names.insert(host.string(at: -1)!)
            }
            guard !names.isEmpty else { throw call.argumentError(index, function, "filter list is empty") }
            return .types(names)
        default:
            throw call.argumentError(index, function, "filter expected: a type name or a list of type names")
        }
    }

    /// Sets `triggerEvent` and `reportError` in the node methods table at `index`: the
    /// engine's entry in C (luahier_trigger), which hands what is not a dispatch to the host
    /// function here to word the error, as every host function words its own.
    private func installTriggers(inMethodsAt index: Int32) {
        let L = host.thread
        let methods = lua_absindex(L, index)
        for domain in [Domain.event, .error] {
            let name = domain == .event ? "triggerEvent" : "reportError"
            host.pushFunction({ [unowned self] call in try refuse(call, name, domain) }, via: luahier_trigger) {
                // The upvalues after the trampoline's two, as luahier_engine.h's LUAHIER_TRIGGER_* say.
                lua_pushlightuserdata(L, engine.state)
                lua_pushboolean(L, domain == .error ? 1 : 0)
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(nodeMetatable))
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(outcomeMetatable))
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(tracedOutcomeMetatable))
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(pendingTraces))
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(engine.state.pointee.plans_ref))
                lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(engine.state.pointee.words_ref))
                for word in 1...Int(LUAHIER_WORD_COUNT) { lua_rawgeti(L, -Int32(word), lua_Integer(word)) }
                return Int32(LUAHIER_TRIGGER_COUNT)
            }
            host.setRawField(of: methods, name)
        }
    }

    /// `triggerEvent` or `reportError` called with what is not a node and a value of the
    /// domain: the argument error, in Lua's words.
    private func refuse(_ call: HostCall, _ name: String, _ domain: Domain) throws -> Int32 {
        _ = try requireNode(call, 1, name)
        let expected = domain == .event ? "event expected" : "error expected"
        guard call.top >= 2 else { throw call.argumentError(2, name, "\(expected), got a no value") }
        lua_settop(call.L, 2)
        if luahier_asvalue(call.L, engine.state, 2, domain == .error ? 1 : 0) == 0 {
            throw call.argumentError(2, name, "\(expected), got \(host.string(at: -1) ?? "?")")
        }
        throw LuaArgumentError("\(name): the node has no plan (a host error)")
    }

    /// `__index` of a traced outcome: `outcome.trace`, built on first read and then stored
    /// in the outcome (so it is built once, and later reads are plain field reads).
    private func materializeTrace(_ call: HostCall) throws -> Int32 {
        let L = call.L
        guard lua_type(L, 1) == LUA_TTABLE, host.string(at: 2) == "trace" else {
            lua_pushnil(L)
            return 1
        }
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(pendingTraces))
        let pending = lua_gettop(L)
        lua_pushvalue(L, 1)
        // What the engine left for it: {plan, record} (luahier_pushoutcome).
        guard lua_rawget(L, pending) == LUA_TTABLE, lua_rawgeti(L, pending + 1, 1) == LUA_TTABLE,
            lua_rawgeti(L, pending + 1, 2) == LUA_TTABLE
        else {
            lua_settop(L, pending - 1)
            lua_pushnil(L)
            return 1
        }
        engine.pushTrace(ofRecordAt: -1, planAt: -2)
        luahier_replace(L, pending + 1)
        lua_settop(L, pending + 1)
        // Forgotten, then kept in the outcome.
        lua_pushvalue(L, 1)
        lua_pushnil(L)
        lua_rawset(L, pending)
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(traceMetatable))
        lua_setmetatable(L, -2)
        luahier_replace(L, pending)
        lua_settop(L, pending)
        lua_pushvalue(L, -1)
        host.setRawField(of: 1, InternedString.trace)
        return 1
    }
}
