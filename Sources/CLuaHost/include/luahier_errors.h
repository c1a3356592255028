/* Errors (errors.c): the message handler of every protected call, `where`, tracebacks without
 * the host's frames, and the frame helpers they stand on (which frames are the host's own,
 * the innermost script frame), which limits.c uses too. Uses the guard (luahier_guard.h: the
 * walks that tracebacks leave out). Stack notes `[-o, +p, x]` follow the Lua manual: pops,
 * pushes, and whether it can raise (`-` never, `m` only on memory errors, `e` any error). */
#ifndef LUAHIER_ERRORS_H
#define LUAHIER_ERRORS_H

#include <lua.h>
#include <stddef.h>

/* ---- Frames ----------------------------------------------------------------------------- */

/* [-0, +0, -] Whether `ar` (with "S" filled) is a frame of the host's own Lua code (its
 * chunks are named "=[luahier ...]"): the sandbox's wrappers, `print`, the hier proxy. A
 * `where` never names one: it names the script's line that called it. */
int luahier_ishostcode(const lua_Debug *ar);

/* [-0, +0, -] Fills `ar` with the innermost Lua frame at `level` or above that has a line
 * and is not host code;
 * returns 0 when there is none. Reads only: safe from inside the allocator. */
int luahier_findluaframe(lua_State *L, int level, lua_Debug *ar);

/* [-0, +0, -] Whether the function running at `ar`'s level is the one at registry reference
 * `ref` (0: none). */
int luahier_frameruns(lua_State *L, lua_Debug *ar, int ref);

/* ---- Locations, tracebacks, the message handler ----------------------------------------- */

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

/* [-0, +0, -] Notes in the state's guard (luahier_Guard.failures) an error of type `type`
 * that a responder or a subscriber raised, when it is one the host makes of rules failing (a
 * LuaError, a ResponderContractError, ...); any other type, a rule's own, is no failure. A
 * limit's error is noted where it is made (limits.c), never by its name. The one list of
 * those types. */
void luahier_noteraised(lua_State *L, const char *type, size_t length);

#endif
