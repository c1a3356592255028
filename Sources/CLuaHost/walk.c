/* The walk: the one loop every dispatch runs (luahier_walk.h; its text Lua/walk.lua, its layout
 * luahier_enginetypes.h), and the value rules it calls in C (contract §3: what a value of a
 * domain is; contract §4: `where` and `cause`, contract errors). */
#include "luahier_walk.h"
#include "walk_internal.h"
#include "luahier_errors.h"
#include "luahier_host.h"
#include "luahier_limits.h"
#include "luahier_tags.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

/* The walk, in Lua so that each responder is a Lua-to-Lua call: a nested dispatch then costs
 * Lua one C-stack level (the driver's pcall), which is what lets nesting reach 180 before Lua's
 * C stack (200 levels) ends. It is loaded once, stripped of debug information, so no message,
 * `where` or traceback names a line of it (luahier_ishostcode).
 *
 * Called protected by the driver as
 *     walk(plan, state, value, type, is_error [, slot, raised])
 * it offers the value to the entries of its domain from the first (or from `slot`), and
 * applies what each answers: contract §4's table. `raised`, when given, is an error the entry at
 * `slot` raised: it replaces the value there, and the walk goes on after it. It returns how
 * the dispatch ended (LUAHIER_STATUS_*), the slot it ended at, an alert's choice, and the trace
 * record (the traced walk only: it makes the record, and keeps it in state[RECORD] while it is
 * under way).
 *
 * Every value the walk goes on with in place of the one it was given is written to `state`
 * first (state[VALUE] stays false while it has none): that is how the driver learns the final
 * value, and where things stood when a responder raised an error, which leaves the walk through
 * the driver's pcall with the entry it was calling in state[REACHED] and comes back as
 * `raised`.
 *
 * A run of plain receives (LUAHIER_ENTRY_RUN) is called in a loop of its own, with nothing
 * per responder but the call and one comparison: a value they all pass by costs about what
 * calling the same functions in a plain Lua loop does. Traced by path, the loop records
 * nothing per responder either: the receives that passed the value by are one step of the
 * record, written once. (Full tracing copies the value before each call, and calls them one at
 * a time.) */

/* The walk's text is Lua/walk.lua, handed over by the host (embedded at build time, as
 * LuaSources.walk). Each constant it names is filled in from these enums before it loads, so
 * the numbers live here alone. */
static const struct { const char *name; int value; } luahier_walk_constants[] = {
    {"LUAHIER_ENTRY_STRIDE", LUAHIER_ENTRY_STRIDE}, {"LUAHIER_ENTRY_FILTER", LUAHIER_ENTRY_FILTER},
    {"LUAHIER_ENTRY_CLASS", LUAHIER_ENTRY_CLASS}, {"LUAHIER_ENTRY_CROSS", LUAHIER_ENTRY_CROSS},
    {"LUAHIER_ENTRY_RUN", LUAHIER_ENTRY_RUN},
    {"LUAHIER_PLAN_EVENTS", LUAHIER_PLAN_EVENTS}, {"LUAHIER_PLAN_ERRORS", LUAHIER_PLAN_ERRORS},
    {"LUAHIER_PLAN_LAST", LUAHIER_PLAN_LAST}, {"LUAHIER_PLAN_TRACE", LUAHIER_PLAN_TRACE},
    {"LUAHIER_PLAN_END", LUAHIER_PLAN_END}, {"LUAHIER_PLAN_RECORDS", LUAHIER_PLAN_RECORDS},
    {"LUAHIER_CLASS_RECEIVE", LUAHIER_CLASS_RECEIVE}, {"LUAHIER_CLASS_HANDLE", LUAHIER_CLASS_HANDLE},
    {"LUAHIER_CLASS_CATCH", LUAHIER_CLASS_CATCH}, {"LUAHIER_CLASS_ALERT", LUAHIER_CLASS_ALERT},
    {"LUAHIER_CLASS_ARRIVE", LUAHIER_CLASS_ARRIVE},
    {"LUAHIER_STATE_REACHED", LUAHIER_STATE_REACHED}, {"LUAHIER_STATE_VALUE", LUAHIER_STATE_VALUE},
    {"LUAHIER_STATE_TYPE", LUAHIER_STATE_TYPE}, {"LUAHIER_STATE_ERROR", LUAHIER_STATE_ERROR},
    {"LUAHIER_STATE_BEFORE", LUAHIER_STATE_BEFORE}, {"LUAHIER_STATE_RECORD", LUAHIER_STATE_RECORD},
    {"LUAHIER_STATE_PASSED", LUAHIER_STATE_PASSED}, {"LUAHIER_STATE_PASSEDTO", LUAHIER_STATE_PASSEDTO},
    {"LUAHIER_STATUS_HANDLED", LUAHIER_STATUS_HANDLED}, {"LUAHIER_STEP_STRIDE", LUAHIER_STEP_STRIDE},
    {"LUAHIER_TRACE_STEPS", LUAHIER_TRACE_STEPS},
};

