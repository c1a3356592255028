/* The sandbox's C functions (sandbox.c): guarded handlers and coroutines, the table and string
 * functions that charge their work, the libraries it starts from, `require`'s reader.
 * Uses limits (luahier_limits.h). Stack notes `[-o, +p, x]` follow the Lua manual: pops,
 * pushes, and whether it can raise (`-` never, `m` only on memory errors, `e` any error). */
#ifndef LUAHIER_SANDBOX_H
#define LUAHIER_SANDBOX_H

#include <lua.h>

/* lua_CFunction (handler) -> the handler, guarded. */
int luahier_guardhandler(lua_State *L);

/* lua_CFunction coroutine.resume(co, ...) for the sandbox: Lua's, plus the guard's note of the
 * running thread, so a trip found outside the hook (memory, host work) hooks the thread that
 * runs. lua_resume itself refuses a dead, running or normal coroutine. */
int luahier_resume(lua_State *L);

/* lua_CFunction (close) -> coroutine.close for the sandbox: `close` (Lua's), with the running
 * thread noted while it runs the coroutine's __close handlers, as luahier_resume does. */
int luahier_trackclose(lua_State *L);

/* lua_CFunction table.sort(t [, comp]) for the sandbox: a heap sort (O(n log n) comparisons
 * whatever the input, no recursion) that charges its work and checks the deadline as it goes.
 * Lua's own sorts inside one C call that neither the hook nor the deadline interrupts when the
 * elements compare without Lua code (8e6 numbers: 4.5 s past a 1 s limit). Like Lua's, it is
 * not stable, and reads and writes through metamethods. */
int luahier_sort(lua_State *L);

/* lua_CFunctions table.insert, remove, move, concat and unpack for the sandbox (and, under
 * their own names, for the full libraries' table module the sandbox picks from): Lua 5.4's
 * results and errors, each element's step charged and the deadline checked as they go. Lua's
 * own loop in one C call that no hook reaches: `__len` returning 2^40 made one insert run for
 * hours; an `__index` chain of tables makes each step up to 2,000 lookups. table.move refuses
 * more than 2^24 elements at once. */
int luahier_tinsert(lua_State *L);
int luahier_tremove(lua_State *L);
int luahier_tmove(lua_State *L);
int luahier_tconcat(lua_State *L);
int luahier_tunpack(lua_State *L);

/* lua_CFunction string.rep(s, n [, sep]) for the sandbox: Lua's result and errors, made by
 * copying the filled part onto the rest, doubling, with the work charged and the budget
 * checked between copies. Lua's copies s once per repetition in one C call: 250 million
 * one-byte copies took a second that neither a limit nor a signal could cut short. Here
 * the longest copy is half the result (a memcpy, ~30 ms for 125 MB). */
int luahier_rep(lua_State *L);

/* lua_CFunction (path) for the sandbox's `require`: the file's text as luaL_loadfilex would
 * read it (a BOM and a '#' first line skipped), or nil and "cannot open PATH: reason". The
 * sandbox loads the text itself, so a pool can hand every state of a revision the same text. */
int luahier_readsource(lua_State *L);

/* lua_CFunction (table): makes it the globals of the state (the registry's LUA_RIDX_GLOBALS),
 * so `load` and everything else that reaches for "the globals" gets the sandbox's. */
int luahier_setglobals(lua_State *L);

/* lua_CFunction (metatable): makes it the metatable of strings. */
int luahier_setstringmetatable(lua_State *L);

/* lua_CFunction (): the string metatable as Lua made it (its arithmetic metamethods). */
int luahier_getstringmetatable(lua_State *L);

/* lua_CFunction: opens the libraries the sandbox starts from (it trims them after). */
int luahier_opensandboxlibs(lua_State *L);

/* lua_CFunction: opens every standard library, for trusted scripts. */
int luahier_openalllibs(lua_State *L);

/* lua_CFunction (s, p [, init]) -> start, end | nil: string.find(s, p, init, true) in linear
 * time (glibc's memmem), where Lua 5.4.4's own plain search is quadratic in the worst case. */
int luahier_plainfind(lua_State *L);

#endif
