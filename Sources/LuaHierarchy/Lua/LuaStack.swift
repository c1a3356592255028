import CLua
import CLuaHost

/// Small stack helpers. None of them can raise: they use raw access and plain pushes only.
extension LuaHost {
    /// [-0, +0, -] The bytes of the string at `index` (never converts a number in place).
    func bytes(at index: Int32) -> [UInt8]? {
        guard lua_type(thread, index) == LUA_TSTRING else { return nil }
        return withBytes(at: index) { Array($0) }
    }

    /// [-0, +0, -] The bytes of the string at `index`, lent to `body` without a copy (valid
    /// only there). The value must be a string: `lua_tolstring` would turn a number into one
    /// in place, which breaks a `lua_next` traversal when done to a key.
    func withBytes<Result, Failure: Error>(
        at index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var length = 0
        let pointer = lua_tolstring(thread, index, &length)
        let start = pointer.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
        return try body(UnsafeBufferPointer(start: start, count: start == nil ? 0 : length))
    }

    /// [-0, +0, -] The string at `index` (a string, as for `withBytes`) if it is valid
    /// UTF-8. ASCII, the common case, is decoded directly: `String(validating:)` is generic,
    /// and unspecialized it looks up type metadata on every call.
    func validString(at index: Int32) -> String? {
        withBytes(at: index) { bytes in
            if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
            return String(validating: bytes, as: UTF8.self)
        }
    }

    /// [-0, +0, -] The string at `index`, decoded as UTF-8 (invalid sequences replaced).
    func string(at index: Int32) -> String? {
        guard lua_type(thread, index) == LUA_TSTRING else { return nil }
        return withBytes(at: index) { String(decoding: $0, as: UTF8.self) }
    }

    /// [-0, +1, m] Pushes `text` with all its bytes (NUL included).
    func push(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(thread, $0.baseAddress, $0.count) }
        }
    }

    /// [-0, +1, m] Pushes `bytes` as a Lua string.
    func pushBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(thread, $0.baseAddress, $0.count) }
        }
    }

    /// [-0, +1, m] Pushes `text`, or nil.
    func push(optional text: String?) {
        if let text { push(text) } else { lua_pushnil(thread) }
    }

    /// [-0, +1, -] Pushes `table[key]` without metamethods; returns its type.
    @discardableResult
    func pushRawField(of table: Int32, _ key: String) -> Int32 {
        let table = lua_absindex(thread, table)
        push(key)
        return lua_rawget(thread, table)
    }

    /// [-0, +0, -] The string field `key` of the table at `index`, read raw, if there is one.
    func stringField(ofTableAt index: Int32, _ key: String) -> String? {
        guard lua_type(thread, index) == LUA_TTABLE else { return nil }
        defer { luahier_pop(thread, 1) }
        return pushRawField(of: index, key) == LUA_TSTRING ? string(at: -1) : nil
    }

    /// [-1, +0, m] Pops the top value into `table[key]` without metamethods.
    func setRawField(of table: Int32, _ key: String) {
        let table = lua_absindex(thread, table)
        push(key)
        luahier_insert(thread, -2)
        lua_rawset(thread, table)
    }

    /// [-0, +0, -] "chunk:line" of the innermost Lua function at `level` or above.
    func location(level: Int32) -> String? {
        guard luahier_pushwhere(thread, level) != 0 else { return nil }
        defer { luahier_pop(thread, 1) }
        return string(at: -1)
    }

    /// [-0, +0, -] "chunk:line" where the function at `index` was defined, if it is the
    /// script's Lua: nil for a C function and for the host's own Lua (the sandbox's `print`,
    /// its wrappers), which have no line a script author could read (callers then name the
    /// line that registered it).
    func definitionLocation(ofFunctionAt index: Int32) -> String? {
        var debug = lua_Debug()
        lua_pushvalue(thread, index)
        guard lua_getinfo(thread, ">S", &debug) != 0, debug.linedefined > 0, luahier_ishostcode(&debug) == 0 else {
            return nil
        }
        let source = withUnsafeBytes(of: debug.short_src) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return "\(source):\(debug.linedefined)"
    }

    /// [-0, +0, m] A new table held by a registry reference; with `weakMode` ("k" or "v") it
    /// is its own metatable with that `__mode`.
    func makeTableRef(weakMode: String? = nil) -> Int32 {
        luahier_newtable(thread)
        if let weakMode {
            push(weakMode)
            setRawField(of: -2, "__mode")
            lua_pushvalue(thread, -1)
            lua_setmetatable(thread, -2)
        }
        return ref()
    }

    /// [-0, +0, -] The type name of the value at `index`.
    func typeName(at index: Int32) -> String {
        String(cString: lua_typename(thread, lua_type(thread, index)))
    }
}

/// Strings the hot path pushes as keys or values, or compares against. The raw value is the
/// slot of the string's registry reference.
enum InternedString: Int, CaseIterable {
    case handled, notHandled, type, status, kind, value, at, by, responder, trace, index
    case whereKey, event, error, unhandled, detached
    case node, input, result, before, after

    /// Spelled out: `String(describing:)` on a case reflects, which cost a new state more
    /// than the rest of its setup (2.3M instructions for these 21 words).
    var text: String {
        switch self {
        case .handled: "handled"
        case .notHandled: "notHandled"
        case .type: "type"
        case .status: "status"
        case .kind: "kind"
        case .value: "value"
        case .at: "at"
        case .by: "by"
        case .responder: "responder"
        case .trace: "trace"
        case .index: "index"
        case .whereKey: "where"
        case .event: "event"
        case .error: "error"
        case .unhandled: "unhandled"
        case .detached: "detached"
        case .node: "node"
        case .input: "input"
        case .result: "result"
        case .before: "before"
        case .after: "after"
        }
    }
}

/// The arguments of one host-function call and what it needs to answer.
struct HostCall {
    // Unchecked: a call lives only while its host runs it (a checked reference costs a retain
    // and a release per host call).
    unowned(unsafe) let host: LuaHost
    let L: LuaState
    /// The argument count at entry; the stack is reset to it when the function throws.
    let top: Int32

    init(host: LuaHost, L: LuaState) {
        self.host = host
        self.L = L
        self.top = lua_gettop(L)
    }

    /// Where the Lua code that called this function is, `file:line`.
    var callerLocation: String? { host.location(level: 1) }

    /// The string argument at `index`, copied: the copy is charged to the memory cap while the
    /// host function runs, and its size as host work.
    func string(_ index: Int32, _ function: String) throws -> String {
        guard lua_type(L, index) == LUA_TSTRING else { throw argumentError(index, function, "string expected") }
        try host.holdCopy(ofStringAt: index)
        return host.string(at: index)!
    }

    /// Lua's wording: `bad argument #n to 'f' (problem, got type)`. For a method (a node
    /// or handle as argument 1) arguments are counted after `self`, as `luaL_argerror` does.
    func argumentError(_ index: Int32, _ function: String, _ problem: String) -> LuaArgumentError {
        let isMethod = top >= 1 && lua_type(L, 1) == LUA_TUSERDATA
        if isMethod && index == 1 { return LuaArgumentError("calling '\(function)' on bad self (\(problem))") }
        let shown = isMethod ? index - 1 : index
        let got = problem.contains(", got ") ? "" : ", got \(index <= top ? host.typeName(at: index) : "no value")"
        return LuaArgumentError("bad argument #\(shown) to '\(function)' (\(problem)\(got))")
    }
}
