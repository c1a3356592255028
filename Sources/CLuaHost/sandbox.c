/* The sandbox's C functions: Lua's own where they would run unbounded in one C call (sort,
 * string.rep, plain find) redone to charge their work, the tracked coroutine.resume, the
 * guarded xpcall handler and the libraries the sandbox starts from. */
#include "luahier_host.h"

#include <lauxlib.h>
#include <lualib.h>
#include <limits.h>
#include <string.h>

/* An xpcall message handler, guarded: once a limit has tripped the error passes through
 * untouched and no Lua code runs. Lua 5.4.4 re-enters a message handler that raises, in C,
 * forever; a tripped limit raises at every Lua instruction, so the user's handler must not run. */
static int luahier_guardedhandler(lua_State *L) {
    if (luahier_tripped(L)) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

int luahier_guardhandler(lua_State *L) {
    lua_settop(L, 1);
    lua_pushcclosure(L, luahier_guardedhandler, 1);
    return 1;
}

int luahier_resume(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    int narg = lua_gettop(L) - 1;
    if (!lua_checkstack(co, narg)) {
        lua_pushboolean(L, 0);
        lua_pushliteral(L, "too many arguments to resume");
        return 2;
    }
    lua_xmove(L, co, narg);
    luahier_Guard *g = luahier_guard(L);
    lua_State *caller = g->running;
    g->running = co;
    /* A trip under way (a coroutine made before it has no hook when the host counts no
     * instructions), or an interrupt that hooked the caller just before: the coroutine
     * stops too, at its first instruction. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (g->active && (g->budget.exceeded || luahier_interrupt_signal)) lua_sethook(co, luahier_hook, LUA_MASKCOUNT, 1);
    int nres = 0;
    int status = lua_resume(co, L, narg, &nres);
    g->running = caller;
    /* A trip while the coroutine ran: the caller's next instruction raises it too. */
    if (g->active && g->budget.exceeded) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushboolean(L, 0);
            lua_pushliteral(L, "too many results to resume");
            return 2;
        }
        lua_pushboolean(L, 1);
        lua_xmove(co, L, nres);
        return nres + 1;
    }
    /* false, then the message (lua_xmove does nothing when the coroutine is the caller). */
    lua_xmove(co, L, 1);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* lua_CFunction coroutine.close(co) for the sandbox: Lua's (upvalue 1), with the guard's note
 * of the running thread while it runs co's __close handlers on co's own stack, as
 * luahier_resume does for a resume: a deadline then stops that thread, and a trip under way
 * stops it at its first instruction. Called protected, so the note is undone whatever
 * happens (a stale note would point at a thread the collector may free). */
static int luahier_close(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luahier_Guard *g = luahier_guard(L);
    lua_State *caller = g->running;
    if (co != NULL && co != L) {
        g->running = co;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (g->active && (g->budget.exceeded || luahier_interrupt_signal)) lua_sethook(co, luahier_hook, LUA_MASKCOUNT, 1);
    }
    int arguments = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    int status = lua_pcall(L, arguments, LUA_MULTRET, 0);
    g->running = caller;
    if (g->active && g->budget.exceeded) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

int luahier_trackclose(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushcclosure(L, luahier_close, 1);
    return 1;
}

/* [-0, +0, e] Whether the value at `a` sorts before the one at `b`: the comparator at index 2,
 * or `<`. */
static int luahier_sortless(lua_State *L, int a, int b, int has_comparator) {
    if (!has_comparator) return lua_compare(L, a, b, LUA_OPLT);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a);
    lua_pushvalue(L, b);
    lua_call(L, 2, 1);
    int less = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return less;
}

