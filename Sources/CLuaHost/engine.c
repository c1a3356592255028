/* The driver of every dispatch (luahier_engine.h): runs the walk in protected calls, sends a
 * responder's raised error back into it at the next responder, ends a dispatch a limit
 * tripped in, and makes the outcome. Also `node:triggerEvent` and `node:reportError`.
 *
 * This runs once per dispatch, so it keeps to few calls of Lua's API: words come from the
 * trigger's upvalues, the state table of each depth is one registry reference. */
#include "luahier_engine.h"
#include "walk_internal.h"
#include "luahier_errors.h"
#include "luahier_host.h"
#include "luahier_limits.h"
#include "luahier_walk.h"

#include <lauxlib.h>
#include <string.h>

void luahier_pushwords(lua_State *L) {
    static const char *const texts[] = {
#define LUAHIER_WORD_TEXT(name, text) text,
        LUAHIER_WORDS(LUAHIER_WORD_TEXT)
#undef LUAHIER_WORD_TEXT
    };
    lua_createtable(L, LUAHIER_WORD_COUNT, 0);
    for (int word = 1; word <= LUAHIER_WORD_COUNT; word++) {
        lua_pushstring(L, texts[word - 1]);
        lua_rawseti(L, -2, word);
    }
}

/* [-0, +0, -] The integer at slot `n` of the table at `t`. */
static lua_Integer luahier_slot(lua_State *L, int t, lua_Integer n) {
    lua_rawgeti(L, t, n);
    lua_Integer value = lua_tointegerx(L, -1, NULL);
    lua_pop(L, 1);
    return value;
}

/* [-0, +1, m] The state table of nesting depth `depth`, made on first use. */
static void luahier_pushstate(lua_State *L, luahier_Engine *e, long depth) {
    if (e->state_refs[depth] != 0) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, e->state_refs[depth]);
        return;
    }
    lua_createtable(L, LUAHIER_STATE_SIZE, 0);
    for (int field = 1; field <= LUAHIER_STATE_SIZE; field++) {
        lua_pushboolean(L, 0);
        lua_rawseti(L, -2, field);
    }
    lua_pushvalue(L, -1);
    e->state_refs[depth] = luaL_ref(L, LUA_REGISTRYINDEX);
}


/* [-0, +1, m] The error a limit ended the dispatch with: the limit's own, with the entry it
 * tripped in as `where` if it names none, and the error being handled (the value at `value`,
 * if `is_error`) as its cause. */
static void luahier_pushlimitend(lua_State *L, luahier_Engine *e, int out_of_memory, int plan, int state, int value,
                                 int is_error) {
    if (out_of_memory) {
        e->push_failure(e->host, L, LUAHIER_FAIL_NOMEMORY);
        luahier_guard(L)->failures |= LUAHIER_FAILED_NOMEMORY;
    } else {
        luahier_pushlimiterror(L, luahier_guard(L));
    }
    int error = lua_gettop(L);
    lua_Integer reached = luahier_slot(L, state, LUAHIER_STATE_REACHED);
    if (reached > 0) {
        lua_rawgeti(L, plan, reached + LUAHIER_ENTRY_WHERE);
        luahier_setifabsent(L, e, error, LUAHIER_WORD_WHERE, -1);
        lua_pop(L, 1);
    }
    if (is_error && !lua_rawequal(L, value, error)) luahier_setifabsent(L, e, error, LUAHIER_WORD_CAUSE, value);
}

/* [-0, +0, m] The trace of a dispatch a limit ended, made whole (made first, when the limit
 * stopped a traced walk before its first step). The entries of a run of plain
 * receives that passed the value by before the one reached, or a run whose step waited
 * (luahier_enginetypes.h, LUAHIER_STATE_PASSED), become the run's step, as the walk records
 * them; then the entry the
 * limit stopped (state[REACHED]) raised the limit's error (of type `type`), called with a value
 * of type `input`, as the walk records a responder's raise. Not that step when the last step
 * recorded has that entry already: the limit tripped after it answered. */
