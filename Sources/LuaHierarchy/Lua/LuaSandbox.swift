import CLua

/// The standard libraries a state starts with, and the sandbox around them (SPEC §7).
///
/// Sandboxed, a script gets base, string, table, math, utf8, coroutine and `os.time`,
/// `os.clock`, `os.date`; `load` reads text only; `require` loads Lua source from the
/// configured folders only; `collectgarbage` answers "count" only; `setmetatable` refuses
/// `__gc`; the standard library, `hier` and the string metatable are read-only, so no script
/// can change what another relies on. Calls that would stall the host inside C, where the
/// count hook cannot fire, are bounded: `string.rep` of an empty string, `table.move` over a
/// huge range, plain `string.find` (made linear).
extension LuaHost {
    /// Opens `libraries`; for the sandbox, also installs it. Returns the registry reference of
    /// the folder list `require` searches (sandbox only; 0 otherwise).
    func openLibraries(_ libraries: Libraries) throws(HierarchyError) -> Int32 {
        let L = thread
        switch libraries {
        case .full:
            luahier_pushcfunction(L, luahier_openalllibs)
            try runSetup(nargs: 0, "standard libraries")
            return 0
        case .sandboxed:
            luahier_pushcfunction(L, luahier_opensandboxlibs)
            try runSetup(nargs: 0, "standard libraries")
            luahier_newtable(L)
            lua_pushvalue(L, -1)
            let folders = ref()
            try load(sandboxPrelude, name: "=[luahier sandbox]")
            luahier_insert(L, -2)
            luahier_pushcfunction(L, luahier_guardhandler)
            try pushPatternFunctions()
            try runSetup(nargs: 3, "sandbox")
            return folders
        }
    }

