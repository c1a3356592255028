import CLua
import CLuaHost

/// Runs of Lua `receive*` responders, called by one C function inside one protected call
/// (`luahier_runresponders` in Sources/CLuaHost/fastpath.c): one `lua_pcall` and one trip through Swift per run
/// instead of per responder. The tokens are the functions' registry references.
extension LuaHost: ResponderRunner {
    func callRun(
        _ tokens: UnsafeBufferPointer<Int32>, with input: inout Message, returning domain: Domain,
        changes: UnsafePointer<Int>, location: (Int) -> String
    ) -> RunResult {
        guard !isClosed else {
            return .stopped(index: 0, reply: .raised(.hostError("LuaError", "the Lua state is closed", where: nil)))
        }
        let L = thread
        guard lua_checkstack(L, 5) != 0 else {
            return .stopped(index: 0, reply: .raised(.hostError("LuaError", "the Lua stack is full", where: nil)))
        }
        var run = luahier_Run()
        run.refs = tokens.baseAddress
        run.count = Int32(tokens.count)
        run.not_handled = notHandledAddress
        run.changes = changes
        run.changes_at_start = changes.pointee
        return withUnsafeMutablePointer(to: &run) { run in
            let base = lua_gettop(L)
            defer { lua_settop(L, base) }
            // [msgh, runner, run, value]: the handler first, so the call needs no rotation.
            luahier_pushcfunction(L, luahier_msgh)
            lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(guardState.pointee.run_ref))
            lua_pushlightuserdata(L, run)
            pushPayload(of: &input)
            let result = callProtected(nargs: 2, nresults: 1, handlerAt: base + 1)
            let reached = Int(run.pointee.reached)
            switch result {
            case .ok where run.pointee.stopped != 0:
                return .stopped(index: reached, reply: reply(at: -1, as: domain))
            case .ok:
                return .continued(called: reached)
            case .failed, .limitExceeded:
                return .stopped(index: reached, reply: ResponderReply(failure: result, location: location(reached)))
            }
        }
    }
}
