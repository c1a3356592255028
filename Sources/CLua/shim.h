/*
 * The one C header of LuaHierarchy's Lua bridge.
 *
 * 1. Re-exports the Lua API macros Swift cannot import (function-like macros and
 *    `LUA_REGISTRYINDEX`) as `static inline` functions with the same meaning.
 * 2. Holds the two pieces of the bridge that must be C, because they raise Lua errors
 *    (`lua_error` longjmps, and a longjmp must never cross a Swift frame):
 *    - `luahier_trampoline`: every Swift function callable from Lua is entered through it;
 *      the Swift side returns a negative count to ask the trampoline to raise the error
 *      it left on the stack, after the Swift frame has returned.
 *    - `luahier_msgh`: the message handler of every protected call the host makes; it turns
 *      any error value into a table with `type`, `message`, `where` and `traceback`.
 *
 * Stack notes `[-o, +p, x]` follow the Lua manual: pops, pushes, and whether it can raise
 * (`-` never, `m` only on memory errors, `e` any error).
 */
#ifndef LUAHIER_SHIM_H
#define LUAHIER_SHIM_H

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

/* ---- Constants ---------------------------------------------------------------------- */

static const int luahier_REGISTRYINDEX = LUA_REGISTRYINDEX;
static const int luahier_MULTRET = LUA_MULTRET;
static const lua_Integer luahier_RIDX_GLOBALS = LUA_RIDX_GLOBALS;

/* ---- Macro re-exports ---------------------------------------------------------------- */

/* [-n, +0, -] */
static inline void luahier_pop(lua_State *L, int n) { lua_pop(L, n); }
/* [-(nargs+1), +(nresults|1), -] */
static inline int luahier_pcall(lua_State *L, int nargs, int nresults, int msgh) {
    return lua_pcall(L, nargs, nresults, msgh);
}
/* [-0, +1, m] */
static inline void luahier_newtable(lua_State *L) { lua_newtable(L); }
/* [-0, +1, -] */
static inline void luahier_pushcfunction(lua_State *L, lua_CFunction f) { lua_pushcfunction(L, f); }
/* [-0, +1, -] */
static inline void luahier_pushglobaltable(lua_State *L) { lua_pushglobaltable(L); }
/* [-1, +1, -] */
static inline void luahier_insert(lua_State *L, int idx) { lua_insert(L, idx); }
/* [-1, +0, -] */
static inline void luahier_remove(lua_State *L, int idx) { lua_remove(L, idx); }
/* [-1, +0, -] */
static inline void luahier_replace(lua_State *L, int idx) { lua_replace(L, idx); }
/* [-0, +0, -] */
static inline int luahier_upvalueindex(int i) { return lua_upvalueindex(i); }
/* [-0, +0, -] */
static inline void *luahier_getextraspace(lua_State *L) { return lua_getextraspace(L); }
/* [-0, +0, -] (never converts: callers check the type first) */
static inline lua_Number luahier_tonumber(lua_State *L, int idx) { return lua_tonumberx(L, idx, NULL); }
/* [-0, +0, -] */
static inline lua_Integer luahier_tointeger(lua_State *L, int idx) { return lua_tointegerx(L, idx, NULL); }
/* [-0, +1, m] */
static inline void luahier_pushliteral(lua_State *L, const char *s) { lua_pushstring(L, s); }

/* ---- The trampoline ------------------------------------------------------------------ */

/* A Swift function exposed to Lua. It returns the number of results it pushed, or -1
 * after pushing an error value: the trampoline raises it once Swift has returned. */
typedef int (*luahier_HostFunction)(lua_State *L);

/* [-?, +?, e]  upvalue 1: the Swift entry as a light userdata; further upvalues are the
 * entry's own. A string error gets the caller's `chunk:line: ` prefix, as luaL_error does. */