static void luahier_recordlimitend(lua_State *L, int plan, int state, int input, int type) {
    int top = lua_gettop(L);
    int held = lua_rawgeti(L, state, LUAHIER_STATE_RECORD);
    if (held != LUA_TTABLE) {
        int traced = held == LUA_TBOOLEAN && lua_toboolean(L, -1);
        lua_settop(L, top);
        if (!traced) return;
        luahier_pushrecord(L, plan);
        lua_pushvalue(L, -1);
        lua_rawseti(L, state, LUAHIER_STATE_RECORD);
    }
    int record = lua_gettop(L);
    lua_Integer reached = luahier_slot(L, state, LUAHIER_STATE_REACHED);
    /* The last step's entries: `last` to `last_to` (a run's step names its last entry). */
    lua_Integer step = LUAHIER_TRACE_STEPS, last = 0, last_to = 0;
    while (lua_rawgeti(L, record, step + LUAHIER_STEP_ENTRY) == LUA_TNUMBER) {
        last = last_to = lua_tointegerx(L, -1, NULL);
        if (lua_rawgeti(L, record, step + LUAHIER_STEP_TYPE) == LUA_TNUMBER) last_to = lua_tointegerx(L, -1, NULL);
        lua_pop(L, 2);
        step += LUAHIER_STEP_STRIDE;
    }
    lua_pop(L, 1);
    if (lua_rawgeti(L, state, LUAHIER_STATE_PASSED) == LUA_TNUMBER) {
        lua_Integer from = lua_tointegerx(L, -1, NULL);
        /* The walk moves forward only, so a last step at `from` is this run's, written before the
         * limit stopped the walk from saying so (state[PASSED] is cleared after the write). */
        if (reached > from && last != from) {
            lua_pushinteger(L, from);
            lua_rawseti(L, record, step + LUAHIER_STEP_ENTRY);
            lua_pushvalue(L, input);
            lua_rawseti(L, record, step + LUAHIER_STEP_INPUT);
            /* A run that ended waits with its last entry; one under way ends before `reached`. */
            lua_Integer to = luahier_slot(L, state, LUAHIER_STATE_PASSEDTO);
            if (to <= 0) to = reached - LUAHIER_ENTRY_STRIDE;
            lua_pushinteger(L, to);
            lua_rawseti(L, record, step + LUAHIER_STEP_TYPE);
            last = from;
            last_to = to;
            step += LUAHIER_STEP_STRIDE;
        }
    }
    if (reached > 0 && (reached < last || reached > last_to)) {
        lua_pushinteger(L, reached);
        lua_rawseti(L, record, step + LUAHIER_STEP_ENTRY);
        lua_pushvalue(L, input);
        lua_rawseti(L, record, step + LUAHIER_STEP_INPUT);
        lua_pushliteral(L, "raised");
        lua_rawseti(L, record, step + LUAHIER_STEP_RESULT);
        lua_pushvalue(L, type);
        lua_rawseti(L, record, step + LUAHIER_STEP_TYPE);
    }
    lua_settop(L, top);
}

/* [-0, +0, m] The record a walk returned before its trip was noticed, made the dispatch's
 * (state[RECORD]) for the limit's end: a copy, as it may be one its plan keeps, which no one
 * writes to. */
static void luahier_takerecord(lua_State *L, int plan, int state, int returned) {
    luahier_pushrecord(L, plan);
    lua_Integer step = LUAHIER_TRACE_STEPS;
    for (; lua_rawgeti(L, returned, step + LUAHIER_STEP_ENTRY) == LUA_TNUMBER; step += LUAHIER_STEP_STRIDE) {
        lua_rawseti(L, -2, step + LUAHIER_STEP_ENTRY);
        for (int field = LUAHIER_STEP_ENTRY + 1; field < LUAHIER_STEP_STRIDE; field++) {
            lua_rawgeti(L, returned, step + field);
            lua_rawseti(L, -2, step + field);
        }
    }
    lua_pop(L, 1);
    lua_rawseti(L, state, LUAHIER_STATE_RECORD);
}