/* The lines that only the variant that records traces keeps start with this mark; the other
 * variant keeps them as the comments they are (so both have the same lines, and an untraced
 * dispatch does not pay a test per responder for a trace it does not record). */
static const char luahier_traced_mark[] = "--T|";

/* What the skipper answers: no responder can return it. */
static char luahier_skipmark;

/* lua_CFunction: a removed responder's stand-in (luahier_pushskipper). */
static int luahier_skipper(lua_State *L) {
    lua_pushlightuserdata(L, &luahier_skipmark);
    return 1;
}

void luahier_pushskipper(lua_State *L) {
    lua_pushcfunction(L, luahier_skipper);
}

void luahier_pushskipmark(lua_State *L) {
    lua_pushlightuserdata(L, &luahier_skipmark);
}

/* ---- Values of a domain (contract §3) ------------------------------------------------------ */

void luahier_pushword(lua_State *L, const luahier_Engine *e, int word) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->words_ref);
    lua_rawgeti(L, -1, word);
    lua_copy(L, -1, -2);
    lua_pop(L, 1);
}

int luahier_asvalue(lua_State *L, luahier_Engine *e, int index, int is_error) {
    return luahier_asvaluewith(L, e, index, is_error, NULL);
}

/* [-0, +1, m] Pushes the word "type" (`is_type`) or "Error": from `keys`, else the engine's words,
 * else as a literal (a caller with no engine: luahier_astable). */
static void luahier_pushruleword(lua_State *L, const luahier_Engine *e, const luahier_Keys *keys, int is_type) {
    if (is_type && keys) lua_pushvalue(L, keys->type);
    else if (e) luahier_pushword(L, e, is_type ? LUAHIER_WORD_TYPE : LUAHIER_WORD_ERRORTYPE);
    else if (is_type) lua_pushliteral(L, "type");
    else lua_pushliteral(L, "Error");
}

/* [-0, +1, m] The rule for a table (contract §3), the one place it is worded: luahier_asvalue
 * without a string's shorthand. */
static int luahier_tablerule(lua_State *L, luahier_TagSet *tags, int index, int is_error,
                             const luahier_Engine *e, const luahier_Keys *keys) {
    luahier_pushruleword(L, e, keys, 1);
    int kind = lua_rawget(L, index);
    int untyped = kind == LUA_TNIL && is_error;
    if (untyped) {
        lua_pop(L, 1);
        luahier_pushruleword(L, e, keys, 0);
    } else if (kind != LUA_TSTRING) {
        lua_pop(L, 1);
        if (kind == LUA_TNIL) lua_pushliteral(L, "a table without a string 'type'");
        else lua_pushfstring(L, "a table whose 'type' is a %s (it must be a string)", lua_typename(L, kind));
        return 0;
    }
    /* [type] A table that travelled as the other domain is refused. */
    int tag = luahier_tagof(L, tags, index);
    if (tag == (is_error ? LUAHIER_TAGGED_EVENT : LUAHIER_TAGGED_ERROR)) {
        const char *type = lua_tostring(L, -1);
        lua_pushfstring(L, "%s (%s)", is_error ? "an event" : "an error", type);
        lua_remove(L, -2);
        return 0;
    }
    if (tag == LUAHIER_UNTAGGED) luahier_tag(L, tags, index, is_error);
    /* An error without a type is an "Error" (the sandbox's read-only tables stay as they are). */
    if (untyped && !luahier_isfrozen(L, index)) {
        luahier_pushruleword(L, e, keys, 1);
        lua_pushvalue(L, -2);
        lua_rawset(L, index);
    }
    return 1;
}

