import CLua
import CLuaHost

/// The rules' decision mask (`hier.maskDecision(function(record) ... return record end)`),
/// held by one registry reference: it sees each decision record as a table and returns it
/// masked, on the state that answered, within a dispatch's limits.
final class LuaDecisionMask {
    let host: LuaHost
    let ref: Int32

    /// [-0, +0, m] References the function at `index`.
    init(host: LuaHost, functionAt index: Int32) {
        self.host = host
        lua_pushvalue(host.thread, index)
        ref = host.ref()
    }

    deinit { host.unref(ref) }

    /// `record` as the function returned it; nil when it raised, tripped a limit, or returned
    /// no table that JSON can hold.
    func mask(_ record: Value) -> Value? {
        guard !host.isClosed else { return nil }
        let L = host.thread
        guard lua_checkstack(L, 4) != 0 else { return nil }
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        return host.withBudget(.dispatch) { () -> Value? in
            luahier_pushcfunction(L, luahier_msgh)
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(ref))
            do {
                try host.push(record)
            } catch {
                return nil
            }
            guard case .ok = host.callProtected(nargs: 1, nresults: 1, handlerAt: base + 1),
                lua_type(L, -1) == LUA_TTABLE,
                let masked = try? host.value(at: -1, strict: true)
            else { return nil }
            return masked
        }
    }
}
