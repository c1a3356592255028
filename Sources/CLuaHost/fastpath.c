/* Runs of responders, and the fast path of `triggerEvent`: the plan walk. */
#include "luahier_host.h"

#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

/* [-1, +(0|1), e] Calls the function on top with the value at `value`. Returns 1 with its
 * answer on the stack unless the answer is the interned "notHandled" (then 0, popped). */
static int luahier_callresponder(lua_State *L, int value, const void *not_handled) {
    lua_pushvalue(L, value);
    lua_call(L, 1, 1);
    if (lua_type(L, -1) != LUA_TSTRING || lua_topointer(L, -1) != not_handled) return 1;
    lua_pop(L, 1);
    return 0;
}

int luahier_runresponders(lua_State *L) {
    /* Only the host makes light userdata; anything else (trusted code reaching this
     * function through the debug library) is refused rather than read as a run. */
    luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
    luahier_Run *run = (luahier_Run *)lua_touserdata(L, 1);
    run->stopped = 0;
    for (int i = 0; i < run->count; i++) {
        run->reached = i;
        lua_rawgeti(L, LUA_REGISTRYINDEX, run->refs[i]);
        if (luahier_callresponder(L, 2, run->not_handled)) {
            run->stopped = 1;
            return 1;
        }
        if (*run->changes != run->changes_at_start) {
            run->reached = i + 1;
            return 0;
        }
    }
    run->reached = run->count;
    return 0;
}

/* The plan walk: a Lua function, so that each responder is a Lua-to-Lua call (a C-to-Lua
 * lua_call per hop cost about twice as much), called protected with (plan, value, type).
 * It calls each matching responder of the plan in order while it answers "notHandled"
 * (a short string: Lua interns it, so `~=` compares addresses) and returns (how it stopped,
 * a LUAHIER_WALKED_* code; the entry it stopped at, or the count if it called all; the
 * answer).
 * An error leaves the entry whose call raised it in the upvalue `reached`, which is -1 while
 * no responder call is under way (the host resets it after reading it). The walk itself never
 * raises: the count hook holds a tripped limit until the next responder runs (luahier_hook),
 * and it allocates nothing but a responder's call frame, after `reached` is set. Filters are
 * false (any) or a set of type names. The host loads it stripped of debug information, so it
 * never names a `where`, and tracebacks leave its frame out (luahier_isrunframe). */
enum {
    LUAHIER_WALK_STALE = 1,    /* upvalue: set by the trampoline when the tree changed */
    LUAHIER_WALK_REACHED = 2   /* upvalue: the entry being called */
};
static const char luahier_walksource[] =
    "local stale, reached = false, -1\n"
    "return function(plan, value, type)\n"
    "  stale = false\n"
    "  local count, slot = plan[%d], %d\n"
    "  for entry = 0, count - 1 do\n"
    "    local filter = plan[slot + 1]\n"
    "    if not filter or filter[type] then\n"
    "      local responder = plan[slot]\n"
    "      if not responder then return %d, entry end\n"
    "      reached = entry\n"
    "      local answer = responder(value)\n"
    "      if answer ~= 'notHandled' then reached = -1 return %d, entry, answer end\n"
    "      if stale then reached = -1 return %d, entry end\n"
    "    end\n"
    "    slot = slot + %d\n"
    "  end\n"
    "  reached = -1\n"
    "  return %d, count\n"
    "end\n";

