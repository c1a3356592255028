/* Errors: the message handler of every protected call the host makes, `where`, tracebacks
 * without the host's frames, and `__tostring` messages. */
#include "luahier_errors.h"
#include "luahier_guard.h"

#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

/* ---- Frames (limits.c reads them too) ------------------------------------------------- */

int luahier_ishostcode(const lua_Debug *ar) {
    if (ar->source == NULL) return 0;
    /* Host chunks are loaded stripped (luahier_loadhostchunk), which names their source "=?"; the
     * sandbox loads text only, so no script's function is stripped. */
    return strncmp(ar->source, "=[luahier", 9) == 0 || (strcmp(ar->source, "=?") == 0 && *ar->what != 'C');
}

int luahier_findluaframe(lua_State *L, int level, lua_Debug *ar) {
    for (; lua_getstack(L, level, ar); level++) {
        if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0 && !luahier_ishostcode(ar)) return 1;
    }
    return 0;
}

int luahier_frameruns(lua_State *L, lua_Debug *ar, int ref) {
    if (ref <= 0 || !lua_checkstack(L, 2)) return 0;
    lua_getinfo(L, "f", ar);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    int runs = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return runs;
}

/* ---- Locations and the message handler ------------------------------------------------ */

int luahier_pushwhere(lua_State *L, int level) {
    lua_Debug ar;
    if (!luahier_findluaframe(L, level, &ar)) return 0;
    lua_pushfstring(L, "%s:%d", ar.short_src, ar.currentline);
    return 1;
}

size_t luahier_locationprefix(const char *msg, size_t len, size_t *where_len) {
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
static void luahier_rawsetfield(lua_State *L, int t, const char *k) {
    t = lua_absindex(L, t);
    lua_pushstring(L, k);
    lua_insert(L, -2);
    lua_rawset(L, t);
}

/* [-0, +0, -] Whether the function running at `ar`'s level is the dispatch engine's walk, a
 * frame of the host's own that tracebacks leave out. */
static int luahier_isrunframe(lua_State *L, lua_Debug *ar) {
    luahier_Guard *g = luahier_guard(L);
    return luahier_frameruns(L, ar, g->walk_ref) || luahier_frameruns(L, ar, g->traced_walk_ref);
}

void luahier_pushtraceback(lua_State *L, int level) {
    lua_Debug ar;
    /* The first level past the stack, found by doubling then halving: lua_getstack walks
     * from the top, so walking every level of a deep stack would take its square. */
    int low = level, high = level + 1;
    while (lua_getstack(L, high, &ar)) { low = high; high *= 2; }
    while (low < high) {
        int middle = low + (high - low) / 2;
        if (lua_getstack(L, middle, &ar)) low = middle + 1; else high = middle;
    }
    int last = low;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "stack traceback:");
    int shown = 0;
    for (int at = level; at < last; at++) {
        if (!lua_getstack(L, at, &ar) || luahier_isrunframe(L, &ar)) continue;
        /* The host's own Lua code (sandbox wrappers, the hier proxy) is not shown, nor the C
         * functions it calls; a wrapper the script called shows as the C function it stands
         * for, as in stock Lua: "[C]: in field 'move'". */
        lua_Debug caller;
        lua_getinfo(L, "S", &ar);
        int caller_is_host = lua_getstack(L, at + 1, &caller) && lua_getinfo(L, "S", &caller)
            && luahier_ishostcode(&caller);
        int host = luahier_ishostcode(&ar);
        if ((host || *ar.what == 'C') && caller_is_host) continue;
        if (shown == 10 && last - at > 11) {
            lua_pushfstring(L, "\n\t...\t(skipping %d levels)", last - at - 11);
            luaL_addvalue(&b);
            at = last - 11 - 1;
            shown++;
            continue;
        }
        shown++;
        /* A function's name comes from its caller's code; the plan walk is stripped and
         * would name every responder "field '?'". */
        int called_by_walk = lua_getstack(L, at + 1, &caller) && luahier_isrunframe(L, &caller);
        lua_getinfo(L, "Slnt", &ar);
        /* A chunk's name is the script's text (load's second argument): a newline in it
         * must not start a line of its own on the terminal. */
        for (char *c = ar.short_src; *c; c++) if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
        if (host) lua_pushliteral(L, "\n\t[C]: in ");
        else if (ar.currentline <= 0) lua_pushfstring(L, "\n\t%s: in ", ar.short_src);
        else lua_pushfstring(L, "\n\t%s:%d: in ", ar.short_src, ar.currentline);
        luaL_addvalue(&b);
        if (*ar.namewhat != '\0' && !called_by_walk) {
            /* A field's name can be any string a script made: its control characters too. */
            luaL_addstring(&b, ar.namewhat);
            luaL_addstring(&b, " '");
            for (const char *c = ar.name; *c; c++) luaL_addchar(&b, ((unsigned char)*c < 0x20 || *c == 0x7f) ? '?' : *c);
            luaL_addchar(&b, '\'');
        } else {
            if (host) lua_pushliteral(L, "?");
            else if (*ar.what == 'm') lua_pushliteral(L, "main chunk");
            else if (*ar.what != 'C') lua_pushfstring(L, "function <%s:%d>", ar.short_src, ar.linedefined);
            else lua_pushliteral(L, "?");
            luaL_addvalue(&b);
        }
        if (ar.istailcall) luaL_addstring(&b, "\n\t(...tail calls...)");
    }
    luaL_pushresult(&b);
}