int luahier_astable(lua_State *L, luahier_TagSet *tags, int index, int is_error) {
    return luahier_tablerule(L, tags, lua_absindex(L, index), is_error, NULL, NULL);
}

int luahier_asvaluewith(lua_State *L, luahier_Engine *e, int index, int is_error, const luahier_Keys *keys) {
    index = lua_absindex(L, index);
    switch (lua_type(L, index)) {
    case LUA_TSTRING:
        /* Shorthand: "Tap" is {type = "Tap"}; "boom" as an error is {type = "Error", message = "boom"}. */
        lua_createtable(L, 0, is_error ? 2 : 1);
        luahier_pushword(L, e, LUAHIER_WORD_TYPE);
        if (is_error) {
            luahier_pushword(L, e, LUAHIER_WORD_ERRORTYPE);
            lua_rawset(L, -3);
            luahier_pushword(L, e, LUAHIER_WORD_MESSAGE);
            lua_pushvalue(L, index);
            lua_rawset(L, -3);
            luahier_pushword(L, e, LUAHIER_WORD_ERRORTYPE);
        } else {
            lua_pushvalue(L, index);
            lua_rawset(L, -3);
            lua_pushvalue(L, index);
        }
        luahier_tag(L, e->tags, -2, is_error);
        lua_insert(L, -2);
        lua_replace(L, index);
        return 1;
    case LUA_TTABLE:
        return luahier_tablerule(L, e->tags, index, is_error, e, keys);
    case LUA_TNIL:
        lua_pushliteral(L, "nil");
        return 0;
    default:
        lua_pushfstring(L, "a %s", lua_typename(L, lua_type(L, index)));
        return 0;
    }
}

void luahier_setifabsent(lua_State *L, const luahier_Engine *e, int table, int word, int value) {
    table = lua_absindex(L, table);
    value = lua_absindex(L, value);
    luahier_pushword(L, e, word);
    if (lua_rawget(L, table) == LUA_TNIL) {
        luahier_pushword(L, e, word);
        lua_pushvalue(L, value);
        lua_rawset(L, table);
    }
    lua_pop(L, 1);
}

/* [-0, +0, e] Raises the ResponderContractError of the entry at `slot` of the plan at index 1,
 * which returned what `got` describes. */
static int luahier_contracterror(lua_State *L, const luahier_Engine *e, int slot, const char *got) {
    lua_createtable(L, 0, 4);
    int error = lua_gettop(L);
    luahier_pushword(L, e, LUAHIER_WORD_TYPE);
    lua_pushliteral(L, "ResponderContractError");
    lua_rawset(L, error);
    lua_rawgeti(L, 1, slot + LUAHIER_ENTRY_KIND);
    lua_rawgeti(L, 1, slot + LUAHIER_ENTRY_WHERE);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->expected_ref);
    lua_pushvalue(L, error + 1);
    lua_rawget(L, -2);
    lua_pushfstring(L, "%s responder at %s returned %s; expected %s", lua_tostring(L, error + 1),
                    lua_tostring(L, error + 2), got, lua_tostring(L, -1));
    luahier_pushword(L, e, LUAHIER_WORD_MESSAGE);
    lua_insert(L, -2);
    lua_rawset(L, error);
    luahier_pushword(L, e, LUAHIER_WORD_WHERE);
    lua_pushvalue(L, error + 2);
    lua_rawset(L, error);
    luahier_pushword(L, e, LUAHIER_WORD_RESPONDER);
    lua_pushvalue(L, error + 1);
    lua_rawset(L, error);
    lua_settop(L, error);
    luahier_tag(L, e->tags, error, 1);
    return lua_error(L);
}

