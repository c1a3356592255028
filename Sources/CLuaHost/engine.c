/* The driver of every dispatch (luahier_engine.h): runs the walk in protected calls, sends a
 * responder's raised error back into it at the next responder, ends a dispatch a limit
 * tripped in, and makes the outcome. Also `node:triggerEvent` and `node:reportError`. */
#include "luahier_host.h"

#include <lauxlib.h>
#include <string.h>

/* [-0, +1, -] Pushes interned word `word` from the words table at `words`. */
static void luahier_word(lua_State *L, int words, int word) {
    lua_rawgeti(L, words, word);
}

/* [-0, +0, m] t[word] = the value on top (popped), raw. */
static void luahier_setword(lua_State *L, int t, int words, int word) {
    t = lua_absindex(L, t);
    luahier_word(L, words, word);
    lua_insert(L, -2);
    lua_rawset(L, t);
}

/* [-0, +0, -] The integer at slot `n` of the table at `t`. */
static lua_Integer luahier_slot(lua_State *L, int t, lua_Integer n) {
    lua_rawgeti(L, t, n);
    lua_Integer value = lua_tointegerx(L, -1, NULL);
    lua_pop(L, 1);
    return value;
}

/* [-0, +1, m] The state table of nesting depth `depth`, made on first use. */
static int luahier_pushstate(lua_State *L, const luahier_Engine *e, long depth) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->states_ref);
    if (lua_rawgeti(L, -1, (lua_Integer)depth) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, LUAHIER_STATE_SIZE, 0);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, (lua_Integer)depth);
    }
    lua_remove(L, -2);
    return lua_gettop(L);
}

