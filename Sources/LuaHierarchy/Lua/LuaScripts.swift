import CLua
import CLuaHost

/// Running chunks and the few global-table operations the facade needs.
extension LuaHost {
    /// Where a chunk's text comes from.
    enum ChunkSource {
        case file(String)
        /// Read to its end; messages name it `stdin`.
        case standardInput
        case source(String)
        /// A file's text read already (a BOM and a `#` first line are skipped, as for a file).
        case text([UInt8])
    }

    /// Loads (text only) and runs a chunk as one top-level entry, with `arguments` as `...`
    /// and in the global `arg`, as `lua.c` does: `arg[0]` is the chunk's name and
    /// `commandLine` (what came before it) goes to `arg[-n] ... arg[-1]`.
    func runChunk(
        _ chunk: ChunkSource, name: String, arguments: [String], commandLine: [String] = []
    ) throws(ScriptError) {
        let L = thread
        nameEntries(name, line: 0)
        let status: Int32
        switch chunk {
        case .file(let path): status = luaL_loadfilex(L, path, "t")
        case .standardInput: status = luahier_loadstdin(L, "t")
        case .source(let source): status = luaL_loadbufferx(L, source, source.utf8.count, "@" + name, "t")
        case .text(let text):
            var start = text.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            if start < text.count && text[start] == UInt8(ascii: "#") {
                start = text[start...].firstIndex(of: UInt8(ascii: "\n")) ?? text.count
            }
            status = text[start...].withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { luaL_loadbufferx(L, $0.baseAddress, $0.count, "@" + name, "t") }
            }
        }
        guard status == LUA_OK else {
            var text = string(at: -1) ?? "cannot load \(name)"
            luahier_pop(L, 1)
            // What the parser raises with no line (nesting past its C stack, a binary chunk)
            // names no file: the chunk is named in front (file:line was the promise). Not a
            // read that failed, whose message names what it read.
            let shown: String
            if case .standardInput = chunk { shown = "stdin" } else { shown = name }
            // LUA_ERRFILE (lauxlib.h: LUA_ERRERR + 1, a macro Swift does not import).
            if status != LUA_ERRERR + 1 && !text.hasPrefix(shown + ":") { text = "\(shown): \(text)" }
            throw ScriptError(syntaxError: text)
        }
        luahier_pushglobaltable(L)
        lua_createtable(L, Int32(clamping: arguments.count), 1)
        push(name)
        lua_rawseti(L, -2, 0)
        for (offset, word) in commandLine.reversed().enumerated() {
            push(word)
            lua_rawseti(L, -2, -lua_Integer(offset + 1))
        }
        for (offset, argument) in arguments.enumerated() {
            push(argument)
            lua_rawseti(L, -2, lua_Integer(offset + 1))
        }
        setRawField(of: -2, "arg")
        luahier_pop(L, 1)
        lua_checkstack(L, Int32(clamping: arguments.count + 2))
        for argument in arguments { push(argument) }
        switch withBudget(.chunk, { callProtected(nargs: Int32(arguments.count), nresults: 0) }) {
        case .ok: return
        case .failed(let error), .limitExceeded(let error): throw ScriptError(error)
        }
    }

    /// Makes `body` the global function `name`: plain values in, one plain value out; a thrown
    /// error is raised in Lua. `describing`: what plain data cannot hold is described (keys
    /// as `<number 1.5>`, a cycle as `<cycle>`, a value past half the cap left `<too large>`),
    /// as an outcome's writer does, rather than refused.
    func setGlobalFunction(_ name: String, describing: Bool = false, _ body: @escaping ([Value]) throws -> Value) {
        luahier_pushglobaltable(thread)
        pushFunction { call in
            var arguments: [Value] = []
            for index in 1...max(call.top, 1) where index <= call.top {
                arguments.append(try call.host.value(at: index, strict: !describing, bounded: describing))
            }
            try call.host.push(try body(arguments))
            return 1
        }
        setRawField(of: -2, name)
        luahier_pop(thread, 1)
    }

    /// The step-counting pattern functions as the global table `name` (for tests).
    func setGlobalPatternFunctions(_ name: String) throws(HierarchyError) {
        try pushPatternFunctions()
        luahier_pushglobaltable(thread)
        luahier_insert(thread, -2)
        setRawField(of: -2, name)
        luahier_pop(thread, 1)
    }

    /// Sets `package.path` (full libraries only: the sandbox has its own folder list).
    func setPackagePath(_ path: String) {
        luahier_pushglobaltable(thread)
        if pushRawField(of: -1, "package") == LUA_TTABLE {
            push(path)
            setRawField(of: -2, "path")
        }
        luahier_pop(thread, 2)
    }

    var stackTop: Int32 { lua_gettop(thread) }

    func collectGarbage() {
        luahier_fullgc(thread)
        releaseCollected()
    }
}

extension ScriptError {
    /// A load failure: `chunk:line: message` from Lua's parser, or a file error.
    init(syntaxError text: String) {
        var map: [String: Value] = ["type": "SyntaxError", "message": .string(text)]
        var bytes = Array(text.utf8)
        var whereLength = 0
        let skip = bytes.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { luahier_locationprefix($0.baseAddress, $0.count, &whereLength) }
        }
        if skip > 0 {
            map["where"] = .string(String(decoding: bytes[..<whereLength], as: UTF8.self))
            map["message"] = .string(String(decoding: bytes[skip...], as: UTF8.self))
        }
        self.init(Message(domain: .error, type: "SyntaxError", payload: .value(.map(map))))
    }
}