/* Whether the error at `index` is Lua's own for a coroutine.yield inside a responder. */
static int luahier_isyieldacrosshost(lua_State *L, const luahier_Engine *e, int index) {
    if (lua_type(L, index) != LUA_TTABLE) return 0;
    luahier_pushword(L, e, LUAHIER_WORD_TYPE);
    lua_rawget(L, index);
    luahier_pushword(L, e, LUAHIER_WORD_LUAERROR);
    int lua_error_type = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (!lua_error_type) return 0;
    luahier_pushword(L, e, LUAHIER_WORD_MESSAGE);
    lua_rawget(L, index);
    size_t length = 0;
    const char *message = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &length) : NULL;
    static const char yield[] = "attempt to yield across a C-call boundary";
    int yielded = message && length == sizeof yield - 1 && memcmp(message, yield, length) == 0;
    lua_pop(L, 1);
    return yielded;
}

/* lua_CFunction accept(plan, slot, answer, as_error, value, is_error, raised) -> value, type:
 * what the entry at `slot` produced, as the value that goes on (contract §4).
 * - A replacement must be a value of the domain `as_error` says (the verdict words are not
 *   values): anything else raises the entry's ResponderContractError.
 * - A raised error (`raised`) is always an error: one that is not a value of that domain
 *   becomes a LuaError saying what it was; Lua's own error for a yield inside a responder
 *   becomes the responder's ResponderContractError.
 * - An error that goes on gets the entry's `where` if it has none, and the error it replaces
 *   as `cause` (unless it is that very error); the sandbox's read-only tables stay as they are.
 * upvalue 1: the engine. */
static int luahier_accept(lua_State *L) {
    luahier_Engine *e = (luahier_Engine *)lua_touserdata(L, lua_upvalueindex(1));
    const luahier_Keys keys = { lua_upvalueindex(2) };
    int slot = (int)lua_tointeger(L, 2);
    int is_error = lua_toboolean(L, 4);
    int raised = lua_toboolean(L, 7);
    lua_settop(L, 7);
    if (raised) {
        if (luahier_isyieldacrosshost(L, e, 3)) {
            lua_rawgeti(L, 1, slot + LUAHIER_ENTRY_WHERE);
            lua_pushfstring(L, "responder at %s yielded: responders run inside the host and cannot yield "
                               "(use a coroutine of your own inside the responder)", lua_tostring(L, -1));
            lua_createtable(L, 0, 3);
            luahier_pushword(L, e, LUAHIER_WORD_TYPE);
            lua_pushliteral(L, "ResponderContractError");
            lua_rawset(L, -3);
            luahier_pushword(L, e, LUAHIER_WORD_MESSAGE);
            lua_pushvalue(L, -3);
            lua_rawset(L, -3);
            /* where it yielded, else the responder */
            luahier_pushword(L, e, LUAHIER_WORD_WHERE);
            luahier_pushword(L, e, LUAHIER_WORD_WHERE);
            if (lua_rawget(L, 3) != LUA_TSTRING) {
                lua_pop(L, 1);
                lua_pushvalue(L, 8);
            }
            lua_rawset(L, -3);
            lua_replace(L, 3);
            lua_settop(L, 7);
        }
        if (!luahier_asvalue(L, e, 3, 1)) {
            /* [description] Not an error value: a LuaError that says what it was. */
            lua_createtable(L, 0, 3);
            luahier_pushword(L, e, LUAHIER_WORD_TYPE);
            luahier_pushword(L, e, LUAHIER_WORD_LUAERROR);
            lua_rawset(L, -3);
            luahier_pushword(L, e, LUAHIER_WORD_MESSAGE);
            lua_pushfstring(L, "(error object is %s)", lua_tostring(L, 8));
            lua_rawset(L, -3);
            if (lua_type(L, 3) == LUA_TTABLE) {
                luahier_pushword(L, e, LUAHIER_WORD_WHERE);
                luahier_pushword(L, e, LUAHIER_WORD_WHERE);
                if (lua_rawget(L, 3) == LUA_TSTRING) lua_rawset(L, -3);
                else lua_pop(L, 2);
            }
            luahier_tag(L, e->tags, -1, 1);
            lua_replace(L, 3);
            lua_settop(L, 7);
            luahier_pushword(L, e, LUAHIER_WORD_LUAERROR);
        }
        size_t type_length = 0;
        const char *type = lua_tolstring(L, 8, &type_length);
        luahier_noteraised(L, type, type_length);
        is_error = 1;
    } else {
        if (lua_type(L, 3) == LUA_TSTRING) {
            const void *word = lua_topointer(L, 3);
            if (word == e->handled) return luahier_contracterror(L, e, slot, "\"handled\"");
            if (word == e->not_handled) return luahier_contracterror(L, e, slot, "\"notHandled\"");
            size_t length;
            const char *text = lua_tolstring(L, 3, &length);
            if (length == 9 && memcmp(text, "unhandled", 9) == 0) return luahier_contracterror(L, e, slot, "\"unhandled\"");
        }
        if (!luahier_asvaluewith(L, e, 3, is_error, &keys)) return luahier_contracterror(L, e, slot, lua_tostring(L, 8));
    }
    /* [.. 7 args, 8 type] */
    if (is_error && lua_type(L, 3) == LUA_TTABLE && !luahier_isfrozen(L, 3)) {
        lua_rawgeti(L, 1, slot + LUAHIER_ENTRY_WHERE);
        luahier_setifabsent(L, e, 3, LUAHIER_WORD_WHERE, -1);
        lua_pop(L, 1);
        if (lua_toboolean(L, 6) && !lua_rawequal(L, 3, 5)) luahier_setifabsent(L, e, 3, LUAHIER_WORD_CAUSE, 5);
    }
    lua_pushvalue(L, 3);
    lua_insert(L, -2);
    return 2;
}