/* [-0, +0, e] Heap sort's sift-down of the element at `root` within 1..n of the table at 1. */
static void luahier_siftdown(lua_State *L, lua_Integer root, lua_Integer n, int has_comparator) {
    lua_geti(L, 1, root);
    int value = lua_gettop(L);
    while (2 * root <= n) {
        lua_Integer child = 2 * root;
        lua_geti(L, 1, child);
        if (child + 1 <= n) {
            lua_geti(L, 1, child + 1);
            if (luahier_sortless(L, value + 1, value + 2, has_comparator)) {
                child++;
                lua_replace(L, value + 1);
            } else {
                lua_pop(L, 1);
            }
        }
        luahier_work(L, 2);
        if (!luahier_sortless(L, value, value + 1, has_comparator)) {
            lua_pop(L, 1);
            break;
        }
        lua_seti(L, 1, root);
        root = child;
    }
    lua_seti(L, 1, root);
}

int luahier_sort(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1);
    int has_comparator = !lua_isnoneornil(L, 2);
    if (has_comparator) luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    luaL_checkstack(L, 8, "sorting");
    luahier_work(L, n);
    for (lua_Integer i = n / 2; i >= 1; i--) luahier_siftdown(L, i, n, has_comparator);
    for (lua_Integer end = n; end > 1; end--) {
        lua_geti(L, 1, 1);
        lua_geti(L, 1, end);
        lua_seti(L, 1, 1);
        lua_seti(L, 1, end);
        luahier_siftdown(L, 1, end - 1, has_comparator);
    }
    return 0;
}

int luahier_rep(lua_State *L) {
    size_t length, separator_length;
    const char *s = luaL_checklstring(L, 1, &length);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *separator = luaL_optlstring(L, 3, "", &separator_length);
    if (n <= 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    if (length + separator_length < length || length + separator_length > (size_t)INT_MAX / (size_t)n)
        return luaL_error(L, "resulting string too large");
    size_t total = (size_t)n * length + (size_t)(n - 1) * separator_length;
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, total);
    if (total > 0) {
        /* One period (s, then sep unless it is the only copy); then the filled part, a whole
         * number of periods, copied onto the rest until it is all filled. */
        memcpy(p, s, length);
        size_t filled = length;
        if (n > 1 && separator_length > 0) {
            memcpy(p + length, separator, separator_length);
            filled += separator_length;
        }
        while (filled < total) {
            size_t chunk = filled < total - filled ? filled : total - filled;
            memcpy(p + filled, p, chunk);
            filled += chunk;
            luahier_work(L, (long long)(chunk / LUAHIER_BYTES_PER_UNIT));
        }
    }
    luaL_pushresultsize(&b, total);
    return 1;
}

int luahier_setglobals(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    return 0;
}

int luahier_setstringmetatable(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_pushliteral(L, "");
    lua_insert(L, 1);
    lua_setmetatable(L, 1);
    return 0;
}

int luahier_getstringmetatable(lua_State *L) {
    lua_pushliteral(L, "");
    if (!lua_getmetatable(L, -1)) lua_pushnil(L);
    return 1;
}

/* ---- Libraries ------------------------------------------------------------------------ */

int luahier_opensandboxlibs(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base}, {LUA_LOADLIBNAME, luaopen_package},
        {LUA_COLIBNAME, luaopen_coroutine}, {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_OSLIBNAME, luaopen_os}, {NULL, NULL}};
    for (const luaL_Reg *lib = libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    return 0;
}

int luahier_openalllibs(lua_State *L) {
    luaL_openlibs(L);
    return 0;
}

extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

int luahier_plainfind(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    lua_Integer init = luaL_optinteger(L, 3, 1);
    if (init < 0) init = (init < -(lua_Integer)ls) ? 1 : (lua_Integer)ls + init + 1;
    if (init == 0) init = 1;
    if (init > (lua_Integer)ls + 1) {
        lua_pushnil(L);
        return 1;
    }
    const char *start = s + init - 1;
    const char *found = lp == 0 ? start : (const char *)memmem(start, ls - (size_t)(init - 1), p, lp);
    if (found == NULL) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)(found - s) + 1);
    lua_pushinteger(L, (lua_Integer)(found - s) + (lua_Integer)lp);
    return 2;
}

