import Testing
@testable import LuaHierarchy

/// The sandbox, proved by enumeration (contract §7): from a script's `_ENV`, walk everything a
/// script can reach and check two properties of all of it.
///
/// - Every function reached is on the allow-list, by identity. The allow-list is written out
///   here, name by name; the walk does not trust names, only identities, so a library function
///   reached by any other route (`package.loaded.os.execute`, a metatable's `__index`, what a
///   host function returns) is a failure.
/// - Every table reached is read-only, `rawset` included, unless it is the script's own data:
///   `_G` itself (whose standard names are checked one by one instead) and the tables host
///   functions return fresh on every call (outcomes, traces, `children()` lists).
///
/// What is walked: every key and value of every table (raw, and through `pairs`, which sees
/// what a read-only view shows), the metatable of every value of every type (tables, strings,
/// numbers, booleans, nil, functions, threads, nodes, handles), the methods and fields of host
/// objects by their API names, and what the host returns for a sample of calls of every kind
/// (tree, registration, dispatch with and without traces, publish, require). Upvalues are not
/// reachable: the sandbox has no `debug`.
@Suite("Sandbox reachability audit (contract §7)")
struct SandboxAuditTests {
    /// Every function a sandboxed script may reach, by the name it has there.
    static let allowList: [String] = {
        let base = [
            "assert", "collectgarbage", "error", "getmetatable", "ipairs", "load", "next", "pairs", "pcall",
            "print", "rawequal", "rawget", "rawlen", "rawset", "require", "select", "setmetatable", "tonumber",
            "tostring", "type", "xpcall",
        ]
        let string = [
            "byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "pack", "packsize",
            "rep", "reverse", "sub", "unpack", "upper",
        ].map { "string." + $0 }
        let table = ["concat", "insert", "move", "pack", "remove", "sort", "unpack"].map { "table." + $0 }
        let math = [
            "abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "log", "max", "min",
            "modf", "rad", "random", "randomseed", "sin", "sqrt", "tan", "tointeger", "type", "ult",
        ].map { "math." + $0 }
        let utf8 = ["char", "codepoint", "codes", "len", "offset"].map { "utf8." + $0 }
        let coroutine = ["close", "create", "isyieldable", "resume", "running", "status", "wrap", "yield"]
            .map { "coroutine." + $0 }
        let os = ["clock", "date", "time"].map { "os." + $0 }
        let node = [
            "child", "children", "remove", "moveTo", "triggerEvent", "reportError", "receiveEvent", "handleEvent",
            "transformEvent", "receiveError", "handleError", "transformError", "catchError", "subscribe", "publish",
            "triggers", "reports", "handleAlertErrors",
        ].map { "hier.root." + $0 }
        // A handle registers the next responder on its node (contract §4): the registrations again.
        let handle = [
            "remove", "receiveEvent", "handleEvent", "transformEvent", "receiveError", "handleError", "transformError",
            "catchError", "subscribe", "handleAlertErrors",
        ].map { "handle." + $0 }
        return base + string + table + math + utf8 + coroutine + os + node + ["hier.node"] + handle
    }()

    /// The walk, in Lua, with `allowList` written in; it prints one line per violation, then
    /// "walked N values".
    static func audit(allowing allowList: [String]) -> String {
        "local allowedNames = {" + allowList.map { "\"\($0)\"" }.joined(separator: ", ") + "}\n" + walk
    }

    static let walk = #"""
        local handle = hier.root:child("h"):receiveEvent(function() return "notHandled" end)
        local allowed = {}
        for _, name in ipairs(allowedNames) do
          local value = { hier = hier, handle = handle }
          local first = name:match("^[^.]+")
          value = value[first] or _G[first]
          for part in name:gmatch("%.([^.]+)") do value = value[part] end
          if type(value) ~= "function" then print("allow-list name is not a function: " .. name) end
          allowed[value] = name
        end