/* ---- Full tracing: copies of values ----------------------------------------------------- */

enum { LUAHIER_COPY_DEPTH = 200 };

/* Room a copy leaves free under the cap, beyond what it counts for its tables: for the blocks
 * it does not count (a described value's string, malloc's rounding), so that the allocator
 * never refuses it: a refusal would end the dispatch, which a copy must never do. */
#define LUAHIER_COPY_SLACK ((size_t)64 * 1024)

/* One copy: the guard whose cap it stays under, and the table that says, for each table of
 * the value, its copy (`copies[table] = copy`) and, once that copy is made whole, how deeply
 * it nests (`copies[copy] = height`: a copy is never a table of the value, so the two kinds
 * of key never meet). A copy without its height is still being made: meeting its table
 * again is a cycle. `copies` is made (`made`) when the first table that holds a table is. */
typedef struct {
    luahier_Guard *guard;
    int copies, made;
    size_t entries;
} luahier_Copy;

enum { LUAHIER_COPY_WHOLE, LUAHIER_COPY_CUT, LUAHIER_COPY_REFUSED };

/* [-0, +0, -] Whether a table of `count` entries (its header, slots, and the rehash the next
 * key may make), and the rehash of `copies`, fit under the cap with LUAHIER_COPY_SLACK to
 * spare. */
static int luahier_copyfits(const luahier_Copy *c, size_t count) {
    const luahier_Guard *g = c->guard;
    if (g->limit == 0 || g->in_host) return 1;
    size_t need = 128 + 96 * count + 128 * (c->entries + 1) + LUAHIER_COPY_SLACK;
    return g->used < g->limit && need <= g->limit - g->used;
}

/* [-0, +1 or +0, m] A copy of the value at `index` made of plain tables, read raw; pushes it
 * and answers WHOLE or CUT, or pushes nothing and answers REFUSED when it would not fit under
 * the cap. A table met twice is copied once and the copy shared, so a copy costs what the
 * value's own tables do. Functions and other values plain data cannot hold are described
 * ("<function>"), as the outcome's writer describes them; keys are kept as they are (a table
 * or node key is the writer's to describe, not copied). A table inside itself is "<cycle>",
 * nesting past LUAHIER_COPY_DEPTH "<too deep>": a copy with such a cut (CUT) depends on where
 * it was made, so it is not shared. `height` is how deeply the copy nests (-1: no table).
 * Copying charges its work, so a large value meets the limits like any other. */