int luahier_rundispatch(lua_State *L, luahier_Engine *e, int plan, int value, int type, int is_error,
                        luahier_Result *r) {
    plan = lua_absindex(L, plan);
    value = lua_absindex(L, value);
    type = lua_absindex(L, type);
    if (*e->depth >= e->depth_limit) return LUAHIER_FAIL_DEPTH;
    if (!lua_checkstack(L, 16)) return LUAHIER_FAIL_DEPTH;
    long depth = ++*e->depth;
    e->dispatches++;
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host, caller_refused = g->memory_refused;
    g->in_host = 1;
    int base = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->words_ref);
    int words = base + 1;
    int state = luahier_pushstate(L, e, depth);

    /* The state the walk starts from and keeps up to date. */
    lua_pushvalue(L, value);
    lua_rawseti(L, state, LUAHIER_STATE_VALUE);
    lua_pushvalue(L, type);
    lua_rawseti(L, state, LUAHIER_STATE_TYPE);
    luahier_word(L, words, is_error ? LUAHIER_WORD_ERROR : LUAHIER_WORD_EVENT);
    lua_rawseti(L, state, LUAHIER_STATE_DOMAIN);
    lua_pushinteger(L, 0);
    lua_rawseti(L, state, LUAHIER_STATE_REACHED);
    lua_pushvalue(L, plan);
    lua_rawseti(L, state, LUAHIER_STATE_PLAN);
    lua_rawgeti(L, plan, LUAHIER_PLAN_TRACE);
    int traced = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (traced) {
        lua_createtable(L, 64, 0);
        lua_pushinteger(L, LUAHIER_TRACE_COUNT);
        lua_rawseti(L, -2, LUAHIER_TRACE_COUNT);
    } else {
        lua_pushboolean(L, 0);
    }
    lua_rawseti(L, state, LUAHIER_STATE_TRACE);

    /* Walk, and walk again after each error a responder raises, from the next responder. */
    lua_Integer slot = luahier_slot(L, plan, is_error ? LUAHIER_PLAN_ERRORS : LUAHIER_PLAN_EVENTS);
    int raised = 0;          /* stack index of the error to walk on with, 0: none */
    int code = LUAHIER_WALK_END;
    int tripped = 0, out_of_memory = 0;
    lua_pushnil(L);          /* the choice */
    int choice = lua_gettop(L);
    for (;;) {
        int top = lua_gettop(L);
        lua_pushcfunction(L, luahier_msgh);
        lua_rawgeti(L, LUA_REGISTRYINDEX, e->walk_ref);
        lua_pushvalue(L, plan);
        lua_pushvalue(L, state);
        lua_pushinteger(L, slot);
        if (raised) lua_pushvalue(L, raised);
        else lua_pushnil(L);
        g->in_host = 0;
        g->memory_refused = 0;
        int status = lua_pcall(L, 4, 3, top + 1);
        g->in_host = 1;
        int memory_refused = g->memory_refused;
        /* A limit tripped, even one a script's own pcall swallowed, ends the dispatch. */
        tripped = luahier_tripped(L);
        if (tripped) {
            lua_settop(L, top);
            break;
        }
        if (status == LUA_OK) {
            code = (int)lua_tointegerx(L, top + 2, NULL);
            slot = lua_tointegerx(L, top + 3, NULL);
            lua_copy(L, top + 4, choice);
            lua_settop(L, top);
            break;
        }
        /* [top + 1 msgh, top + 2 error] */
        if (status == LUA_ERRMEM || (status == LUA_ERRERR && memory_refused)) {
            lua_settop(L, top);
            out_of_memory = 1;
            break;
        }
        if (status == LUA_ERRERR) {
            /* The message handler itself failed: the error says so. */
            lua_createtable(L, 0, 2);
            luahier_word(L, words, LUAHIER_WORD_LUAERROR);
            luahier_setword(L, -2, words, LUAHIER_WORD_TYPE);
            lua_pushfstring(L, "error while handling an error: %s",
                            lua_type(L, top + 2) == LUA_TSTRING ? lua_tostring(L, top + 2) : "?");
            luahier_setword(L, -2, words, LUAHIER_WORD_MESSAGE);
            lua_replace(L, top + 2);
        }
        lua_replace(L, top + 1);
        lua_settop(L, top + 1);
        if (raised) lua_remove(L, raised);
        raised = lua_gettop(L);
        slot = luahier_slot(L, state, LUAHIER_STATE_REACHED);
    }
    if (raised) lua_remove(L, raised);
    g->memory_refused = caller_refused;

    /* [base + 1 words, state, choice] */
    r->chain_cut = 0;
    lua_rawgeti(L, plan, LUAHIER_PLAN_END);
    luahier_word(L, words, LUAHIER_WORD_DETACHED);
    r->chain_cut = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    r->tripped = tripped;
    r->slot = 0;
    if (tripped || out_of_memory) {
        /* Ended by a limit: unhandled, the limit's error as the value, the error it was
         * handling (if any) as its cause, the responder it tripped in as its `where`. */
        if (out_of_memory) e->push_failure(e->host, L, LUAHIER_FAIL_NOMEMORY);
        else luahier_pushlimiterror(L, g);
        int error = lua_gettop(L);
        luahier_word(L, words, LUAHIER_WORD_WHERE);
        lua_Integer reached = luahier_slot(L, state, LUAHIER_STATE_REACHED);
        if (lua_rawget(L, error) == LUA_TNIL && reached > 0) {
            luahier_word(L, words, LUAHIER_WORD_WHERE);
            lua_rawgeti(L, plan, reached + LUAHIER_ENTRY_WHERE);
            lua_rawset(L, error);
        }
        lua_pop(L, 1);
        lua_rawgeti(L, state, LUAHIER_STATE_DOMAIN);
        luahier_word(L, words, LUAHIER_WORD_ERROR);
        int handling_error = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
        lua_rawgeti(L, state, LUAHIER_STATE_VALUE);
        if (handling_error && !lua_rawequal(L, -1, error)) {
            luahier_word(L, words, LUAHIER_WORD_CAUSE);
            if (lua_rawget(L, error) == LUA_TNIL) {
                luahier_word(L, words, LUAHIER_WORD_CAUSE);
                lua_pushvalue(L, -3);
                lua_rawset(L, error);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        luahier_asvalue(L, e, error, 1);
        r->status = LUAHIER_STATUS_UNHANDLED;
        r->is_error = 1;
        lua_pushnil(L);
        lua_replace(L, choice);
    } else {
        lua_rawgeti(L, state, LUAHIER_STATE_VALUE);
        lua_rawgeti(L, state, LUAHIER_STATE_TYPE);
        lua_rawgeti(L, state, LUAHIER_STATE_DOMAIN);
        luahier_word(L, words, LUAHIER_WORD_ERROR);
        r->is_error = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
        if (code == LUAHIER_WALK_HANDLED) {
            r->status = LUAHIER_STATUS_HANDLED;
            r->slot = (int)slot;
        } else {
            r->status = r->chain_cut ? LUAHIER_STATUS_DETACHED : LUAHIER_STATUS_UNHANDLED;
        }
    }
    /* [words, state, choice, value, type] -> [value, type, choice, trace] */
    lua_pushvalue(L, choice);
    lua_rawgeti(L, state, LUAHIER_STATE_TRACE);
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        lua_pushnil(L);
    }
    /* The state lets go of what it held: nothing stays alive between dispatches. */
    lua_pushboolean(L, 0);
    lua_rawseti(L, state, LUAHIER_STATE_VALUE);
    lua_pushboolean(L, 0);
    lua_rawseti(L, state, LUAHIER_STATE_TRACE);
    lua_pushboolean(L, 0);
    lua_rawseti(L, state, LUAHIER_STATE_BEFORE);
    lua_pushboolean(L, 0);
    lua_rawseti(L, state, LUAHIER_STATE_PLAN);
    lua_rotate(L, base + 1, -3);
    lua_settop(L, base + 4);
    r->value = base + 1;
    r->type = base + 2;
    r->choice = base + 3;
    r->trace = base + 4;
    if (e->observes || (e->presents && r->is_error && r->status != LUAHIER_STATUS_HANDLED)) e->ended(e->host, L, plan, r);
    --*e->depth;
    g->in_host = caller_in_host;
    return 0;
}

