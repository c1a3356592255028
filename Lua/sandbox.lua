-- Loaded as "=[luahier sandbox]" and stripped (LuaSandbox.swift): builds the sandbox's
-- environment from the allowed functions only, makes it the globals, and returns the function
-- that seals it. The originals it needs stay in its upvalues, out of reach.
local folders, guardhandler, patterns, hostlib = ...
local real = _G
local error, type, select, tostring, rawget, rawset, rawequal, next, ipairs =
  error, type, select, tostring, rawget, rawset, rawequal, next, ipairs
local setmeta, rawload, collect = setmetatable, load, collectgarbage
local strfind, strgsub, strsub, concat = string.find, string.gsub, string.sub, table.concat
local cocreate, coclose, costatus, coresume = coroutine.create, hostlib.trackclose(coroutine.close), coroutine.status, hostlib.resume
local pcall, tpack, tunpack, ssub = pcall, table.pack, table.unpack, string.sub

-- An error a C function raised when a wrapper called it through pcall: raised again at
-- the script's line (`level` counts from the caller of rethrow), so no message names the
-- host's own code. Messages that already carry a position are raised as they are.
local function rethrow(message, level)
  if type(message) == "string" and not strfind(message, "^[^\n]*:%d+: ") then error(message, level + 1) end
  error(message, 0)
end
-- "got X" in an argument error, as Lua's own say it: argument `index` of `count` given.
local function typeof(count, index, value)
  if index > count then return "no value" end
  return type(value)
end

-- Every table a script must not change: rawset refuses them, assignment hits __newindex.
-- _G is in it too, for the host: its standard names are read-only, but they live behind its
-- __index, so a raw write of `type` or `where` would shadow one (rawset lets a script set its
-- own globals, and refuses only the standard names).
local frozen = setmeta({}, { __mode = "k" })
-- The host leaves them as they are when one travels as an error: no `type`, `where` or `cause`
-- is written into them (errors.c, walk.c, LuaValues.swift).
hostlib.setfrozen(frozen)
-- A read-only view of `contents`: its metatable is locked and its iterator is a closure,
-- so neither the contents table nor the metatable ever reaches a script.
local function freeze(name, contents)
  local view = setmeta({}, {
    __index = contents,
    __newindex = function(_, key) error(name .. " is read-only (cannot set '" .. tostring(key) .. "')", 2) end,
    __pairs = function() return function(_, key) return next(contents, key) end, nil, nil end,
    __len = function() return #contents end,
    __metatable = false,
  })
  frozen[view] = true
  return view
end
-- A fresh table of the named fields of `from` (each must exist: the list is the contract).
local function pick(from, names, into)
  local t = into or {}
  for _, name in ipairs(names) do
    local value = from[name]
    if value == nil then error("sandbox: no '" .. name .. "' to allow", 0) end
    t[name] = value
  end
  return t
end

local env = pick(real, {
  "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
  "rawlen", "select", "tonumber", "tostring", "type", "_VERSION",
})
env.load = function(chunk, name, mode, ...)
  if mode ~= nil and mode ~= "t" then
    error("load: binary chunks are not allowed in the sandbox (mode must be \"t\")", 2)
  end
  -- A reader is called from inside load, in C: a C function as the reader (math.random)
  -- would never reach an instruction. Through a Lua function, each call is one.
  if type(chunk) == "function" then
    local reader = chunk
    chunk = function() return reader() end
  elseif type(chunk) == "string" then
    -- The parser runs in C: source built to parse slowly (thousands of gotos waiting for
    -- their labels, block after block) kept it there for many seconds past a deadline.
    -- Read 1 KiB at a time through a Lua function, each piece is an instruction where a
    -- limit can stop it. The name stays the one Lua gives a string chunk.
    local source, at = chunk, 1
    if name == nil then name = source end
    chunk = function()
      local piece = ssub(source, at, at + 1023)
      at = at + 1024
      return piece
    end
  end
  local results = tpack(pcall(rawload, chunk, name, "t", ...))
  if not results[1] then rethrow(results[2], 2) end
  return tunpack(results, 2, results.n)
end
local rawxpcall = xpcall
env.xpcall = function(...)
  local f, handler = ...
  if type(handler) ~= "function" then
    error("bad argument #2 to 'xpcall' (function expected, got " .. typeof(select("#", ...), 2, handler) .. ")", 2)
  end
  return rawxpcall(f, guardhandler(handler), select(3, ...))
end
env.collectgarbage = function(option)
  if option == "count" then return collect("count") end
  error("collectgarbage: only \"count\" is allowed in the sandbox", 2)