int luahier_rundispatch(lua_State *L, luahier_Engine *e, int plan, int value, int type, int is_error,
                        luahier_Result *r) {
    plan = lua_absindex(L, plan);
    value = lua_absindex(L, value);
    type = lua_absindex(L, type);
    if (*e->depth >= e->depth_limit || *e->depth >= LUAHIER_MAX_DEPTH || !lua_checkstack(L, 24))
        return LUAHIER_FAIL_DEPTH;
    long depth = ++*e->depth;
    e->threads[depth] = L;
    r->serial = e->serials[depth] = ++e->dispatches;
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host, caller_refused = g->memory_refused;
    g->in_host = 1;
    /* [base + 1: the message handler, + 2: the state, then what the walk returns:
     *  + 3 status, + 4 slot, + 5 choice, + 6 trace record; then + 7 the value, + 8 its type] */
    int base = lua_gettop(L);
    lua_pushcfunction(L, luahier_msgh);
    luahier_pushstate(L, e, depth);
    int state = base + 2;
    lua_rawgeti(L, plan, LUAHIER_PLAN_WALK);
    lua_pushvalue(L, plan);
    lua_pushvalue(L, state);
    lua_pushvalue(L, value);
    lua_pushvalue(L, type);
    lua_pushboolean(L, is_error);
    int args = 5, tripped = 0;
    for (;;) {
        g->in_host = 0;
        g->memory_refused = 0;
        int status = lua_pcall(L, args, 4, base + 1);
        g->in_host = 1;
        int memory_refused = g->memory_refused;
        /* A limit tripped, even one a script's own pcall swallowed, ends the dispatch. */
        tripped = luahier_tripped(L);
        /* The value the walk went on with, if it replaced the first: the final one, or where
         * things stood when a responder raised an error. */
        if (lua_rawgeti(L, state, LUAHIER_STATE_VALUE) == LUA_TBOOLEAN) {
            lua_pop(L, 1);
            lua_pushvalue(L, value);
            lua_pushvalue(L, type);
        } else {
            lua_rawgeti(L, state, LUAHIER_STATE_TYPE);
            lua_rawgeti(L, state, LUAHIER_STATE_ERROR);
            is_error = lua_toboolean(L, -1);
            lua_pop(L, 1);
            lua_pushboolean(L, 0);
            lua_rawseti(L, state, LUAHIER_STATE_VALUE);
        }
        if (status == LUA_OK && !tripped) {
            r->status = (int)lua_tointegerx(L, base + 3, NULL);
            r->slot = r->status == LUAHIER_STATUS_HANDLED ? (int)lua_tointegerx(L, base + 4, NULL) : 0;
            r->is_error = is_error;
            r->chain_cut = r->status == LUAHIER_STATUS_DETACHED;
            break;
        }
        if (status == LUA_OK) {
            /* A trip the walk returned from: [+ 3 .. 6 its results, + 7 value, + 8 type]. */
            if (lua_type(L, base + 6) == LUA_TTABLE) luahier_takerecord(L, plan, state, base + 6);
            lua_copy(L, base + 7, base + 4);
            lua_copy(L, base + 8, base + 5);
            lua_settop(L, base + 5);
        }
        /* [+ 3 error (or a result), + 4 value, + 5 type] */
        lua_Integer slot = luahier_slot(L, state, LUAHIER_STATE_REACHED);
        if (tripped || status == LUA_ERRMEM || (status == LUA_ERRERR && memory_refused)) {
            /* Ended by a limit: unhandled, the limit's error the value (the results as the
             * walk would leave them). */
            /* Out of memory with no trip: the cap's refusal when there is a cap (its error says
             * so, and where), malloc's own failure when there is none. */
            lua_pushvalue(L, base + 5);
            luahier_pushlimitend(L, e, !tripped && g->limit == 0, plan, state, base + 4, is_error);
            lua_replace(L, base + 4);
            luahier_asvalue(L, e, base + 4, 1);
            lua_replace(L, base + 5);
            /* [+ 3 error, + 4 limit error, + 5 its type, + 6 the type the entry was called with] */
            luahier_recordlimitend(L, plan, state, base + 6, base + 5);
            lua_pop(L, 1);
            /* [+ 3 error, + 4 limit error, + 5 its type] -> the walk's layout */
            lua_pushinteger(L, LUAHIER_STATUS_UNHANDLED);
            lua_replace(L, base + 3);
            lua_pushinteger(L, 0);
            lua_pushnil(L);
            lua_rawgeti(L, state, LUAHIER_STATE_RECORD);
            if (!lua_toboolean(L, -1)) {
                lua_pop(L, 1);
                lua_pushnil(L);
            }
            /* [status, limit error, type, slot, choice, record] -> [status, slot, choice, record, value, type] */
            lua_rotate(L, base + 4, -2);
            static const int held[] = {LUAHIER_STATE_VALUE, LUAHIER_STATE_BEFORE, LUAHIER_STATE_RECORD,
                                       LUAHIER_STATE_PASSED, LUAHIER_STATE_PASSEDTO};
            for (size_t i = 0; i < sizeof held / sizeof *held; i++) {
                lua_pushboolean(L, 0);
                lua_rawseti(L, state, held[i]);
            }
            r->status = LUAHIER_STATUS_UNHANDLED;
            r->slot = 0;
            r->is_error = 1;
            r->chain_cut = luahier_slot(L, plan, LUAHIER_PLAN_END) == LUAHIER_STATUS_DETACHED;
            break;
        }
        if (status == LUA_ERRERR) {
            /* The message handler itself failed: the error says so. */
            lua_createtable(L, 0, 2);
            luahier_pushword(L, e, LUAHIER_WORD_TYPE);
            luahier_pushword(L, e, LUAHIER_WORD_LUAERROR);
            lua_rawset(L, -3);
            luahier_pushword(L, e, LUAHIER_WORD_MESSAGE);
            lua_pushfstring(L, "error while handling an error: %s",
                            lua_type(L, base + 3) == LUA_TSTRING ? lua_tostring(L, base + 3) : "?");
            lua_rawset(L, -3);
            lua_replace(L, base + 3);
        }
        /* The error walks on from the entry that raised it:
         * walk(plan, state, value, type, is error, slot, error). */
        lua_rawgeti(L, plan, LUAHIER_PLAN_WALK);
        lua_pushvalue(L, plan);
        lua_pushvalue(L, state);
        lua_pushvalue(L, base + 4);
        lua_pushvalue(L, base + 5);
        lua_pushboolean(L, is_error);
        lua_pushinteger(L, slot);
        lua_pushvalue(L, base + 3);
        lua_rotate(L, base + 3, -3);
        lua_settop(L, base + 2 + 8);
        args = 7;
    }
    g->memory_refused = caller_refused;
    r->tripped = tripped;
    r->choice = base + 5;
    r->trace = base + 6;
    r->value = base + 7;
    r->type = base + 8;
    if (e->observes || (e->presents && depth >= e->presents_from && r->is_error && r->status != LUAHIER_STATUS_HANDLED))
        e->ended(e->host, L, plan, r);
    e->threads[depth] = NULL;
    --*e->depth;
    g->in_host = caller_in_host;
    return 0;
}

