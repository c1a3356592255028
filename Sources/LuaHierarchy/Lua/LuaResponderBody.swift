import CLua

/// A Lua function as a responder body, held by one registry reference.
final class LuaResponderBody: ResponderBody {
    let host: LuaHost
    let ref: Int32

    /// [-0, +0, m] References the function at `index`.
    init(host: LuaHost, functionAt index: Int32) {
        self.host = host
        lua_pushvalue(host.thread, index)
        self.ref = host.ref()
    }

    deinit { host.unref(ref) }

    func call(with input: inout Message, returning domain: Domain) -> ResponderReply {
        guard !host.isClosed else { return .raised(.hostError("LuaError", "the Lua state is closed", where: nil)) }
        let L = host.thread
        guard lua_checkstack(L, 3) != 0 else {
            return .raised(.hostError("LuaError", "the Lua stack is full", where: nil))
        }
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(ref))
        host.pushPayload(of: &input)
        switch host.callProtected(nargs: 1, nresults: 1) {
        case .ok: break
        case .failed(let error): return .raised(error)
        case .limitExceeded(let error): return .aborted(error)
        }
        defer { luahier_pop(L, 1) }
        if host.isString(at: -1, equalTo: "handled") { return .handled }
        if host.isString(at: -1, equalTo: "notHandled") { return .notHandled }
        do {
            return .value(try host.message(at: -1, as: domain))
        } catch {
            return .unusable(description: error.description)
        }
    }
}
