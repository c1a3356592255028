import CLua
import CLuaHost

/// `luahier dispatch`'s lines answered by C end to end (Sources/CLuaHost/lines.c): the request
/// read from JSON into Lua by the one JSON reader, its node's plan kept by path, the engine's
/// dispatch, the outcome line written by the C writer. Nothing is built in Swift on the way.
/// What C declines goes back to the host's own path (LineProcessor), which reads the line again
/// and words what is wrong with it: C answers a line only as that path would.
extension LuaEngine {
    /// How a line went.
    enum LineAnswer {
        /// The outcome line is in `writer`: the line ended so.
        case written(Outcome.Status)
        /// Dispatched, but the outcome is the host's to write: it has what `write` did not
        /// take (errors presented meanwhile, a trace) or a value the C writer leaves to the
        /// careful path. The id as it came (nil: none).
        case dispatched(DispatchResult, id: Value?)
        /// An interrupt (SIGINT) cut the dispatch short: the line was not answered.
        case interrupted
        /// Not a request C answers (anything unusual): nothing was done.
        case declined
    }

    /// Answers request line `line` (number `number` of `input`): reads it, dispatches it within
    /// a dispatch's budget, and writes its outcome into `writer` when `plainOutcome` (asked once
    /// the dispatch ended) says the outcome has nothing but its own fields.
    func answer(
        line: UnsafeRawBufferPointer, number: Int, input: String, plainOutcome: () -> Bool, into writer: inout JSONWriter
    ) -> LineAnswer {
        let L = host.thread
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        var request = luahier_Request()
        let ready = input.withCString { name in
            luahier_readrequest(
                L, state, line.baseAddress?.assumingMemoryBound(to: CChar.self), line.count,
                Int32(JSON.defaultDepthLimit), name, number, &request)
        }
        guard ready == LUAHIER_REQUEST_READY else { return .declined }
        let (id, plan, value, type) = (top + 1, top + 2, top + 3, top + 4)
        var r = luahier_Result()
        let failure = host.withBudget(.dispatch) {
            luahier_rundispatch(L, state, plan, value, type, request.is_error, &r)
        }
        // A request starts at depth 0: it cannot nest too deep.
        guard failure == 0 else { return .declined }
        if r.tripped == LUAHIER_TRIPPED_INTERRUPTED { return .interrupted }
        if lua_type(L, r.trace) != LUA_TTABLE && plainOutcome() {
            let out = host.jsonOut
            let available = host.memoryAvailable ?? Int.max
            let written = luahier_writeoutcome(L, number, id, request.has_id, plan, &r, available, out)
            if written == LUAHIER_JSON_WRITTEN {
                writer.bytes.append(contentsOf: UnsafeRawBufferPointer(start: out.pointee.bytes, count: out.pointee.size))
                return .written(Self.status(r.status))
            }
        }
        let idValue = request.has_id != 0 ? ((try? host.value(at: id, strict: false)) ?? .null) : nil
        return .dispatched(dispatchResult(r, planAt: plan), id: idValue)
    }

    static func status(_ status: Int32) -> Outcome.Status {
        status == LUAHIER_STATUS_HANDLED ? .handled : status == LUAHIER_STATUS_DETACHED ? .detached : .unhandled
    }
}