long long luahier_dispatchserial(const luahier_Engine *e) {
    long depth = *e->depth;
    return depth >= 1 && depth <= LUAHIER_MAX_DEPTH ? e->serials[depth] : 0;
}

/* [-0, +0, -] In each walk under way on `T` (its frames' first argument is the plan), the
 * entries of `object` call the skipper. */
static void luahier_skipin(lua_State *T, const luahier_Engine *e, const void *object) {
    lua_Debug ar;
    for (int level = 0; lua_getstack(T, level, &ar); level++) {
        if (!lua_checkstack(T, 4)) return;
        lua_getinfo(T, "f", &ar);
        lua_rawgeti(T, LUA_REGISTRYINDEX, e->walk_ref);
        lua_rawgeti(T, LUA_REGISTRYINDEX, e->traced_walk_ref);
        int walk = lua_rawequal(T, -1, -3) || lua_rawequal(T, -2, -3);
        lua_pop(T, 3);
        if (!walk || lua_getlocal(T, &ar, 1) == NULL) continue;
        if (lua_type(T, -1) == LUA_TTABLE) {
            int plan = lua_gettop(T);
            lua_Integer last = luahier_slot(T, plan, LUAHIER_PLAN_LAST);
            for (lua_Integer slot = luahier_slot(T, plan, LUAHIER_PLAN_EVENTS); slot < last; slot += LUAHIER_ENTRY_STRIDE) {
                lua_rawgeti(T, plan, slot + LUAHIER_ENTRY_OBJECT);
                const void *held = lua_type(T, -1) == LUA_TLIGHTUSERDATA ? lua_touserdata(T, -1)
                                 : lua_type(T, -1) == LUA_TUSERDATA ? *(void **)lua_touserdata(T, -1) : NULL;
                lua_pop(T, 1);
                if (held != object) continue;
                luahier_pushskipper(T);
                lua_rawseti(T, plan, slot + LUAHIER_ENTRY_CALL);
            }
        }
        lua_pop(T, 1);
    }
}