void luahier_pushoutcome(lua_State *L, luahier_Engine *e, int plan, const luahier_Result *r, int meta,
                         int traced_meta, int pending) {
    plan = lua_absindex(L, plan);
    meta = lua_absindex(L, meta);
    traced_meta = lua_absindex(L, traced_meta);
    pending = lua_absindex(L, pending);
    int handled = r->status == LUAHIER_STATUS_HANDLED;
    int chosen = handled && !lua_isnil(L, r->choice);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->words_ref);
    int words = lua_gettop(L);
    /* Sized exactly: four fields, six when handled (a table of four hash slots is half one of eight). */
    lua_createtable(L, 0, 4 + (handled ? 2 : 0) + (chosen ? 1 : 0));
    int outcome = lua_gettop(L);
    luahier_word(L, words, r->status == LUAHIER_STATUS_HANDLED ? LUAHIER_WORD_HANDLED
                         : r->status == LUAHIER_STATUS_DETACHED ? LUAHIER_WORD_DETACHED : LUAHIER_WORD_UNHANDLED);
    luahier_setword(L, outcome, words, LUAHIER_WORD_STATUS);
    luahier_word(L, words, r->is_error ? LUAHIER_WORD_ERROR : LUAHIER_WORD_EVENT);
    luahier_setword(L, outcome, words, LUAHIER_WORD_KIND);
    lua_pushvalue(L, r->value);
    luahier_setword(L, outcome, words, LUAHIER_WORD_VALUE);
    lua_rawgeti(L, plan, LUAHIER_PLAN_AT);
    luahier_setword(L, outcome, words, LUAHIER_WORD_AT);
    if (handled) {
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_NODE);
        luahier_setword(L, outcome, words, LUAHIER_WORD_BY);
        lua_createtable(L, 0, 3);
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_INDEX);
        luahier_setword(L, -2, words, LUAHIER_WORD_INDEX);
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_WHERE);
        luahier_setword(L, -2, words, LUAHIER_WORD_WHERE);
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_KIND);
        luahier_setword(L, -2, words, LUAHIER_WORD_KIND);
        luahier_setword(L, outcome, words, LUAHIER_WORD_RESPONDER);
    }
    if (chosen) {
        lua_pushvalue(L, r->choice);
        luahier_setword(L, outcome, words, LUAHIER_WORD_CHOICE);
    }
    if (!lua_isnil(L, r->trace)) {
        /* pending[outcome] = {plan, record}: the trace is made when first read. */
        lua_pushvalue(L, outcome);
        lua_createtable(L, 2, 0);
        lua_pushvalue(L, plan);
        lua_rawseti(L, -2, 1);
        lua_pushvalue(L, r->trace);
        lua_rawseti(L, -2, 2);
        lua_rawset(L, pending);
        lua_pushvalue(L, traced_meta);
    } else {
        lua_pushvalue(L, meta);
    }
    lua_setmetatable(L, outcome);
    lua_remove(L, words);
}

