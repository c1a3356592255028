/*
 * LuaHierarchy's host in C: the parts of the Lua bridge that must be C, and the C the host
 * runs for speed. Swift imports this module (CLuaHost) from the Lua bridge only.
 *
 * - Host functions (host.c): every Swift function callable from Lua is entered through the
 *   trampoline, so a Lua error is raised only after the Swift frame has returned (a longjmp
 *   must never cross a Swift frame); host objects' finalizer; the nodes' `__index`.
 * - Limits (luahier_limits.h, limits.c): the allocator, budgets, the hook.
 * - The sandbox's C functions (sandbox.c, pattern.c).
 * - Errors (errors.c): the message handler of every protected call, `where`, tracebacks.
 * - The dispatch engine: the walk every dispatch runs and its driver (luahier_engine.h,
 *   walk.c, engine.c).
 * - The watchdog and interrupts (luahier_watchdog.h, watchdog.c).
 * - JSON: Lua values written as JSON (luahier_jsonwrite.h, jsonwrite.c), JSON read into Lua
 *   values and `luahier dispatch`'s lines answered in C (luahier_lines.h, lines.c).
 *
 * Stack notes `[-o, +p, x]` follow the Lua manual: pops, pushes, and whether it can raise
 * (`-` never, `m` only on memory errors, `e` any error).
 */
#ifndef LUAHIER_HOST_H
#define LUAHIER_HOST_H

#include <lua.h>
#include <lauxlib.h>
#include <stddef.h>

/* ---- Host functions (host.c) ---------------------------------------------------------- */

/* A Swift function exposed to Lua. It returns the number of results it pushed, or -1
 * after pushing an error value: the trampoline raises it once Swift has returned. */
typedef int (*luahier_HostFunction)(lua_State *L);

/* [-?, +?, e]  upvalue 1: the Swift entry as a light userdata; further upvalues are the
 * entry's own. A string error gets the caller's `chunk:line: ` prefix, as luaL_error does. */
int luahier_trampoline(lua_State *L);

/* [-?, +?, e] The end of a host call: its `results`, or the error it left raised. */
int luahier_endhostcall(lua_State *L, int results);

/* [-nup, +1, -] `function` (the trampoline, or a C function that ends in it) as a closure
 * over `entry` and the `nup` upvalues already pushed. */
void luahier_pushhostclosure(lua_State *L, luahier_HostFunction entry, lua_CFunction function, int nup);

/* [-nup, +1, -] The trampoline as a closure over `entry` and `nup` upvalues already pushed. */
void luahier_pushhostfunction(lua_State *L, luahier_HostFunction entry, int nup);

/* lua_CFunction: the `__gc` of every host userdata (nodes, handles, plans, trace records),
 * whose block holds a retained Swift object. Forgets the object (a resurrected userdata then
 * reads as finalized) and queues its release for the host; runs no Swift and no Lua, so a
 * collection or lua_close never re-enters the host. Without room to queue it, the object
 * leaks rather than being released inside a collection. */
int luahier_finalize(lua_State *L);

/* [-0, +1, e] `__index` of node userdata: a method (upvalue 1, a table), else a getter
 * (upvalue 2: key -> function(node)) called with the node, else nil. In C because every
 * method call on a node looks up here: a Lua `__index` function cost a Lua call from C each
 * time (about 40 ns of a 300 ns dispatch). `path` (upvalue 3) is kept in the node's user
 * values (1: the string, 2: the chain-change count it was read at; upvalue 4 points at the
 * tree's count): rules read it per dispatch, and a host call cost more than the rest of a hop. */
int luahier_nodeindex(lua_State *L);

/* lua_CFunction (methods, getters, "path", the tree's chain-change count as a light userdata)
 * -> the `__index` function of nodes. */
int luahier_makenodeindex(lua_State *L);

/* [-1, +1, m] Replaces the function on top with a copy without debug information: Lua then
 * knows no line in it, so no message, `where` or traceback can name a line of the host's
 * own code (luaL_where writes nothing for it). Returns LUA_OK, or an error status with the
 * error pushed in place of the function. */
int luahier_strip(lua_State *L, const char *name);

/* ---- The sandbox's C functions (sandbox.c, pattern.c) --------------------------------- */

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

/* lua_CFunction () -> {find, match, gmatch, gsub}: the step-counting pattern functions
 * (pattern.c), which replace string.find, match, gmatch and gsub in the sandbox. */
int luahier_pushpatternlib(lua_State *L);

/* ---- Errors (errors.c) ----------------------------------------------------------------- */

/* [-0, +(0|1), m] Pushes "chunk:line" of the innermost Lua function at `level` or above;
 * returns 0 and pushes nothing when no Lua frame has a line. */
int luahier_pushwhere(lua_State *L, int level);

/* [-0, +0, -] Length of a leading "chunk:line: " in `msg` (its first line only), or 0.
 * `*where_len` gets the length of "chunk:line". */
size_t luahier_locationprefix(const char *msg, size_t len, size_t *where_len);

/* [-0, +1, m] "stack traceback:" and a line per frame from `level` on, as luaL_traceback
 * writes it (the first 10 and the last 11 frames of a deep stack), without the host's
 * responder-run frames. */
void luahier_pushtraceback(lua_State *L, int level);

/* lua_CFunction (set): keeps the sandbox's set of read-only tables (weak keys) where the
 * message handler finds it. */
int luahier_setfrozen(lua_State *L);

/* [-0, +0, m] Whether the value at `index` is one of the sandbox's read-only tables. */
int luahier_isfrozen(lua_State *L, int index);

/* [-0, +0, -] luahier_tostringmessage for the error at `index` if it is a table, all of it
 * inside a protected call (reading a field can allocate, and so raise): callable from the
 * host's Swift code. Pushing a light C function and a copy allocate nothing. */
void luahier_givetostringmessage(lua_State *L, int index);

/* [-1, +1, e] The message handler of every protected call into Lua.
 * A table error keeps its identity and gains `where` if it has none, and `message` from its
 * `__tostring` if it has no message (so it reads as what it says it is). The sandbox's
 * read-only views (the standard library's tables, hier) are left as they are.
 * Any other value becomes { type = "LuaError", message, where, traceback }, with the
 * "chunk:line: " prefix Lua put on the message moved into `where` (host chunks are stripped,
 * so no prefix names a line of the host's own code). */
int luahier_msgh(lua_State *L);

#include "luahier_jsonwrite.h"
#include "luahier_limits.h"
#include "luahier_engine.h"
#include "luahier_lines.h"
#include "luahier_watchdog.h"

/* ---- Signals for a service (service_signals.c) ----------------------------------------- */

/* SIGHUP sets a flag luahier_service_takehangup reads and clears (a reload request); the
 * calling thread unblocks it. 0, or -1 on failure. */
int luahier_service_handlehangup(void);
/* SIGTERM and SIGINT set the stop flag (a graceful shutdown, no script is stopped); a second
 * one ends the process the default way. The calling thread unblocks them. */
int luahier_service_handlestops(void);
/* 1 if SIGHUP came since the last call (and clears it), else 0. */
int luahier_service_takehangup(void);
/* The first SIGTERM or SIGINT since luahier_service_handlestops, 0 while none came. */
int luahier_service_stopsignal(void);

#endif