static int luahier_copyvalue(lua_State *L, luahier_Copy *c, int index, int depth, int *height) {
    index = lua_absindex(L, index);
    int type = lua_type(L, index);
    *height = -1;
    if (type != LUA_TTABLE) {
        if (type == LUA_TNIL || type == LUA_TBOOLEAN || type == LUA_TNUMBER || type == LUA_TSTRING) lua_pushvalue(L, index);
        else lua_pushfstring(L, "<%s>", lua_typename(L, type));
        return LUAHIER_COPY_WHOLE;
    }
    if (!lua_checkstack(L, 8)) {
        lua_pushliteral(L, "<too deep>");
        return LUAHIER_COPY_CUT;
    }
    lua_pushvalue(L, index);
    if (c->made && lua_rawget(L, c->copies) == LUA_TTABLE) {
        lua_pushvalue(L, -1);
        if (lua_rawget(L, c->copies) == LUA_TNIL) {
            lua_pop(L, 2);
            lua_pushliteral(L, "<cycle>");
            return LUAHIER_COPY_CUT;
        }
        int made_height = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (depth + made_height < LUAHIER_COPY_DEPTH) {
            *height = made_height;
            return LUAHIER_COPY_WHOLE;
        }
    }
    if (!c->made) {
        lua_pop(L, 1);
        lua_pushnil(L);
    }
    /* [.. the copy made before (met too deep here), or nil] */
    int previous = lua_gettop(L);
    if (depth >= LUAHIER_COPY_DEPTH) {
        lua_pop(L, 1);
        lua_pushliteral(L, "<too deep>");
        return LUAHIER_COPY_CUT;
    }
    if (!luahier_copyfits(c, 0)) {
        lua_pop(L, 1);
        return LUAHIER_COPY_REFUSED;
    }
    lua_newtable(L);
    int copy = lua_gettop(L);
    int result = LUAHIER_COPY_WHOLE, known = 0;
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        luahier_charge(L, 1);
        /* Known in `copies` from its first table inside: one without any can neither be met
         * inside itself nor make the copy more than linear, and most are such. */
        if (!known && lua_type(L, -1) == LUA_TTABLE) {
            if (!c->made) {
                lua_newtable(L);
                lua_replace(L, c->copies);
                c->made = 1;
            }
            if (lua_isnil(L, previous)) c->entries += 2;
            lua_pushvalue(L, index);
            lua_pushvalue(L, copy);
            lua_rawset(L, c->copies);
            known = 1;
        }
        int inner = -1, part = LUAHIER_COPY_REFUSED;
        if (luahier_copyfits(c, ++count)) {
            lua_pushvalue(L, -2);
            part = luahier_copyvalue(L, c, -2, depth + 1, &inner);
        }
        if (part == LUAHIER_COPY_REFUSED) {
            lua_settop(L, previous - 1);
            return LUAHIER_COPY_REFUSED;
        }
        if (part == LUAHIER_COPY_CUT) result = LUAHIER_COPY_CUT;
        if (inner + 1 > *height) *height = inner + 1;
        lua_rawset(L, copy);
        lua_pop(L, 1);
    }
    if (*height < 0) *height = 0;
    /* Made whole, it is the copy of this table wherever it is met again; cut, the copy made
     * before (if any) stays the one to share. */
    if (known && result == LUAHIER_COPY_WHOLE) {
        lua_pushvalue(L, copy);
        lua_pushinteger(L, *height);
        lua_rawset(L, c->copies);
    } else if (known) {
        lua_pushvalue(L, index);
        lua_pushvalue(L, previous);
        lua_rawset(L, c->copies);
    }
    lua_remove(L, previous);
    return result;
}

/* lua_CFunction copy(value) -> a copy of it (luahier_copyvalue), or, when it would not fit
 * under the memory cap, {omitted = "MemoryLimitExceeded"}: a trace that cannot keep a value
 * says so (contract §7), and the dispatch goes on as it would untraced. */
static int luahier_copy(lua_State *L) {
    lua_settop(L, 1);
    luahier_Copy c = { luahier_guard(L), 2, 0, 0 };
    lua_pushnil(L);
    int height;
    if (luahier_copyvalue(L, &c, 1, 0, &height) != LUAHIER_COPY_REFUSED) return 1;
    lua_settop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "MemoryLimitExceeded");
    lua_setfield(L, -2, "omitted");
    return 1;
}