end
-- The arguments are checked here, as Lua's own setmetatable words it: an argument error
-- from the C function would name the stripped wrapper's call, "bad argument #1 to '?'".
-- (A protected metatable's refusal comes from C, without a position of its own; the
-- message handler names the script's line.)
env.setmetatable = function(...)
  local t, mt = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'setmetatable' (table expected, got " .. typeof(select("#", ...), 1, t) .. ")", 2)
  end
  if mt ~= nil and type(mt) ~= "table" then
    error("bad argument #2 to 'setmetatable' (nil or table expected)", 2)
  end
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: a metatable with __gc is not allowed in the sandbox", 2)
  end
  return setmeta(t, mt)
end
-- rawset: the seal (below) adds it, refusing the read-only tables and the standard names.

local string = pick(real.string, {
  "byte", "char", "format", "len", "lower", "pack", "packsize", "reverse", "sub", "unpack", "upper",
})
-- Patterns: the same language, matched with a step budget (Sources/CLuaHost/pattern.c).
string.find, string.match, string.gmatch, string.gsub = patterns.find, patterns.match, patterns.gmatch, patterns.gsub
-- Lua's string.rep, made by doubling with the work charged between copies (sandbox.c,
-- luahier_rep): Lua's copies once per repetition in one uninterruptible C call.
string.rep = hostlib.rep

-- table's loops over elements, done by the host with each step charged and the deadline
-- checked (sandbox.c): Lua's run in one C call no hook reaches, for hours with a lying
-- __len. Put in the real module too, so an argument error names them as Lua's do
-- ("bad argument #2 to 'table.insert'" when called through pcall).
for name, host in next, {
  insert = hostlib.insert, remove = hostlib.remove, move = hostlib.move, concat = hostlib.concat,
  unpack = hostlib.unpack, sort = hostlib.sort,
} do
  real.table[name] = host
end
local table = pick(real.table, { "concat", "insert", "move", "pack", "remove", "sort", "unpack" })

local math = pick(real.math, {
  "abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log",
  "max", "maxinteger", "min", "mininteger", "modf", "pi", "rad", "random", "randomseed", "sin",
  "sqrt", "tan", "tointeger", "type", "ult",
})
local utf8 = pick(real.utf8, { "char", "charpattern", "codepoint", "codes", "len", "offset" })
local os = pick(real.os, { "clock", "date", "time" })
-- strftime expands each conversion in one C call no deadline reaches: a format of 8 MB of
-- "%c" made 200 MB in 0.9 s. Formats are short; a longer one is refused.
local realdate = os.date
os.date = function(...)
  local format = ...
  if type(format) == "string" and #format > 256 then
    error("bad argument #1 to 'date' (a format of at most 256 bytes, got " .. #format .. ")", 2)
  end
  local results = tpack(pcall(realdate, ...))
  if not results[1] then rethrow(results[2], 2) end
  return tunpack(results, 2, results.n)
end

-- Closing a coroutine runs its __close handlers, which may close another coroutine, and
-- so on: 5.4.4 counts none of that against its C-stack limit and crashes when the chain
-- is long. Every close (coroutine.close, and coroutine.wrap's close after an error) goes
-- through one counted closer. Resuming and closing go through the host's resume and
-- close, which note the running thread (a deadline or a trip stops that thread at once).
local MAXCLOSING, closing = 100, 0
local function countedClose(co)
  if closing >= MAXCLOSING then
    error("coroutine.close: closes nested deeper than " .. MAXCLOSING .. " (closing from __close handlers)", 3)
  end
  closing = closing + 1
  local results = tpack(pcall(coclose, co))
  closing = closing - 1
  if not results[1] then rethrow(results[2], 2) end
  return tunpack(results, 2, results.n)
end
local coroutine = pick(real.coroutine, { "create", "isyieldable", "running", "status", "yield" })
coroutine.resume = coresume
coroutine.close = function(co) return countedClose(co) end
coroutine.wrap = function(...)
  local f = ...
  if type(f) ~= "function" then
    error("bad argument #1 to 'wrap' (function expected, got " .. typeof(select("#", ...), 1, f) .. ")", 2)
  end
  local co = cocreate(f)
  return function(...)
    local results = tpack(coresume(co, ...))
    if results[1] then return tunpack(results, 2, results.n) end
    if costatus(co) == "dead" then countedClose(co) end
    error(results[2], 0)
  end
end

-- require: Lua source from the configured folders, into a loaded table of the sandbox's own.
local loaded, standardModules = {}, {}
-- A module's text: read once per state, or taken from `folders.sources` when a host set
-- it (a pool: every state of a revision loads the text the first one read, recorded there).
local readsource = hostlib.readsource
local function loadModule(path)
  local sources = rawget(folders, "sources")
  local text = sources and sources[path]
  if text == nil then
    -- A bundle's rules: only its own files, never the disk.
    if rawget(folders, "sealed") then return nil, "cannot open " .. path end
    local message
    text, message = readsource(path)
    if not text then return nil, message end
    if sources then sources[path] = text end
  end
  return rawload(text, "@" .. path, "t", env)
end
local function fromFolders(name)
  if type(name) ~= "string" or not strfind(name, "^[%w_%-]+[%w_%-%.]*$") or strfind(name, "%.%.") or strfind(name, "%.$") then
    return "\n\tno module '" .. tostring(name) .. "' (module names are letters, digits, '_', '-' and '.')"
  end
  local relative = strgsub(name, "%.", "/")
  local tried = {}
  for i = 1, #folders do
    for _, form in ipairs({ "%s/%s.lua", "%s/%s/init.lua" }) do
      -- The current folder is named as a script in it is: "mod.lua:3", not "./mod.lua:3".
      local path = form:format(folders[i], relative)
      if folders[i] == "." then path = strsub(path, 3) end
      local chunk, message = loadModule(path)
      if chunk then return chunk, path end
      -- An error the parser raises with no line (nesting past its C stack: "C stack
      -- overflow") may come back as the host's error table, and names no file: the module's
      -- path is put in front, so the message says which file failed.
      if type(message) == "table" then message = rawget(message, "message") end
      message = tostring(message)
      if not strfind(message, "^cannot open ") then
        if strsub(message, 1, #path + 1) ~= path .. ":" then message = path .. ": " .. message end
        error(message, 0)
      end
      tried[#tried + 1] = "\n\tno file '" .. path .. "'" .. (rawget(folders, "sealed") and " in the bundle" or "")
    end
  end
  return concat(tried)
end
env.require = function(name)
  if type(name) ~= "string" then
    error("bad argument #1 to 'require' (string expected, got " .. type(name) .. ")", 2)
  end
  local value = loaded[name]
  if value then return value end
  local chunk, path = fromFolders(name)
  if type(chunk) ~= "function" then error("module '" .. name .. "' not found:" .. chunk, 2) end
  local result = chunk(name, path)
  if result ~= nil then loaded[name] = result elseif loaded[name] == nil then loaded[name] = true end
  return loaded[name], path
end
-- package.loaded: the sandbox's own; the standard modules in it cannot be replaced.
local loadedView = setmeta({}, {
  __index = loaded,
  __newindex = function(_, key, value)
    if standardModules[key] then
      error("package.loaded." .. tostring(key) .. " belongs to the standard library and cannot be replaced", 2)
    end
    loaded[key] = value
  end,
  __pairs = function() return function(_, key) return next(loaded, key) end, nil, nil end,
  __metatable = false,
})
frozen[loadedView] = true

for name, contents in next, { string = string, table = table, math = math, utf8 = utf8, os = os, coroutine = coroutine } do
  local view = freeze(name, contents)
  env[name] = view
  loaded[name] = view
  standardModules[name] = true
end
env.package = freeze("package", { loaded = loadedView, config = real.package.config })
loaded.package = env.package
standardModules.package, standardModules._G = true, true
env._G = env
frozen[env] = true

-- Strings get a metatable of their own: the library as __index, Lua's arithmetic
-- metamethods (coercion), and a locked placeholder for getmetatable("").
local stringMeta = {}
for key, value in next, hostlib.getstringmetatable() do stringMeta[key] = value end
stringMeta.__index = env.string
stringMeta.__metatable = freeze("the string metatable", { __index = env.string })
hostlib.setstringmetatable(stringMeta)

hostlib.setglobals(env)

-- Seals the globals once the host has added its own (hier, print): every global defined
-- by then is moved behind _G's __index, so scripts read but cannot replace them, rawset
-- included. A script's own globals are plain fields of _G.
return function()
  local standard = {}
  for name, value in next, env do standard[name] = value end
  for name in next, standard do rawset(env, name, nil) end
  standard._G = env
  loaded._G = env
  if standard.hier ~= nil then
    frozen[standard.hier] = true
    loaded.hier = standard.hier
    standardModules.hier = true
  end
  local function refuse(name)
    error("'" .. tostring(name) .. "' belongs to the standard library and cannot be replaced", 3)
  end
  standard.rawset = function(...)
    local t, key, value = ...
    if type(t) ~= "table" then
      error("bad argument #1 to 'rawset' (table expected, got " .. typeof(select("#", ...), 1, t) .. ")", 2)
    end
    if frozen[t] and not rawequal(t, env) then error("rawset: the standard library, hier and package are read-only", 2) end
    if rawequal(t, env) and standard[key] ~= nil then refuse(key) end
    return rawset(t, key, value)
  end
  setmeta(env, {
    __index = standard,
    __newindex = function(t, key, value)
      if standard[key] ~= nil then refuse(key) end
      rawset(t, key, value)
    end,
    __metatable = false,
  })
end