void luahier_skipremoved(lua_State *L, const luahier_Engine *e, const void *object) {
    (void)L;
    for (long depth = 1; depth <= *e->depth && depth <= LUAHIER_MAX_DEPTH; depth++) {
        lua_State *T = e->threads[depth];
        int seen = 0;
        for (long earlier = 1; earlier < depth; earlier++) seen |= e->threads[earlier] == T;
        if (T != NULL && !seen) luahier_skipin(T, e, object);
    }
}

/* ---- node:triggerEvent, node:reportError ------------------------------------------------ */

/* The upvalues after the trampoline's two (its Swift entry and function index). */
#define LUAHIER_UP(n) lua_upvalueindex((n) + 2)
#define LUAHIER_UPWORD(w) LUAHIER_UP(LUAHIER_TRIGGER_WORDS + (w))

/* [-0, +1, m] Keeps, for the outcome at `outcome`, what its trace is made of when first read:
 * pending[outcome] = {plan, record}, which the record is (LUAHIER_TRACE_PLAN, _SELF). Pushes
 * the metatable of a traced outcome. */
static void luahier_keeptrace(lua_State *L, int outcome, int record) {
    lua_pushvalue(L, outcome);
    lua_pushvalue(L, record);
    lua_rawset(L, LUAHIER_UP(LUAHIER_TRIGGER_PENDING));
    lua_pushvalue(L, LUAHIER_UP(LUAHIER_TRIGGER_TRACEDMETA));
}

/* [-0, +1, m] The outcome table of the dispatch `r` describes, along the plan at `plan`. Each
 * field: its key (a word from the upvalues), its value, one raw set. */
static void luahier_pushoutcome(lua_State *L, int plan, const luahier_Result *r) {
    int handled = r->status == LUAHIER_STATUS_HANDLED;
    int chosen = handled && !lua_isnil(L, r->choice);
    /* Sized exactly: four fields, six when handled (a table of four hash slots is half one of eight). */
    lua_createtable(L, 0, 4 + (handled ? 2 : 0) + (chosen ? 1 : 0));
    int outcome = lua_gettop(L);
    lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_STATUS));
    lua_pushvalue(L, LUAHIER_UPWORD(handled ? LUAHIER_WORD_HANDLED
                                    : r->status == LUAHIER_STATUS_DETACHED ? LUAHIER_WORD_DETACHED
                                                                           : LUAHIER_WORD_UNHANDLED));
    lua_rawset(L, outcome);
    lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_KIND));
    lua_pushvalue(L, LUAHIER_UPWORD(r->is_error ? LUAHIER_WORD_ERROR : LUAHIER_WORD_EVENT));
    lua_rawset(L, outcome);
    lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_VALUE));
    lua_pushvalue(L, r->value);
    lua_rawset(L, outcome);
    lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_AT));
    lua_rawgeti(L, plan, LUAHIER_PLAN_AT);
    lua_rawset(L, outcome);
    if (handled) {
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_BY));
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_NODE);
        lua_rawset(L, outcome);
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_RESPONDER));
        lua_createtable(L, 0, 3);
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_INDEX));
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_INDEX);
        lua_rawset(L, -3);
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_WHERE));
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_WHERE);
        lua_rawset(L, -3);
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_KIND));
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_KIND);
        lua_rawset(L, -3);
        lua_rawset(L, outcome);
    }
    if (chosen) {
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_CHOICE));
        lua_pushvalue(L, r->choice);
        lua_rawset(L, outcome);
    }
    if (!lua_isnil(L, r->trace)) luahier_keeptrace(L, outcome, r->trace);
    else lua_pushvalue(L, LUAHIER_UP(LUAHIER_TRIGGER_OUTCOMEMETA));
    lua_setmetatable(L, outcome);
}