/* [-0, +0, -] Whether the value at `index` is a node of this hierarchy. */
static int luahier_isnode(lua_State *L, int index) {
    if (lua_type(L, index) != LUA_TUSERDATA || !lua_getmetatable(L, index)) return 0;
    int node = lua_rawequal(L, -1, lua_upvalueindex(LUAHIER_TRIGGER_NODEMETA + 2));
    lua_pop(L, 1);
    return node;
}

/* The upvalues after the trampoline's two (its Swift entry and function index). */
#define LUAHIER_UP(n) lua_upvalueindex((n) + 2)

int luahier_trigger(lua_State *L) {
    luahier_Engine *e = (luahier_Engine *)lua_touserdata(L, LUAHIER_UP(LUAHIER_TRIGGER_ENGINE));
    int is_error = lua_toboolean(L, LUAHIER_UP(LUAHIER_TRIGGER_DOMAIN));
    /* Anything but (node, value of the domain) goes to the host, which words the error. */
    if (lua_gettop(L) < 2 || !luahier_isnode(L, 1) || *(void **)lua_touserdata(L, 1) == NULL) return luahier_trampoline(L);
    lua_settop(L, 2);
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host;
    if (is_error) {
        /* As for a raised table: an error without a message reads as its __tostring. */
        luahier_givetostringmessage(L, 2);
    }
    g->in_host = 1;
    if (!luahier_asvalue(L, e, 2, is_error)) {
        g->in_host = caller_in_host;
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* [node, value, type] */
    if (is_error && !luahier_isfrozen(L, 2)) {
        /* A reported error is `where` it was reported, unless it says otherwise. */
        lua_pushliteral(L, "where");
        if (lua_rawget(L, 2) == LUA_TNIL && luahier_pushwhere(L, 1)) {
            lua_pushliteral(L, "where");
            lua_insert(L, -2);
            lua_rawset(L, 2);
        }
        lua_settop(L, 3);
    }
    /* The node's plan, kept by its address, current while the tree's chains stand still. */
    void *node = *(void **)lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->plans_ref);
    lua_pushlightuserdata(L, node);
    if (lua_rawget(L, -2) != LUA_TTABLE || luahier_slot(L, -1, LUAHIER_PLAN_STAMP) != *e->changes) {
        lua_pop(L, 1);
        e->plan_for(e->host, L, node);
    }
    lua_remove(L, -2);
    g->in_host = caller_in_host;
    if (lua_type(L, 4) != LUA_TTABLE) {
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* [node, value, type, plan] A dispatch's own budget, inside what is left of the running one:
     * a trip ends the dispatch, and the caller goes on if its own budget is not spent. */
    luahier_charge(L, e->dispatch_charge);
    luahier_Budget enclosing;
    luahier_pushbudget(L, &enclosing, e->dispatch_instructions, e->dispatch_seconds);
    luahier_Result r;
    int failed = luahier_rundispatch(L, e, 4, 2, 3, is_error, &r);
    luahier_popbudget(L, &enclosing);
    if (failed) {
        /* Nested past the limit: raised at the caller's line. */
        g->in_host = 1;
        e->push_failure(e->host, L, failed);
        lua_pushliteral(L, "where");
        if (luahier_pushwhere(L, 1)) lua_rawset(L, -3);
        else lua_pop(L, 1);
        g->in_host = caller_in_host;
        return lua_error(L);
    }
    luahier_charge(L, luahier_slot(L, 4, LUAHIER_PLAN_HOPS));
    g->in_host = 1;
    luahier_pushoutcome(L, e, 4, &r, LUAHIER_UP(LUAHIER_TRIGGER_OUTCOMEMETA), LUAHIER_UP(LUAHIER_TRIGGER_TRACEDMETA),
                        LUAHIER_UP(LUAHIER_TRIGGER_PENDING));
    g->in_host = caller_in_host;
    return 1;
}