        local print, pcall, rawset, next, pairs, type, tostring, getmetatable = print, pcall, rawset, next, pairs, type, tostring, getmetatable
        local seen, queue, own, count = {}, {}, {}, 0
        local function visit(value, path, from)
          if value == nil or seen[value] then return end
          seen[value] = path
          queue[#queue + 1] = value
          -- What the script's own data holds is its own too (values it passed in, traces).
          if from ~= nil and own[from] and type(value) == "table" then own[value] = true end
        end
        local function problem(text) print(text) end
        -- The script's own global.
        own[arg] = true
        -- Probes write back the value already there, so a table that accepts one is unharmed.
        local function replaceable(t, key) return pcall(function() t[key] = t[key] end) end

        -- Host calls whose results a script gets. Fresh tables (new on every call) are the
        -- script's own data; everything else they return must pass the same checks.
        local function sample(path, make)
          local first, second = make(), make()
          if type(first) == "table" and first ~= second then own[first] = true own[second] = true end
          visit(first, path)
          visit(second, path .. "#2")
        end
        local node = hier.root:child("a"):child("b")
        node:receiveEvent(function(e) return "notHandled" end)
        node:transformError(function(e) return { type = "Other", message = "m" } end)
        node:subscribe("P", function() end)
        sample("hier.root", function() return hier.root end)
        sample("hier.node('/a/b')", function() return hier.node("/a/b") end)
        sample("node:child", function() return node:child("c") end)
        sample("node:children()", function() return hier.root:children() end)
        sample("node.parent", function() return node.parent end)
        sample("node.name", function() return node.name end)
        sample("node.path", function() return node.path end)
        sample("registration handle", function() return node:handleEvent("Never", function() end) end)
        sample("triggerEvent outcome", function() return node:triggerEvent({ type = "Tap" }) end)
        sample("reportError outcome", function() return node:reportError({ type = "E", message = "m" }) end)
        for _, level in ipairs({ "path", "full" }) do
          hier.tracing = level
          sample("traced outcome (" .. level .. ")", function() return node:triggerEvent("Tap") end)
          sample("trace (" .. level .. ")", function() return node:triggerEvent("Tap").trace end)
          sample("traced error outcome (" .. level .. ")", function() return node:reportError("boom") end)
        end
        hier.tracing = false
        sample("publish", function() return hier.root:publish("P") end)
        for _, name in ipairs({ "string", "table", "math", "utf8", "coroutine", "os", "hier", "package", "_G" }) do
          sample("require('" .. name .. "')", function() return require(name) end)
        end
        sample("coroutine.running()", function() return coroutine.running() end)
        sample("coroutine.create()", function() return coroutine.create(function() end) end)
        sample("getmetatable('')", function() return getmetatable("") end)

        -- Host objects' fields by their API names (userdata cannot be iterated).
        local nodeFields = { "name", "path", "parent" }
        for _, name in ipairs(allowedNames) do
          local method = name:match("^hier%.root%.(.+)")
          if method then nodeFields[#nodeFields + 1] = method end
        end

        visit(_G, "_G")
        for _, value in ipairs({ 0, 1.5, true, false, "", print }) do visit(value, "a " .. type(value)) end
        local walked = 1
        while walked <= #queue do
          local value = queue[walked]
          local path = seen[value]
          walked = walked + 1
          count = count + 1
          local kind = type(value)
          visit(getmetatable(value), "getmetatable(" .. path .. ")")
          if kind == "function" then
            if not allowed[value] then problem("not on the allow-list: a function at " .. path) end
          elseif kind == "table" then
            for key, item in next, value do
              visit(key, path .. "[key]", value)
              visit(item, path .. "." .. tostring(key), value)
            end
            local ok, iterator, state, first = pcall(pairs, value)
            if ok then
              -- A view's iterator is a closure of the sandbox's (it reads only its contents);
              -- what it yields is walked, and the state it hands out too.
              if iterator ~= next then allowed[iterator] = "iterator of " .. path end
              visit(state, "pairs state of " .. path)
              for key, item in iterator, state, first do
                visit(key, path .. "[key]", value)
                visit(item, path .. "." .. tostring(key), value)
              end
            end
            if value == _G then
              for _, name in ipairs({ "print", "string", "hier", "require", "rawset", "_G", "package", "os" }) do
                if replaceable(_G, name) or pcall(rawset, _G, name, _G[name]) then
                  problem("the standard global '" .. name .. "' can be replaced")
                end
              end
            elseif value == package.loaded then
              -- The script's own modules may be added; the standard ones cannot be replaced.
              if pcall(rawset, value, "string", value.string) then problem("rawset changes " .. path) end
              for key in pairs(value) do
                if replaceable(value, key) then problem("package.loaded." .. tostring(key) .. " can be replaced") end
              end
            elseif not own[value] then
              if pcall(rawset, value, "__audit_probe", nil) then problem("rawset changes " .. path) end
              if pcall(function() value.__audit_probe = nil end) then problem("assignment changes " .. path) end
              for key in pairs(value) do
                if replaceable(value, key) then problem("assignment changes " .. path .. "." .. tostring(key)) end
              end
            end
          elseif kind == "userdata" then
            for _, field in ipairs(nodeFields) do
              local ok, item = pcall(function() return value[field] end)
              if ok then visit(item, path .. "." .. field) end
            end
            if pcall(function() value.__audit_probe = nil end) then problem("assignment changes " .. path) end
          end
        end
        print("walked " .. count .. " values")
        """#

    /// Runs the audit in a hierarchy made with `options`, after `prepare`; returns what it
    /// found (violations) and the count line.
    static func run(
        _ options: Hierarchy.Options = .init(), prepare: (Hierarchy) -> Void = { _ in }
    ) throws -> (violations: [String], walked: Int) {
        let hierarchy = try Hierarchy(options: options)
        var printed: [String] = []
        hierarchy.output = { printed.append($0) }
        hierarchy.presenter = { _ in }
        hierarchy.onSafetyWarning = { _ in }
        prepare(hierarchy)
        try hierarchy.run(source: audit(allowing: allowList), chunkName: "audit.lua")
        let last = printed.popLast() ?? ""
        let walked = Int(last.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (printed, walked)
    }

    @Test func everythingReachableIsAllowedAndReadOnly() throws {
        let (violations, walked) = try Self.run()
        #expect(violations == [])
        // Every library, host object and sample was reached (the count is of distinct values).
        #expect(walked > 250, "walked only \(walked) values")
    }

    /// The walk finds what it is there to find: the full libraries (package.loaded.os among
    /// them) and a host function the allow-list does not name.
    @Test func theAuditFailsOnAnOpenSandbox() throws {
        var full = Hierarchy.Options()
        full.libraries = .full
        let open = try Self.run(full).violations
        // Paths name the first route the walk found to each value.
        #expect(open.contains { $0.hasSuffix(".execute") }, "\(open.filter { $0.contains("os") }.prefix(5))")
        #expect(open.contains { $0.contains("package.loaded") }, "\(open.prefix(5))")
        #expect(open.contains { $0.contains("debug.") }, "\(open.prefix(5))")
        let extra = try Self.run(prepare: { $0.register(function: "extra") { _ in .null } }).violations
        #expect(extra.count == 1 && extra[0].hasPrefix("not on the allow-list: a function at ") && extra[0].hasSuffix(".extra"), "\(extra)")
    }
}