int luahier_trigger(lua_State *L) {
    luahier_Engine *e = (luahier_Engine *)lua_touserdata(L, LUAHIER_UP(LUAHIER_TRIGGER_ENGINE));
    int is_error = lua_toboolean(L, LUAHIER_UP(LUAHIER_TRIGGER_DOMAIN));
    /* Anything but (node, value of the domain) goes to the host, which words the error. */
    if (lua_gettop(L) < 2 || lua_type(L, 1) != LUA_TUSERDATA || !lua_getmetatable(L, 1)) return luahier_trampoline(L);
    int node_userdata = lua_rawequal(L, -1, LUAHIER_UP(LUAHIER_TRIGGER_NODEMETA));
    lua_pop(L, 1);
    void *node = node_userdata ? *(void **)lua_touserdata(L, 1) : NULL;
    if (node == NULL) return luahier_trampoline(L);
    lua_settop(L, 2);
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host;
    /* As for a raised table: an error without a message reads as its __tostring. */
    if (is_error) luahier_givetostringmessage(L, 2);
    g->in_host = 1;
    luahier_Keys keys = {LUAHIER_UPWORD(LUAHIER_WORD_TYPE)};
    if (!luahier_asvaluewith(L, e, 2, is_error, &keys)) {
        g->in_host = caller_in_host;
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* [node, value, type] A reported error is `where` it was reported, unless it says otherwise. */
    if (is_error && !luahier_isfrozen(L, 2)) {
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_WHERE));
        if (lua_rawget(L, 2) == LUA_TNIL && luahier_pushwhere(L, 1)) {
            lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_WHERE));
            lua_insert(L, -2);
            lua_rawset(L, 2);
        }
        lua_settop(L, 3);
    }
    /* A dispatch's own budget, inside what is left of the running one: a trip ends the
     * dispatch, and the caller goes on if its own budget is not spent. Making its plan is the
     * dispatch's work: a plan that trips a limit ends the dispatch, not its caller. */
    luahier_charge(L, e->dispatch_charge);
    luahier_Budget enclosing;
    luahier_pushbudget(L, &enclosing, e->dispatch_instructions, e->dispatch_seconds);
    /* The node's plan, kept by its address while the tree's chains stand still. */
    lua_pushlightuserdata(L, node);
    if (*e->changes != e->plans_epoch || lua_rawget(L, LUAHIER_UP(LUAHIER_TRIGGER_PLANS)) != LUA_TTABLE) {
        lua_settop(L, 3);
        e->plan_for(e->host, L, node);
    }
    g->in_host = caller_in_host;
    /* [node, value, type, plan] */
    luahier_Result r;
    int failed = luahier_rundispatch(L, e, 4, 2, 3, is_error, &r);
    luahier_popbudget(L, &enclosing);
    g->in_host = 1;
    if (failed) {
        /* Nested past the limit: raised at the caller's line. */
        e->push_failure(e->host, L, failed);
        lua_pushvalue(L, LUAHIER_UPWORD(LUAHIER_WORD_WHERE));
        if (luahier_pushwhere(L, 1)) lua_rawset(L, -3);
        else lua_pop(L, 1);
        g->in_host = caller_in_host;
        return lua_error(L);
    }
    luahier_pushoutcome(L, 4, &r);
    g->in_host = caller_in_host;
    return 1;
}
