import CLua
import CLuaHost

/// A Lua function as a responder body, held by one registry reference.
final class LuaResponderBody: ResponderBody {
    let host: LuaHost
    let ref: Int32
    /// Where the function was defined, for the messages this body makes itself.
    let location: String
    /// Its registration's charge against the memory cap: a body lives exactly as long as its
    /// registration, and the charge gives the bytes back when it goes (LuaBridge.swift).
    var charge: MemoryCharge?

    /// [-0, +0, m] References the function at `index`.
    init(host: LuaHost, functionAt index: Int32, location: String) {
        self.host = host
        self.location = location
        lua_pushvalue(host.thread, index)
        self.ref = host.ref()
    }

    deinit { host.unref(ref) }


    func call(with input: inout Message, returning domain: Domain) -> ResponderReply {
        invoke(with: &input) { _ in host.reply(at: -1, as: domain) }
    }

    func callForEffect(with input: inout Message) -> ResponderReply {
        invoke(with: &input) { _ in .notHandled }
    }

    func callForChoice(with input: inout Message) -> ResponderReply {
        invoke(with: &input) { L in
            switch lua_type(L, -1) {
            case LUA_TNIL: return .choice(nil)
            case LUA_TSTRING: return .choice(host.string(at: -1))
            default: return .unusable(description: "a \(host.typeName(at: -1))")
            }
        }
    }

    /// [-0, +0, -] Calls the function with the input, protected; `read` reads its one result
    /// at the top of the stack (popped after).
    @inline(__always)
    private func invoke(with input: inout Message, read: (LuaState) -> ResponderReply) -> ResponderReply {
        guard !host.isClosed else { return .raised(.hostError("LuaError", "the Lua state is closed", where: nil)) }
        let L = host.thread
        guard lua_checkstack(L, 4) != 0 else {
            return .raised(.hostError("LuaError", "the Lua stack is full", where: nil))
        }
        let base = lua_gettop(L)
        // The message handler goes first, so the call needs no stack rotation.
        luahier_pushcfunction(L, luahier_msgh)
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(ref))
        host.pushPayload(of: &input)
        let result = host.callProtected(nargs: 1, nresults: 1, handlerAt: base + 1)
        defer { lua_settop(L, base) }
        switch result {
        case .ok: return read(L)
        case .failed, .limitExceeded: return ResponderReply(failure: result, location: location)
        }
    }
}

extension LuaHost {
    /// [-0, +0, m] What a responder's result at `index` answers, read in `domain`.
    func reply(at index: Int32, as domain: Domain) -> ResponderReply {
        let L = thread
        // Verdicts by address: Lua interns short strings, the host holds the two words.
        if lua_type(L, index) == LUA_TSTRING {
            let address = lua_topointer(L, index)
            if address == handledAddress { return .handled }
            if address == notHandledAddress { return .notHandled }
        }
        do throws(ShapeError) {
            return .value(try message(at: index, as: domain))
        } catch {
            return .unusable(description: error.description)
        }
    }
}

extension ResponderReply {
    /// The reply for a responder call at `location` that did not end well.
    init(failure: LuaHost.CallResult, location: String) {
        switch failure {
        case .failed(let error) where error.isYieldAcrossHost:
            self = .raised(
                .hostError(
                    "ResponderContractError",
                    "responder at \(location) yielded: responders run inside the host and cannot yield (use a coroutine of your own inside the responder)",
                    where: error.describedValue()["where"]?.stringValue ?? location))
        case .failed(let error): self = .raised(error)
        case .limitExceeded(let error): self = .aborted(error)
        case .ok: self = .notHandled
        }
    }
}

extension Message {
    /// Lua's own error for a `coroutine.yield` that would cross the host.
    var isYieldAcrossHost: Bool {
        type == "LuaError" && describedValue()["message"] == "attempt to yield across a C-call boundary"
    }
}
