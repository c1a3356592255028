/*
 * Lua's API macros that Swift cannot import (function-like macros and `LUA_REGISTRYINDEX`),
 * re-exported as `static inline` functions with the same meaning. Nothing else belongs here:
 * the host's C is the CLuaHost target (Sources/CLuaHost), whose `.c` files SwiftPM rebuilds
 * when they change.
 *
 * Stack notes `[-o, +p, x]` follow the Lua manual: pops, pushes, and whether it can raise
 * (`-` never, `m` only on memory errors, `e` any error).
 */
#ifndef LUAHIER_SHIM_H
#define LUAHIER_SHIM_H

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

/* ---- Constants ---------------------------------------------------------------------- */

static const int luahier_REGISTRYINDEX = LUA_REGISTRYINDEX;

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
/* [-0, +0, -] A full collection (finalizers run protected; their errors become warnings). */
static inline void luahier_fullgc(lua_State *L) { lua_gc(L, LUA_GCCOLLECT); }

#endif