    /// Makes every global defined so far (the standard library, `hier`, `print`) read-only:
    /// scripts still create globals of their own. Run after the bridge's prelude.
    func sealGlobals() throws(HierarchyError) {
        try load(sealPrelude, name: "=[luahier seal]")
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

    /// [-0, +1, -] Loads a host chunk.
    func load(_ source: String, name: String) throws(HierarchyError) {
        guard luaL_loadbufferx(thread, source, source.utf8.count, name, "t") == LUA_OK else {
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

/// Trims and wraps the libraries. The originals it needs stay in its upvalues, out of reach.
private let sandboxPrelude = #"""
    local folders, guardhandler, patterns = ...
    local G = _G
    local error, type, select, tostring, rawget, next, ipairs = error, type, select, tostring, rawget, next, ipairs
    local setmeta, getmeta, rawload, rawloadfile, collect = setmetatable, getmetatable, load, loadfile, collectgarbage
    local strfind, strgsub, strrep, tmove, concat, mathtype = string.find, string.gsub, string.rep, table.move, table.concat, math.type

    G.load = function(chunk, name, mode, ...)
      if mode ~= nil and mode ~= "t" then
        error("load: binary chunks are not allowed in the sandbox (mode must be \"t\")", 2)
      end
      if select("#", ...) > 0 then return rawload(chunk, name, "t", ...) end
      return rawload(chunk, name, "t")
    end
    G.dofile, G.loadfile = nil, nil
    local rawxpcall = xpcall
    G.xpcall = function(f, handler, ...) return rawxpcall(f, guardhandler(handler), ...) end
    G.collectgarbage = function(option)
      if option == "count" then return collect("count") end
      error("collectgarbage: only \"count\" is allowed in the sandbox", 2)
    end
    G.setmetatable = function(t, mt)
      if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
        error("setmetatable: a metatable with __gc is not allowed in the sandbox", 2)
      end
      return setmeta(t, mt)
    end
    G.os = { time = os.time, clock = os.clock, date = os.date }
    string.dump = nil

    -- Calls that would run unbounded inside C, where the count hook cannot fire.
    string.rep = function(s, n, sep)
      if s == "" and (sep == nil or sep == "") and mathtype(n) then return "" end
      return strrep(s, n, sep)
    end
    local MAXMOVE = 1 << 24
    table.move = function(a1, f, e, t, a2)
      if type(f) == "number" and type(e) == "number" and e - f >= MAXMOVE then
        error(("table.move: %.0f elements is more than the sandbox moves at once (%d)"):format(e - f + 1, MAXMOVE), 2)
      end
      return tmove(a1, f, e, t, a2)
    end
    -- Patterns: the same language, matched with a step budget (see pattern.h); plain find
    -- is linear.
    string.find, string.match, string.gmatch, string.gsub = patterns.find, patterns.match, patterns.gmatch, patterns.gsub

    -- Closing a coroutine runs its __close handlers, which may close another coroutine, and
    -- so on: 5.4.4 counts none of that against its C-stack limit and crashes when the chain
    -- is long. Every close (coroutine.close, and coroutine.wrap's close after an error) goes
    -- through one counted closer.
    local cocreate, coresume, coclose, costatus = coroutine.create, coroutine.resume, coroutine.close, coroutine.status
    local pcall, tpack, tunpack, MAXCLOSING, closing = pcall, table.pack, table.unpack, 100, 0
    local function countedClose(co)
      if closing >= MAXCLOSING then
        error("coroutine.close: closes nested deeper than " .. MAXCLOSING .. " (closing from __close handlers)", 3)
      end
      closing = closing + 1
      local results = tpack(pcall(coclose, co))
      closing = closing - 1
      if not results[1] then error(results[2], 0) end
      return tunpack(results, 2, results.n)
    end
    coroutine.close = function(co) return countedClose(co) end
    coroutine.wrap = function(f)
      local co = cocreate(f)
      return function(...)
        local results = tpack(coresume(co, ...))
        if results[1] then return tunpack(results, 2, results.n) end
        if costatus(co) == "dead" then countedClose(co) end
        error(results[2], 0)
      end
    end

    -- require: Lua source from the configured folders, nothing else.
    local package = G.package
    package.loadlib, package.cpath, package.path = nil, "", ""
    local preload = package.searchers[1]
    local function fromFolders(name)
      if type(name) ~= "string" or not strfind(name, "^[%w_%-]+[%w_%-%.]*$") or strfind(name, "%.%.") or strfind(name, "%.$") then
        return "\n\tno module '" .. tostring(name) .. "' (module names are letters, digits, '_', '-' and '.')"
      end
      local relative = strgsub(name, "%.", "/")
      local tried = {}
      for i = 1, #folders do
        for _, form in ipairs({ "%s/%s.lua", "%s/%s/init.lua" }) do
          local path = form:format(folders[i], relative)
          local chunk, message = rawloadfile(path, "t")
          if chunk then return chunk, path end
          if not strfind(message, "^cannot open ") then error(message, 0) end
          tried[#tried + 1] = "\n\tno file '" .. path .. "'"
        end
      end
      return concat(tried)
    end
    package.searchers = { preload, fromFolders }

    -- The standard library is read-only, and so is the string metatable.
    local function readonly(name, t)
      return setmeta({}, {
        __index = t,
        __newindex = function(_, key) error(name .. " is read-only (cannot set '" .. tostring(key) .. "')", 2) end,
        __pairs = function() return next, t, nil end,
        __len = function() return #t end,
        __metatable = false,
      })
    end
    for _, name in ipairs({ "string", "table", "math", "utf8", "coroutine", "os", "package" }) do
      G[name] = readonly(name, G[name])
    end
    local stringmeta = getmeta("")
    stringmeta.__index = G.string
    stringmeta.__metatable = false
    """#

/// Moves every global defined so far behind `_G`'s `__index`, so scripts can read but not
/// replace them (`rawset` included). Scripts' own globals are plain fields of `_G`.
private let sealPrelude = #"""
    local G = _G
    local error, tostring, rawequal, rawsetglobal, next, setmeta = error, tostring, rawequal, rawset, next, setmetatable
    local standard = {}
    for name, value in next, G do standard[name] = value end
    for name in next, standard do rawsetglobal(G, name, nil) end
    local function refuse(name)
      error("'" .. tostring(name) .. "' belongs to the standard library and cannot be replaced", 3)
    end
    standard.rawset = function(t, key, value)
      if rawequal(t, G) and standard[key] ~= nil then refuse(key) end
      return rawsetglobal(t, key, value)
    end
    setmeta(G, {
      __index = standard,
      __newindex = function(t, key, value)
        if standard[key] ~= nil then refuse(key) end
        rawsetglobal(t, key, value)
      end,
      __metatable = false,
    })
    """#