int luahier_pushplanwalk(lua_State *L) {
    const char *source = lua_pushfstring(L, luahier_walksource, (int)LUAHIER_PLAN_COUNT,
                                         (int)LUAHIER_PLAN_ENTRIES, (int)LUAHIER_WALKED_HOST,
                                         (int)LUAHIER_WALKED_ANSWER, (int)LUAHIER_WALKED_CHANGED,
                                         (int)LUAHIER_PLAN_STRIDE, (int)LUAHIER_WALKED_ALL);
    int status = luaL_loadbuffer(L, source, strlen(source), "=[luahier walk]");
    lua_remove(L, -2);
    if (status == LUA_OK) status = lua_pcall(L, 0, 1, 0);
    if (status != LUA_OK) return status;
    const char *stale = lua_getupvalue(L, -1, LUAHIER_WALK_STALE);
    const char *reached = lua_getupvalue(L, -2, LUAHIER_WALK_REACHED);
    int laid_out = stale && reached && strcmp(stale, "stale") == 0 && strcmp(reached, "reached") == 0;
    lua_pop(L, (stale ? 1 : 0) + (reached ? 1 : 0));
    if (!laid_out) {
        lua_pop(L, 1);
        lua_pushliteral(L, "the plan walk's upvalues are not where the host expects them");
        return LUA_ERRRUN;
    }
    status = luahier_strip(L, "=[luahier walk]");
    if (status != LUA_OK) return status;
    /* lua_load set the first upvalue to the globals: both start afresh. */
    lua_pushboolean(L, 0);
    lua_setupvalue(L, -2, LUAHIER_WALK_STALE);
    lua_pushinteger(L, -1);
    lua_setupvalue(L, -2, LUAHIER_WALK_REACHED);
    return LUA_OK;
}

void luahier_notewalkchange(lua_State *L) {
    luahier_Guard *g = luahier_guard(L);
    if (g->walk_changes == NULL || *g->walk_changes == g->walk_changes_at_start) return;
    luaL_checkstack(L, 2, "marking a plan walk stale");
    lua_rawgeti(L, LUA_REGISTRYINDEX, g->plan_ref);
    lua_pushboolean(L, 1);
    lua_setupvalue(L, -2, LUAHIER_WALK_STALE);
    lua_pop(L, 1);
    g->walk_changes = NULL;
}

/* [-0, +0, -] Notes in `called` the entries a walk of the plan at `plan` called for the
 * type at `type`: the matching ones before `reached`, and `reached` itself if it was called. */