static inline int luahier_trampoline(lua_State *L) {
    luahier_HostFunction entry = (luahier_HostFunction)lua_touserdata(L, lua_upvalueindex(1));
    int results = entry(L);
    if (results >= 0) return results;
    if (lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

/* [-0, +1, -] The trampoline as a closure over `entry` and `nup` upvalues already pushed. */
static inline void luahier_pushhostfunction(lua_State *L, luahier_HostFunction entry, int nup) {
    lua_pushlightuserdata(L, (void *)entry);
    lua_insert(L, -(nup + 1));
    lua_pushcclosure(L, luahier_trampoline, nup + 1);
}

/* ---- Locations and the message handler ------------------------------------------------ */

/* [-0, +(0|1), m] Pushes "chunk:line" of the innermost Lua function at `level` or above;
 * returns 0 and pushes nothing when no Lua frame has a line. */
static inline int luahier_pushwhere(lua_State *L, int level) {
    lua_Debug ar;
    for (; lua_getstack(L, level, &ar); level++) {
        lua_getinfo(L, "Sl", &ar);
        if (ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d", ar.short_src, ar.currentline);
            return 1;
        }
    }
    return 0;
}

/* [-0, +0, -] Length of a leading "chunk:line: " in `msg` (its first line only), or 0.
 * `*where_len` gets the length of "chunk:line". */
static inline size_t luahier_locationprefix(const char *msg, size_t len, size_t *where_len) {
    for (size_t i = 0; i + 1 < len && msg[i] != '\n'; i++) {
        if (msg[i] != ':' || msg[i + 1] < '0' || msg[i + 1] > '9') continue;
        size_t j = i + 1;
        while (j < len && msg[j] >= '0' && msg[j] <= '9') j++;
        if (j + 1 < len && msg[j] == ':' && msg[j + 1] == ' ' && i > 0) {
            *where_len = j;
            return j + 2;
        }
    }
    return 0;
}

/* [-0, +0, m] t[k] = value at top (raw), popping the value. */
static inline void luahier_rawsetfield(lua_State *L, int t, const char *k) {
    t = lua_absindex(L, t);
    lua_pushstring(L, k);
    lua_insert(L, -2);
    lua_rawset(L, t);
}

/* [-1, +1, e] The message handler of every protected call into Lua.
 * A table error keeps its identity and gains `where` if it has none. Any other value
 * becomes { type = "LuaError", message, where, traceback }, with the "chunk:line: "
 * prefix Lua put on the message moved into `where`. */
static inline int luahier_msgh(lua_State *L) {
    int t = lua_type(L, 1);
    lua_settop(L, 1);
    if (t == LUA_TTABLE) {
        lua_pushstring(L, "where");
        if (lua_rawget(L, 1) == LUA_TNIL && luahier_pushwhere(L, 1)) luahier_rawsetfield(L, 1, "where");
        lua_settop(L, 1);
        return 1;
    }
    size_t len = 0;
    const char *msg;
    if (t == LUA_TSTRING || t == LUA_TNUMBER) {
        msg = lua_tolstring(L, 1, &len);
    } else if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
        msg = lua_tolstring(L, -1, &len);
    } else {
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        len = strlen(msg);
    }
    lua_createtable(L, 0, 4);
    int table = lua_gettop(L);
    lua_pushstring(L, "LuaError");
    luahier_rawsetfield(L, table, "type");
    size_t where_len = 0;
    size_t skip = luahier_locationprefix(msg, len, &where_len);
    if (skip > 0) {
        lua_pushlstring(L, msg, where_len);
        luahier_rawsetfield(L, table, "where");
    } else if (luahier_pushwhere(L, 1)) {
        luahier_rawsetfield(L, table, "where");
    }
    lua_pushlstring(L, msg + skip, len - skip);
    luahier_rawsetfield(L, table, "message");
    luaL_traceback(L, L, NULL, 1);
    luahier_rawsetfield(L, table, "traceback");
    return 1;
}

#endif
