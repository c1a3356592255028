-- luacheck for the package's own Lua (Lua/*.lua), which the EmbedLua plugin embeds in the
-- binary at build time. `tools/lint-lua.sh` runs it (walk.lua as its traced variant).
std = "lua54"
max_line_length = false

-- "=[luahier]": replaces `print` with one that writes through the host.
files["Lua/host_prelude.lua"] = { globals = { "print" } }

-- "=luahier test": reads the host's entry points (and clears them), defines the test API.
files["Lua/test_prelude.lua"] = {
    read_globals = { "hier" },
    globals = {
        "__luahier_result", "__luahier_presented", "__luahier_deliveries",
        "__luahier_count", "__luahier_name", "__luahier_run",
        "expect", "rules", "test", "trigger", "report", "presented", "publish",
    },
}

-- "=[luahier walk]": the C enums' names, filled in by luahier_pushwalk before it loads. On
-- purpose: a removed responder's answer is passed by in an empty branch (542), and in the traced
-- variant each `do return ..., record end` leaves the untraced `return` after it unreachable (511).
files["Lua/walk.lua"] = {
    read_globals = {
        "LUAHIER_ENTRY_STRIDE", "LUAHIER_ENTRY_FILTER", "LUAHIER_ENTRY_CLASS", "LUAHIER_ENTRY_CROSS",
        "LUAHIER_ENTRY_RUN", "LUAHIER_PLAN_EVENTS", "LUAHIER_PLAN_ERRORS", "LUAHIER_PLAN_LAST",
        "LUAHIER_PLAN_TRACE", "LUAHIER_PLAN_END", "LUAHIER_PLAN_RECORDS", "LUAHIER_CLASS_RECEIVE",
        "LUAHIER_CLASS_HANDLE", "LUAHIER_CLASS_CATCH", "LUAHIER_CLASS_ALERT", "LUAHIER_CLASS_ARRIVE",
        "LUAHIER_STATE_REACHED", "LUAHIER_STATE_VALUE", "LUAHIER_STATE_TYPE", "LUAHIER_STATE_ERROR",
        "LUAHIER_STATE_BEFORE", "LUAHIER_STATE_RECORD", "LUAHIER_STATE_PASSED", "LUAHIER_STATE_PASSEDTO",
        "LUAHIER_STATUS_HANDLED", "LUAHIER_STEP_STRIDE", "LUAHIER_TRACE_STEPS",
    },
    ignore = { "542", "511" },
}