static void luahier_notecalled(lua_State *L, luahier_Called *called, int plan, int type, int reached, int reached_called) {
    for (int i = 0; i < reached && called->count < (int)sizeof called->entries; i++) {
        int matches = 1;
        if (lua_rawgeti(L, plan, LUAHIER_PLAN_ENTRIES + i * LUAHIER_PLAN_STRIDE + 1) == LUA_TTABLE) {
            lua_pushvalue(L, type);
            matches = lua_rawget(L, -2) != LUA_TNIL;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if (matches) called->entries[called->count++] = (unsigned char)i;
    }
    if (reached_called && called->count < (int)sizeof called->entries) called->entries[called->count++] = (unsigned char)reached;
}

/* [-0, +1, -] Pushes upvalue `n`. */
static void luahier_pushup(lua_State *L, int n) { lua_pushvalue(L, lua_upvalueindex(n)); }

int luahier_trigger(lua_State *L) {
    luahier_Fast *fast = (luahier_Fast *)lua_touserdata(L, lua_upvalueindex(LUAHIER_UP_FAST));
    if (*fast->depth != 0 || lua_gettop(L) != 2 || lua_type(L, 1) != LUA_TUSERDATA || lua_type(L, 2) != LUA_TTABLE)
        return luahier_trampoline(L);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, lua_upvalueindex(LUAHIER_UP_PLANS)) != LUA_TTABLE) {
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* 3: the plan */
    lua_rawgeti(L, 3, LUAHIER_PLAN_STAMP);
    int current = lua_tointegerx(L, -1, NULL) == *fast->changes;
    lua_pop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(LUAHIER_UP_TYPE));
    if (!current || lua_rawget(L, 2) != LUA_TSTRING) {
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* 4: the event's type, read once, as the host reads it */
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host;
    lua_pushvalue(L, 2);
    switch (lua_rawget(L, lua_upvalueindex(LUAHIER_UP_TAGS))) {
    case LUA_TNIL:
        /* First travel: tagged as an event, as the host does (host allocations never fail). */
        lua_pop(L, 1);
        g->in_host = 1;
        lua_pushvalue(L, 2);
        lua_pushboolean(L, 1);
        lua_rawset(L, lua_upvalueindex(LUAHIER_UP_TAGS));
        g->in_host = caller_in_host;
        break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, -1)) {
            lua_pop(L, 1);
            break;
        }
        /* fallthrough: an error table, which the host refuses with its message */
    default:
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    luahier_charge(L, fast->dispatch_charge);
    fast->walks++;
    /* The dispatch's own budget, kept until it is finished here or by the host. */
    luahier_Budget enclosing;
    luahier_pushbudget(L, &enclosing, fast->dispatch_instructions, fast->dispatch_seconds);

    lua_rawgeti(L, 3, LUAHIER_PLAN_TRACED);
    int traced = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* [5 msgh, 6 walk, plan, value, type] */
    lua_pushcfunction(L, luahier_msgh);
    lua_rawgeti(L, LUA_REGISTRYINDEX, g->plan_ref);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 4);
    int caller_refused = g->memory_refused;
    g->in_host = 0;
    g->memory_refused = 0;
    g->walk_changes = fast->changes;
    g->walk_changes_at_start = *fast->changes;
    *fast->depth = 1;
    int status = lua_pcall(L, 3, 3, 5);
    *fast->depth = 0;
    g->walk_changes = NULL;
    g->in_host = caller_in_host;
    int memory_refused = g->memory_refused;
    g->memory_refused = caller_refused;
    /* 6: how it stopped, 7: the entry, 8: the answer; or 6: the error */
    int stopped, reached;
    /* A limit that tripped and was swallowed inside the walk's responders still ends the
     * dispatch: the host finishes it (and makes the limit error its value). */
    int swallowed = status == LUA_OK && g->budget.exceeded;
    if (status == LUA_OK) {
        stopped = (int)lua_tointegerx(L, 6, NULL);
        reached = (int)lua_tointegerx(L, 7, NULL);
        lua_copy(L, 8, 5);
    } else {
        /* Which entry raised it: the walk's `reached`, read and reset (lua_pcall took the
         * walk off the stack, so it is fetched again: errors only). */
        lua_copy(L, 6, 5);
        lua_rawgeti(L, LUA_REGISTRYINDEX, g->plan_ref);
        lua_getupvalue(L, -1, LUAHIER_WALK_REACHED);
        reached = (int)lua_tointegerx(L, -1, NULL);
        lua_pushinteger(L, -1);
        lua_setupvalue(L, -3, LUAHIER_WALK_REACHED);
        if (reached >= 0) {
            stopped = LUAHIER_WALKED_RAISED;
        } else {
            /* It failed before its first call (no room for its frame): the host walks the
             * plan from the start instead. */
            lua_rawgeti(L, 3, LUAHIER_PLAN_COUNT);
            stopped = lua_tointegerx(L, -1, NULL) > 0 ? LUAHIER_WALKED_HOST : LUAHIER_WALKED_NOTHING;
            reached = 0;
            status = LUA_OK;
        }
    }
    lua_settop(L, 5);
    /* 5: the answer, the error, or nil */

    int handled = stopped == LUAHIER_WALKED_ANSWER && lua_type(L, 5) == LUA_TSTRING
        && lua_topointer(L, 5) == fast->handled;
    int finished = (stopped == LUAHIER_WALKED_ALL || handled) && !swallowed;
    luahier_Called called;
    called.count = 0;
    if (traced || !finished)
        luahier_notecalled(L, &called, 3, 4, reached,
            stopped == LUAHIER_WALKED_ANSWER || stopped == LUAHIER_WALKED_CHANGED || stopped == LUAHIER_WALKED_RAISED);
    if (!finished) {
        /* For the host to finish: (node, event, plan, type, answer or error, fast, entry,
         * how it stopped, whether memory was refused, the entries called). */
        int code = status != LUA_OK ? status
            : stopped == LUAHIER_WALKED_ANSWER ? LUAHIER_STOP_ANSWER
            : stopped == LUAHIER_WALKED_HOST ? LUAHIER_STOP_HOST
            : stopped == LUAHIER_WALKED_CHANGED ? LUAHIER_STOP_CHANGED : LUAHIER_STOP_END;
        fast->handovers++;
        lua_pushlightuserdata(L, fast);
        lua_pushinteger(L, reached);
        lua_pushinteger(L, code);
        lua_pushboolean(L, memory_refused);
        lua_pushlstring(L, (const char *)called.entries, (size_t)called.count);
        /* The host finishes inside the dispatch's budget; then the enclosing one is back. */
        luahier_HostFunction entry = (luahier_HostFunction)lua_touserdata(L, lua_upvalueindex(1));
        int results = entry(L);
        luahier_notewalkchange(L);
        luahier_popbudget(L, &enclosing);
        return luahier_endhostcall(L, results);
    }
    luahier_popbudget(L, &enclosing);

    /* The outcome, made as the host makes it (host allocations never fail). */
    g->in_host = 1;
    lua_createtable(L, 0, handled ? 6 : 4);
    int outcome = lua_gettop(L);
    luahier_pushup(L, LUAHIER_UP_STATUS);
    if (handled) luahier_pushup(L, LUAHIER_UP_HANDLED);
    else lua_rawgeti(L, 3, LUAHIER_PLAN_END);
    lua_rawset(L, outcome);
    luahier_pushup(L, LUAHIER_UP_KIND);
    luahier_pushup(L, LUAHIER_UP_EVENT);
    lua_rawset(L, outcome);
    luahier_pushup(L, LUAHIER_UP_VALUE);
    lua_pushvalue(L, 2);
    lua_rawset(L, outcome);
    luahier_pushup(L, LUAHIER_UP_AT);
    lua_rawgeti(L, 3, LUAHIER_PLAN_AT);
    lua_rawset(L, outcome);
    if (handled) {
        int slot = LUAHIER_PLAN_ENTRIES + reached * LUAHIER_PLAN_STRIDE;
        luahier_pushup(L, LUAHIER_UP_BY);
        lua_rawgeti(L, 3, slot + 2);
        lua_rawset(L, outcome);
        luahier_pushup(L, LUAHIER_UP_RESPONDER);
        lua_createtable(L, 0, 3);
        luahier_pushup(L, LUAHIER_UP_INDEXKEY);
        lua_rawgeti(L, 3, slot + 3);
        lua_rawset(L, outcome + 2);
        luahier_pushup(L, LUAHIER_UP_WHERE);
        lua_rawgeti(L, 3, slot + 4);
        lua_rawset(L, outcome + 2);
        luahier_pushup(L, LUAHIER_UP_KIND);
        luahier_pushup(L, LUAHIER_UP_RECEIVEEVENT);
        lua_rawset(L, outcome + 2);
        lua_rawset(L, outcome);
    }
    if (traced) {
        /* The trace, made on first read from the plan and what was called (LuaFastPath.swift). */
        lua_pushvalue(L, outcome);
        lua_createtable(L, 4, 0);
        lua_pushvalue(L, 3);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_PLAN);
        lua_pushlstring(L, (const char *)called.entries, (size_t)called.count);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_CALLED);
        lua_pushvalue(L, 4);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_TYPE);
        lua_pushboolean(L, handled);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_HANDLED);
        lua_rawset(L, lua_upvalueindex(LUAHIER_UP_PENDINGTRACES));
        luahier_pushup(L, LUAHIER_UP_TRACEDOUTCOME);
        lua_setmetatable(L, outcome);
    } else {
        luahier_pushup(L, LUAHIER_UP_OUTCOMEMETA);
        lua_setmetatable(L, outcome);
    }
    g->in_host = caller_in_host;
    lua_rawgeti(L, 3, LUAHIER_PLAN_HOPS);
    luahier_charge(L, lua_tointegerx(L, -1, NULL));
    lua_pop(L, 1);
    return 1;
}
