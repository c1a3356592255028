/* Host functions: the trampoline every Swift function callable from Lua is entered through,
 * the finalizer of host objects, the nodes' `__index`, stripping host chunks. */
#include "luahier_host.h"
#include "luahier_guard.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

/* ---- The trampoline ------------------------------------------------------------------ */

/* A Swift function exposed to Lua. It returns the number of results it pushed, or -1
 * after pushing an error value: the trampoline raises it once Swift has returned. */
typedef int (*luahier_HostFunction)(lua_State *L);

int luahier_trampoline(lua_State *L) {
    luahier_HostFunction entry = (luahier_HostFunction)lua_touserdata(L, lua_upvalueindex(1));
    return luahier_endhostcall(L, entry(L));
}

int luahier_endhostcall(lua_State *L, int results) {
    if (results >= 0) return results;
    if (lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

void luahier_pushhostclosure(lua_State *L, luahier_HostFunction entry, lua_CFunction function, int nup) {
    lua_pushlightuserdata(L, (void *)entry);
    lua_insert(L, -(nup + 1));
    lua_pushcclosure(L, function, nup + 1);
}

void luahier_pushhostfunction(lua_State *L, luahier_HostFunction entry, int nup) {
    luahier_pushhostclosure(L, entry, luahier_trampoline, nup);
}

/* ---- Engine closures ---------------------------------------------------------------- */

/* The walk calls a Swift closure responder often (once per hop): this entry calls Swift through
 * a plain C function pointer with the object it is bound to, and pushes the verdict words
 * itself, so Swift neither looks up a registered function nor pushes a string. The walk calls
 * it with the value alone, so its stack needs no trimming. */
int luahier_closureentry(lua_State *L) {
    const luahier_ClosureBinding *binding = (const luahier_ClosureBinding *)lua_touserdata(L, lua_upvalueindex(1));
    switch (binding->entry(binding, L)) {
    case LUAHIER_ANSWER_NOTHANDLED: lua_pushvalue(L, lua_upvalueindex(2)); return 1;
    case LUAHIER_ANSWER_HANDLED: lua_pushvalue(L, lua_upvalueindex(3)); return 1;
    case LUAHIER_ANSWER_SKIP: lua_pushvalue(L, lua_upvalueindex(4)); return 1;
    case LUAHIER_ANSWER_PUSHED: return 1;
    default: return luahier_endhostcall(L, -1);
    }
}

void luahier_pushclosureentry(lua_State *L, const luahier_ClosureBinding *binding) {
    luahier_ClosureBinding *bound = (luahier_ClosureBinding *)lua_newuserdatauv(L, sizeof *bound, 0);
    *bound = *binding;
    /* [plan, notHandled, handled, skip, binding] -> [binding, notHandled, handled, skip, plan] */
    lua_rotate(L, -5, 1);
    lua_rotate(L, -4, -1);
    lua_pushcclosure(L, luahier_closureentry, 5);
}

/* ---- Host objects ------------------------------------------------------------------ */

int luahier_finalize(lua_State *L) {
    void **block = (void **)lua_touserdata(L, 1);
    if (block == NULL || *block == NULL) return 0;
    luahier_Guard *g = luahier_guard(L);
    if (g->released_count == g->released_capacity) {
        size_t capacity = g->released_capacity ? g->released_capacity * 2 : 64;
        void **grown = (void **)realloc(g->released, capacity * sizeof *grown);
        if (grown == NULL) return 0;
        g->released = grown;
        g->released_capacity = capacity;
    }
    g->released[g->released_count++] = *block;
    *block = NULL;
    return 0;
}

/* ---- Node fields --------------------------------------------------------------------- */

int luahier_nodeindex(lua_State *L) {
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    /* `node.path`: the string its getter made last, kept in the node's first user value while the
     * tree's chains stand still (a move or a removal, all that changes a path, changes them). */
    const long *changes = (const long *)lua_touserdata(L, lua_upvalueindex(4));
    int path = changes && lua_rawequal(L, 2, lua_upvalueindex(3));
    if (path && lua_getiuservalue(L, 1, 2) == LUA_TNUMBER && lua_tointegerx(L, -1, NULL) == (lua_Integer)*changes) {
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNIL) return 1;
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    if (path && lua_type(L, -1) == LUA_TSTRING) {
        lua_pushvalue(L, -1);
        if (lua_setiuservalue(L, 1, 1)) {
            lua_pushinteger(L, (lua_Integer)*changes);
            lua_setiuservalue(L, 1, 2);
        }
    }
    return 1;
}

int luahier_makenodeindex(lua_State *L) {
    lua_settop(L, 4);
    lua_pushcclosure(L, luahier_nodeindex, 4);
    return 1;
}

/* lua_Writer: appends to a growing malloc'd buffer. */
typedef struct luahier_Dump { char *bytes; size_t size, capacity; } luahier_Dump;
static int luahier_dumpwriter(lua_State *L, const void *p, size_t size, void *ud) {
    (void)L;
    luahier_Dump *d = (luahier_Dump *)ud;
    if (d->size + size > d->capacity) {
        size_t capacity = (d->size + size) * 2;
        char *bytes = (char *)realloc(d->bytes, capacity);
        if (bytes == NULL) return 1;
        d->bytes = bytes;
        d->capacity = capacity;
    }
    memcpy(d->bytes + d->size, p, size);
    d->size += size;
    return 0;
}

/* [-1, +1, m] Replaces the function on top with a copy without debug information: Lua then
 * knows no line in it, so no message, `where` or traceback can name a line of the host's
 * own code (luaL_where writes nothing for it). Returns LUA_OK, or an error status with the
 * error pushed in place of the function. */
static int luahier_strip(lua_State *L, const char *name) {
    luahier_Dump dump = { NULL, 0, 0 };
    int failed = lua_dump(L, luahier_dumpwriter, &dump, 1);
    lua_pop(L, 1);
    int status = failed ? LUA_ERRMEM : luaL_loadbufferx(L, dump.bytes, dump.size, name, "b");
    if (failed) lua_pushliteral(L, "not enough memory to strip a host chunk");
    free(dump.bytes);
    return status;
}

const char *luahier_luaident(void) {
    return lua_ident;
}

int luahier_loaddump(lua_State *L, const unsigned char *bytecode, size_t size, const char *name) {
    if (size == 0) return 0;
    if (luaL_loadbufferx(L, (const char *)bytecode, size, name, "b") == LUA_OK) return 1;
    lua_pop(L, 1);
    return 0;
}

int luahier_loadhostchunk(lua_State *L, const char *source, size_t length, const unsigned char *bytecode,
                          size_t size, const char *name) {
    if (luahier_loaddump(L, bytecode, size, name)) return LUA_OK;
    int status = luaL_loadbufferx(L, source, length, name, "t");
    return status == LUA_OK ? luahier_strip(L, name) : status;
}
