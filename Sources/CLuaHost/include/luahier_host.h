/* Host functions (host.c): every Swift function callable from Lua is entered through the
 * trampoline, so a Lua error is raised only after the Swift frame has returned (a longjmp must
 * never cross a Swift frame); host objects' finalizer; the nodes' `__index`; stripped chunks.
 * Uses the guard (luahier_guard.h). Stack notes `[-o, +p, x]` follow the Lua manual: pops,
 * pushes, and whether it can raise (`-` never, `m` only on memory errors, `e` any error). */
#ifndef LUAHIER_HOST_H
#define LUAHIER_HOST_H

#include <lua.h>

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

/* What a Swift closure's entry answers (luahier_ClosureEntry). */
enum {
    LUAHIER_ANSWER_RAISED = -1,    /* an error value pushed, which the entry raises */
    LUAHIER_ANSWER_NOTHANDLED = 0,
    LUAHIER_ANSWER_HANDLED = 1,
    LUAHIER_ANSWER_SKIP = 2,       /* not offered after all: the skip mark (luahier_pushskipmark) */
    LUAHIER_ANSWER_PUSHED = 3      /* a replacement value pushed */
};

struct luahier_ClosureBinding;

/* The Swift side of a closure responder's call, with what its entry is bound to and the value
 * at index 1 (the only argument). Runs as a host function does (host mode, no Lua error). */
typedef int (*luahier_ClosureEntry)(const struct luahier_ClosureBinding *binding, lua_State *L);

/* What a closure responder's entry is bound to (its first upvalue, a userdata): Swift objects,
 * unretained (the plan holds them). */
typedef struct luahier_ClosureBinding {
    luahier_ClosureEntry entry;
    void *engine;
    void *responder;
    void *body;
} luahier_ClosureBinding;

/* [-?, +?, e] A closure responder as the walk calls it, with the value alone: upvalue 1 its
 * binding, 2-4 what it pushes for notHandled, handled and skip, 5 the plan. */
int luahier_closureentry(lua_State *L);

/* [-4, +1, m] luahier_closureentry as a closure bound as `binding` says (copied), over the four
 * values on top of the stack: the plan, the words "notHandled" and "handled", the skip mark. */
void luahier_pushclosureentry(lua_State *L, const luahier_ClosureBinding *binding);

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

/* The linked Lua's `lua_ident`, which names its release ("$LuaVersion: Lua 5.4.4 ..."). */
const char *luahier_luaident(void);

/* [-0, +(0|1), -] Pushes the function of `bytecode` (`size` bytes, a host chunk's stripped dump
 * that embed-lua made at build time, or none) and returns 1; or pushes nothing and returns 0
 * when there is none or this Lua refuses it. */
int luahier_loaddump(lua_State *L, const unsigned char *bytecode, size_t size, const char *name);

/* [-0, +1, m] Pushes a host chunk named `name`: its dump (luahier_loaddump) when this Lua loads
 * it, else `source` (`length` bytes) compiled here and stripped (no line of the host's own code
 * can then be named by a message, `where` or traceback: luaL_where writes nothing for it). A Lua whose dump format differs from the build's
 * refuses the bytes (lua_load checks the version, the format and the sizes of its numbers) and
 * the chunk costs its compilation, as before. Returns LUA_OK, or an error status with the
 * error pushed instead. */
int luahier_loadhostchunk(lua_State *L, const char *source, size_t length, const unsigned char *bytecode,
                          size_t size, const char *name);

#endif