/* [-1, +1, e] `__tostring` of the table at `index`, called protected (under the running
 * budget, like any of the script's code); 0 when it has none, fails or returns no string. */
static int luahier_pushtostring(lua_State *L, int index) {
    index = lua_absindex(L, index);
    if (luaL_getmetafield(L, index, "__tostring") == LUA_TNIL) return 0;
    lua_pushvalue(L, index);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return 1;
    lua_pop(L, 1);
    return 0;
}

#define LUAHIER_FROZEN_KEY "luahier.frozen"

int luahier_setfrozen(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, LUAHIER_FROZEN_KEY);
    return 0;
}

int luahier_isfrozen(lua_State *L, int index) {
    index = lua_absindex(L, index);
    if (lua_getfield(L, LUA_REGISTRYINDEX, LUAHIER_FROZEN_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushvalue(L, index);
    int frozen = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return frozen;
}

/* [-0, +0, e] Gives the table at index 1 its `__tostring` as `message` when it has no
 * message, so it reads as what it says it is. The caller has made sure it is not one of the
 * sandbox's read-only tables. */
static void luahier_settostringmessage(lua_State *L) {
    lua_pushstring(L, "message");
    if (lua_rawget(L, 1) == LUA_TNIL && luahier_pushtostring(L, 1)) luahier_rawsetfield(L, 1, "message");
    lua_settop(L, 1);
}

/* lua_CFunction (t): luahier_settostringmessage, unless `t` is read-only. */
static int luahier_tostringmessage(lua_State *L) {
    lua_settop(L, 1);
    if (!luahier_isfrozen(L, 1)) luahier_settostringmessage(L);
    return 0;
}

void luahier_givetostringmessage(lua_State *L, int index) {
    if (lua_type(L, index) != LUA_TTABLE || !lua_checkstack(L, 2)) return;
    index = lua_absindex(L, index);
    lua_pushcfunction(L, luahier_tostringmessage);
    lua_pushvalue(L, index);
    /* The script's __tostring runs as the script's code: under the memory cap, which the
     * allocator does not apply while the host runs (in_host). */
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host, caller_refused = g->memory_refused;
    g->in_host = 0;
    g->memory_refused = 0;
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
    g->in_host = caller_in_host;
    g->memory_refused = caller_refused;
}

int luahier_msgh(lua_State *L) {
    int t = lua_type(L, 1);
    lua_settop(L, 1);
    if (t == LUA_TTABLE) {
        if (luahier_isfrozen(L, 1)) return 1;
        lua_pushstring(L, "where");
        if (lua_rawget(L, 1) == LUA_TNIL && luahier_pushwhere(L, 1)) luahier_rawsetfield(L, 1, "where");
        lua_settop(L, 1);
        luahier_settostringmessage(L);
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
    luahier_pushtraceback(L, 1);
    luahier_rawsetfield(L, table, "traceback");
    return 1;
}

void luahier_noteraised(lua_State *L, const char *type, size_t length) {
    static const struct { const char *type; unsigned bit; } made[] = {
        {"LuaError", LUAHIER_FAILED_LUA}, {"ResponderContractError", LUAHIER_FAILED_CONTRACT},
        {"DispatchDepthExceeded", LUAHIER_FAILED_DEPTH}, {"HostError", LUAHIER_FAILED_HOST},
        {"PayloadError", LUAHIER_FAILED_PAYLOAD}, {"MemoryError", LUAHIER_FAILED_NOMEMORY},
    };
    if (type == NULL) return;
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        if (strlen(made[i].type) == length && memcmp(type, made[i].type, length) == 0) {
            luahier_guard(L)->failures |= made[i].bit;
            return;
        }
    }
}
