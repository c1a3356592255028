import CLua
import CLuaHost

/// The standard libraries a state starts with, and the sandbox around them (contract §7).
///
/// The sandbox is an allow-list: the prelude builds the script's environment from fresh
/// tables holding only the allowed functions, and makes it the state's globals (the registry's
/// LUA_RIDX_GLOBALS), so `load` and everything else that reaches for "the globals" gets it. The
/// full libraries, the real `package` and `package.loaded`, and the string metatable Lua made
/// stay in the prelude's upvalues and the registry, neither of which a script can reach.
/// Library tables, `package`, `hier` and `_G`'s standard names are read-only proxies that hand
/// out neither their contents table nor their metatable; the sandbox's `rawset` refuses them.
/// No route installs a finalizer: `setmetatable` refuses `__gc`, and every host object's
/// metatable is locked. `SandboxAuditTests` walks everything reachable to prove it.
extension LuaHost {
    /// Opens `libraries`; for the sandbox, also installs it. Returns the registry references of
    /// the folder list `require` searches and of the function that seals the globals (sandbox
    /// only; 0 otherwise).
    func openLibraries(_ libraries: Libraries) throws(HierarchyError) -> (folders: Int32, seal: Int32) {
        let L = thread
        switch libraries {
        case .full:
            luahier_pushcfunction(L, luahier_openalllibs)
            try runSetup(nargs: 0, "standard libraries")
            return (0, 0)
        case .sandboxed:
            luahier_pushcfunction(L, luahier_opensandboxlibs)
            try runSetup(nargs: 0, "standard libraries")
            luahier_newtable(L)
            lua_pushvalue(L, -1)
            let folders = ref()
            try load(.sandbox, name: "=[luahier sandbox]")
            luahier_insert(L, -2)
            luahier_pushcfunction(L, luahier_guardhandler)
            try pushPatternFunctions()
            lua_createtable(L, 0, 5)
            for (name, function) in [
                ("resume", luahier_resume), ("trackclose", luahier_trackclose), ("sort", luahier_sort), ("rep", luahier_rep), ("setglobals", luahier_setglobals),
                ("setstringmetatable", luahier_setstringmetatable), ("getstringmetatable", luahier_getstringmetatable),
                ("setfrozen", luahier_setfrozen), ("readsource", luahier_readsource), ("insert", luahier_tinsert), ("remove", luahier_tremove),
                ("move", luahier_tmove), ("concat", luahier_tconcat), ("unpack", luahier_tunpack),
            ] as [(String, lua_CFunction)] {
                luahier_pushcfunction(L, function)
                setRawField(of: -2, name)
            }
            try runSetup(nargs: 4, nresults: 1, "sandbox")
            return (folders, ref())
        }
    }

    /// Makes every global defined so far (the standard library, `hier`, `print`) read-only:
    /// scripts still create globals of their own. Run after the bridge's prelude.
    func sealGlobals(_ seal: Int32) throws(HierarchyError) {
        lua_rawgeti(thread, luahier_REGISTRYINDEX, lua_Integer(seal))
        unref(seal)
        try runSetup(nargs: 0, "sealing globals")
    }

    /// [-0, +1, -] The step-counting pattern functions as a table {find, match, gmatch, gsub}.
    func pushPatternFunctions() throws(HierarchyError) {
        luahier_pushcfunction(thread, luahier_pushpatternlib)
        try runSetup(nargs: 0, nresults: 1, "pattern functions")
    }

    /// [-0, +0, m] Refills the folder list at `folderList` (the searcher holds that very
    /// table, so it is changed in place).
    func setFolders(_ folders: [String], ref folderList: Int32) {
        let L = thread
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(folderList))
        let old = lua_rawlen(L, -1)
        for offset in 0..<max(Int(old), folders.count) {
            if offset < folders.count { push(folders[offset]) } else { lua_pushnil(L) }
            lua_rawseti(L, -2, lua_Integer(offset + 1))
        }
        luahier_pop(L, 1)
    }

    /// [-0, +0, m] Starts recording the text of every module `require` reads into the folder
    /// list's `sources`, given `known` texts to take instead of reading their files.
    /// `sealed`: `require` takes only those, and reads no file (a bundle's rules).
    func recordModuleSources(_ known: [String: [UInt8]], sealed: Bool = false, ref folderList: Int32) {
        let L = thread
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(folderList))
        lua_createtable(L, 0, Int32(clamping: known.count))
        for (path, text) in known {
            push(path)
            text.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
            }
            lua_rawset(L, -3)
        }
        setRawField(of: -2, "sources")
        lua_pushboolean(L, sealed ? 1 : 0)
        setRawField(of: -2, "sealed")
        luahier_pop(L, 1)
    }

    /// [-0, +0, m] The module texts recorded since `recordModuleSources` (empty without it).
    func recordedModuleSources(ref folderList: Int32) -> [String: [UInt8]] {
        let L = thread
        lua_rawgeti(L, luahier_REGISTRYINDEX, lua_Integer(folderList))
        defer { luahier_pop(L, 1) }
        guard pushRawField(of: -1, "sources") == LUA_TTABLE else {
            luahier_pop(L, 1)
            return [:]
        }
        var sources: [String: [UInt8]] = [:]
        lua_pushnil(L)
        while lua_next(L, -2) != 0 {
            var length = 0
            if lua_type(L, -2) == LUA_TSTRING, lua_type(L, -1) == LUA_TSTRING,
                let key = string(at: -2), let text = lua_tolstring(L, -1, &length)
            {
                sources[key] = Array(UnsafeRawBufferPointer(start: text, count: length))
            }
            luahier_pop(L, 1)
        }
        luahier_pop(L, 1)
        return sources
    }

    /// [-0, +1, -] Loads a host chunk, stripped of its debug information: its build-time dump,
    /// or its text compiled (HostChunk). Its name must start with "=[luahier": frames of host
    /// code are never what a `where` names (luahier_ishostcode).
    func load(_ chunk: HostChunk, name: String) throws(HierarchyError) {
        precondition(name.hasPrefix("=[luahier"), "host chunks are named =[luahier ...]")
        // Stripped, so nothing a script sees can name a line of it.
        let status = chunk.bytecode.withUnsafeBufferPointer { bytes in
            luahier_loadhostchunk(thread, chunk.source, chunk.source.utf8.count, bytes.baseAddress, bytes.count, name)
        }
        guard status == LUA_OK else {
            let message = string(at: -1) ?? "?"
            luahier_pop(thread, 1)
            throw .preludeFailed(message)
        }
    }

    /// [-(nargs+1), +nresults, -] Runs host set-up code.
    func runSetup(nargs: Int32, nresults: Int32 = 0, _ what: String) throws(HierarchyError) {
        switch callProtected(nargs: nargs, nresults: nresults) {
        case .ok: return
        case .failed(let error), .limitExceeded(let error):
            throw .preludeFailed("\(what): \(error.describedValue()["message"]?.stringValue ?? error.type)")
        }
    }
}