/* Room a trace record is made with: for a run of receives that passed the value by and the step
 * that ends the dispatch or replaces the value, without full tracing's copies of the value (its
 * last slots: most dispatches record no more, and a record grows past it as any table). Room
 * for the copies too makes every record larger, which a traced dispatch pays for in collection
 * work. Its slots start empty: filling them first (in C, or by a table constructor in the walk)
 * costs more than the walk's stores into empty slots save. */
enum { LUAHIER_RECORD_ROOM = LUAHIER_TRACE_STEPS - 1 + LUAHIER_STEP_STRIDE + LUAHIER_STEP_BEFORE };

/* A trace record of a dispatch along `plan` (luahier_enginetypes.h): its plan and itself
 * first, so that it is the pair a traced outcome keeps for its lazy trace (luahier_keeptrace)
 * with no table of its own. */
void luahier_pushrecord(lua_State *L, int plan) {
    plan = lua_absindex(L, plan);
    lua_createtable(L, LUAHIER_RECORD_ROOM, 0);
    lua_pushvalue(L, plan);
    lua_rawseti(L, -2, LUAHIER_TRACE_PLAN);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -2, LUAHIER_TRACE_SELF);
}

/* lua_CFunction newrecord(plan) -> luahier_pushrecord's record, for the walk. */
static int luahier_newrecord(lua_State *L) {
    luahier_pushrecord(L, 1);
    return 1;
}

/* ---- Loading ---------------------------------------------------------------------------- */

int luahier_pushwalksource(lua_State *L, int traced, const char *text) {
    /* The constants filled in, in one pass over the text. */
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    const size_t count = sizeof luahier_walk_constants / sizeof luahier_walk_constants[0];
    for (const char *at; (at = strstr(text, "LUAHIER_")) != NULL;) {
        luaL_addlstring(&b, text, (size_t)(at - text));
        size_t length = strspn(at, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        size_t i = 0;
        while (i < count && !(strlen(luahier_walk_constants[i].name) == length
                              && memcmp(luahier_walk_constants[i].name, at, length) == 0)) i++;
        if (i == count) {
            luaL_pushresult(&b);
            lua_pop(L, 1);
            lua_pushlstring(L, at, length);
            lua_pushfstring(L, "walk.lua names %s, a constant luahier_pushwalksource does not fill in", lua_tostring(L, -1));
            lua_remove(L, -2);
            return LUA_ERRSYNTAX;
        }
        char number[16];
        snprintf(number, sizeof number, "%d", luahier_walk_constants[i].value);
        luaL_addstring(&b, number);
        text = at + length;
    }
    luaL_addstring(&b, text);
    luaL_pushresult(&b);
    /* The variant's lines: the marked ones kept (traced) or left as comments. */
    luaL_gsub(L, lua_tostring(L, -1), luahier_traced_mark, traced ? "    " : luahier_traced_mark);
    lua_remove(L, -2);
    return LUA_OK;
}

int luahier_pushwalk(lua_State *L, luahier_Engine *engine, int traced, const char *text,
                     const unsigned char *bytecode, size_t size) {
    /* The text is made only when the build's dump is not used. */
    if (!luahier_loaddump(L, bytecode, size, "=[luahier walk]")) {
        int status = luahier_pushwalksource(L, traced, text);
        if (status != LUA_OK) return status;
        size_t length;
        const char *source = lua_tolstring(L, -1, &length);
        status = luahier_loadhostchunk(L, source, length, NULL, 0, "=[luahier walk]");
        lua_remove(L, -2);
        if (status != LUA_OK) return status;
    }
    /* accept's upvalues: the engine, and what the value rules read on every call (the word
     * "type": luahier_Keys), so it does not look it up in the registry. */
    lua_pushlightuserdata(L, engine);
    luahier_pushword(L, engine, LUAHIER_WORD_TYPE);
    lua_pushcclosure(L, luahier_accept, 2);
    lua_pushcfunction(L, luahier_copy);
    lua_pushlightuserdata(L, &luahier_skipmark);
    lua_pushcfunction(L, luahier_newrecord);
    return lua_pcall(L, 4, 1, 0);
}
