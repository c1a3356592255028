/* JSON into Lua, and `luahier dispatch`'s lines answered in C (luahier_lines.h). */
#include "luahier_lines.h"
#include "walk_internal.h"
#include "luahier_engine.h"
#include "luahier_jsonwrite.h"
#include "luahier_limits.h"
#include "luahier_walk.h"
#include "luahier_watchdog.h"

#include <string.h>

/* The size a table at the reader's depth is made with: the size the last one there had. */
static int luahier_sizehint(const luahier_JSONMemory *memory, const luahier_JSONReader *r, int kind) {
    int at = r->depth - 1;
    if (memory == NULL || at >= LUAHIER_JSON_SHAPE_DEPTH) return 4;
    return kind == LUAHIER_JSON_IN_OBJECT ? memory->members[at] : memory->items[at];
}

/* Learns the size of the container just closed at the reader's depth. */
static void luahier_learnsize(luahier_JSONMemory *memory, const luahier_JSONReader *r, int kind) {
    if (memory == NULL || r->depth >= LUAHIER_JSON_SHAPE_DEPTH) return;
    uint32_t size = r->counts[r->depth];
    unsigned char *sizes = kind == LUAHIER_JSON_IN_OBJECT ? memory->members : memory->items;
    sizes[r->depth] = (unsigned char)(size < 64 ? size : 64);
}

int luahier_pushjson(lua_State *L, luahier_JSONReader *r, int depth, luahier_JSONMemory *memory) {
    int top = lua_gettop(L);
    luahier_jsonbegin(r, depth);
    for (;;) {
        switch (luahier_jsonnext(r)) {
        case LUAHIER_JSON_BEGIN_OBJECT:
            /* Each open container holds its table and a key on the stack. */
            if (!lua_checkstack(L, 3)) break;
            lua_createtable(L, 0, luahier_sizehint(memory, r, LUAHIER_JSON_IN_OBJECT));
            continue;
        case LUAHIER_JSON_BEGIN_ARRAY:
            if (!lua_checkstack(L, 3)) break;
            lua_createtable(L, luahier_sizehint(memory, r, LUAHIER_JSON_IN_ARRAY), 0);
            continue;
        case LUAHIER_JSON_KEY:
            lua_pushlstring(L, r->string, r->string_length);
            continue;
        case LUAHIER_JSON_NULL: lua_pushnil(L); goto store;
        case LUAHIER_JSON_TRUE: lua_pushboolean(L, 1); goto store;
        case LUAHIER_JSON_FALSE: lua_pushboolean(L, 0); goto store;
        case LUAHIER_JSON_INTEGER: lua_pushinteger(L, (lua_Integer)r->integer); goto store;
        case LUAHIER_JSON_DOUBLE: lua_pushnumber(L, (lua_Number)r->number); goto store;
        case LUAHIER_JSON_STRING: lua_pushlstring(L, r->string, r->string_length); goto store;
        case LUAHIER_JSON_END_OBJECT: luahier_learnsize(memory, r, LUAHIER_JSON_IN_OBJECT); goto store;
        case LUAHIER_JSON_END_ARRAY: luahier_learnsize(memory, r, LUAHIER_JSON_IN_ARRAY); goto store;
        default:
            lua_settop(L, top);
            return 0;
        }
        /* Out of stack (only past any depth a reader follows). */
        luahier_jsonfail(r, "nesting too deep for the Lua stack");
        lua_settop(L, top);
        return 0;
    store:
        /* A value is complete: it goes into its container, or it is the one read. A null member
         * stores nil, which leaves the field absent. */
        if (r->depth == 0) return 1;
        if (r->kinds[r->depth - 1] == LUAHIER_JSON_IN_OBJECT) lua_rawset(L, -3);
        else lua_rawseti(L, -2, (lua_Integer)r->counts[r->depth - 1]);
    }
}

/* The member `key` names: its slot after `top` (id, at, payload), or 0 for any other. */
static int luahier_requestslot(const char *key, size_t length, int *is_error) {
    if (length == 2 && key[0] == 'i' && key[1] == 'd') return 1;
    if (length == 2 && key[0] == 'a' && key[1] == 't') return 2;
    if (length == 5 && memcmp(key, "event", 5) == 0) { *is_error = 0; return 3; }
    if (length == 5 && memcmp(key, "error", 5) == 0) { *is_error = 1; return 3; }
    return 0;
}

/* [-0, +(0|1), m] The plan of the node at the path at `path`: kept by path while the plans are
 * current (luahier_Engine.plans_epoch), else asked of the host. Returns 0 when there is none. */
static int luahier_pushplanat(lua_State *L, luahier_Engine *e, int path) {
    if (*e->changes == e->plans_epoch) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, e->plans_ref);
        lua_pushvalue(L, path);
        if (lua_rawget(L, -2) == LUA_TTABLE) {
            lua_remove(L, -2);
            return 1;
        }
        lua_pop(L, 2);
    }
    size_t length;
    const char *bytes = lua_tolstring(L, path, &length);
    return e->plan_at(e->host, L, bytes, length);
}

int luahier_readrequest(lua_State *L, luahier_Engine *e, const char *bytes, size_t length, int depth_limit,
                        const char *input, long number, luahier_Request *request) {
    int top = lua_gettop(L);
    if (!lua_checkstack(L, 12)) return LUAHIER_REQUEST_HOST;
    luahier_JSONReader reader;
    luahier_jsoninit(&reader, bytes, length, depth_limit, 1);
    /* [id, at (then the plan), value (then its type)] */
    lua_settop(L, top + 3);
    int seen[4] = { 0, 0, 0, 0 };
    int is_error = 0;
    if (luahier_jsonmember(&reader) != LUAHIER_JSON_BEGIN_OBJECT) goto host;
    for (;;) {
        int token = luahier_jsonmember(&reader);
        if (token == LUAHIER_JSON_END_OBJECT) break;
        if (token != LUAHIER_JSON_KEY) goto host;
        /* Any other member, or one given twice (two payloads among them), is the host's to word. */
        int slot = luahier_requestslot(reader.string, reader.string_length, &is_error);
        if (slot == 0 || seen[slot]++) goto host;
        if (!luahier_pushjson(L, &reader, 1, &e->json_memory)) goto host;
        lua_replace(L, top + slot);
    }
    if (!luahier_jsonexpectend(&reader) || !seen[2] || !seen[3]) goto host;
    /* Read as the host's (no refusal halfway through a value): one past the memory cap is the
     * host's to refuse (LineProcessor). */
    const luahier_Guard *g = luahier_guard(L);
    if (g->limit && g->used > g->limit) goto host;
    /* An id is echoed as it came; a table cannot say whether it came as [] or {}. */
    if (lua_type(L, top + 1) == LUA_TTABLE || lua_type(L, top + 2) != LUA_TSTRING) goto host;
    if (!luahier_pushplanat(L, e, top + 2)) goto host;
    lua_replace(L, top + 2);
    if (!luahier_asvalue(L, e, top + 3, is_error)) goto host;
    if (is_error) {
        /* [id, plan, value, type] An error names its input line unless it names a place. */
        lua_pushfstring(L, "%s:%I", input, (LUAI_UACINT)number);
        luahier_setifabsent(L, e, top + 3, LUAHIER_WORD_WHERE, -1);
        lua_settop(L, top + 4);
    }
    luahier_jsonfree(&reader);
    request->has_id = seen[1];
    request->is_error = is_error;
    return LUAHIER_REQUEST_READY;
host:
    luahier_jsonfree(&reader);
    lua_settop(L, top);
    return LUAHIER_REQUEST_HOST;
}

/* `,"status":…,"kind":…,"value":` by status and domain. */
static const char *const luahier_outcomeheads[3][2] = {
    { ",\"status\":\"handled\",\"kind\":\"event\",\"value\":", ",\"status\":\"handled\",\"kind\":\"error\",\"value\":" },
    { ",\"status\":\"unhandled\",\"kind\":\"event\",\"value\":", ",\"status\":\"unhandled\",\"kind\":\"error\",\"value\":" },
    { ",\"status\":\"detached\",\"kind\":\"event\",\"value\":", ",\"status\":\"detached\",\"kind\":\"error\",\"value\":" },
};

#define LUAHIER_APPEND(out, literal) luahier_jsonappend(out, literal, sizeof literal - 1)

/* [-0, +0, m] `,"key":` and the string at slot `slot` of the plan at `plan`. */
static int luahier_appendfield(lua_State *L, luahier_JSONOut *out, const char *key, size_t key_length, int plan,
                               lua_Integer slot) {
    if (!luahier_jsonappend(out, key, key_length)) return LUAHIER_JSON_LIMIT;
    lua_rawgeti(L, plan, slot);
    size_t length;
    const char *bytes = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &length) : NULL;
    int result = bytes ? luahier_appendjsonstring(out, bytes, length) : LUAHIER_JSON_CAREFUL;
    lua_pop(L, 1);
    return result;
}

int luahier_writeoutcome(lua_State *L, long number, int id, int has_id, int plan, const luahier_Result *r,
                         size_t available, luahier_JSONOut *out) {
    luahier_jsonoutbegin(out);
    out->limit = (size_t)-1;
    /* {"line":N, its digits written backwards (no printf per line). */
    char line[32];
    char *end = line + sizeof line, *p = end;
    unsigned long magnitude = number < 0 ? 0 : (unsigned long)number;
    do { *--p = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude);
    p -= 8;
    memcpy(p, "{\"line\":", 8);
    int result = LUAHIER_JSON_WRITTEN;
    if (!luahier_jsonappend(out, p, (size_t)(end - p))) return LUAHIER_JSON_LIMIT;
    if (has_id) {
        if (!LUAHIER_APPEND(out, ",\"id\":")) return LUAHIER_JSON_LIMIT;
        if ((result = luahier_appendjson(L, id, out)) != LUAHIER_JSON_WRITTEN) return result;
    }
    const char *head = luahier_outcomeheads[r->status][r->is_error != 0];
    if (!luahier_jsonappend(out, head, strlen(head))) return LUAHIER_JSON_LIMIT;
    /* The value's JSON is held on the rules' behalf: at most what the memory cap leaves. */
    if (available < (size_t)-1 - out->size) out->limit = out->size + available;
    result = luahier_appendjson(L, r->value, out);
    out->limit = (size_t)-1;
    if (result != LUAHIER_JSON_WRITTEN) return result;
    if (r->status == LUAHIER_STATUS_HANDLED) {
        static const char by[] = ",\"by\":", responder[] = ",\"responder\":";
        if ((result = luahier_appendfield(L, out, by, sizeof by - 1, plan, r->slot + LUAHIER_ENTRY_NODE)) !=
                LUAHIER_JSON_WRITTEN ||
            (result = luahier_appendfield(L, out, responder, sizeof responder - 1, plan, r->slot + LUAHIER_ENTRY_WHERE)) !=
                LUAHIER_JSON_WRITTEN)
            return result;
    }
    switch (lua_type(L, r->choice)) {
    case LUA_TNIL: case LUA_TNONE: break;
    case LUA_TSTRING: {
        size_t choice_length;
        const char *choice = lua_tolstring(L, r->choice, &choice_length);
        if (!LUAHIER_APPEND(out, ",\"choice\":")) return LUAHIER_JSON_LIMIT;
        if ((result = luahier_appendjsonstring(out, choice, choice_length)) != LUAHIER_JSON_WRITTEN) return result;
        break;
    }
    default:
        return LUAHIER_JSON_CAREFUL;
    }
    return LUAHIER_APPEND(out, "}\n") ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
}

/* [-0, +0, m] Makes `r` a dispatch the running budget's trip ended: unhandled, the limit's
 * error its value (in its slot, with its type). */
static void luahier_answerwithlimit(lua_State *L, luahier_Result *r) {
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host;
    g->in_host = 1;
    luahier_pushlimiterror(L, g);
    lua_getfield(L, -1, "type");
    lua_replace(L, r->type);
    lua_replace(L, r->value);
    g->in_host = caller_in_host;
    r->status = LUAHIER_STATUS_UNHANDLED;
    r->is_error = 1;
    r->slot = 0;
    lua_pushnil(L);
    lua_replace(L, r->choice);
}

int luahier_answerrun(lua_State *L, luahier_Engine *e, luahier_LineRun *run) {
    luahier_Guard *g = luahier_guard(L);
    luahier_JSONOut *out = e->json_out;
    for (; run->next < run->count; run->next++) {
        const luahier_Line *line = &run->lines[run->next];
        if (line->oversized || luahier_interrupt_pending()) return LUAHIER_RUN_HOST;
        if (run->start_by > 0 && luahier_now() >= run->start_by) return LUAHIER_RUN_EXPIRED;
        if (g->watch) luahier_watchdog_name(g->watch, NULL, line->number);
        int top = lua_gettop(L);
        luahier_Request *request = &run->request;
        if (g->watch) luahier_watchdog_prepare_thread();
        /* The line's budget starts before its request is read: reading it and making its
         * node's plan are host work the line's limits bound (a plan trips them as it goes). */
        luahier_beginentry(L, run->instructions, run->seconds, run->scope);
        if (luahier_readrequest(L, e, run->chunk + line->start, (size_t)line->count, run->depth_limit, run->input,
                                line->number, request) != LUAHIER_REQUEST_READY) {
            luahier_endentry(L);
            return LUAHIER_RUN_HOST;
        }
        /* [id, plan, value, type] */
        long changes = *e->changes;
        long presented = *run->presented;
        luahier_Result *r = run->result;
        luahier_rundispatch(L, e, top + 2, top + 3, top + 4, request->is_error, r);
        if (r->tripped == LUAHIER_TRIPPED_INTERRUPTED) {
            luahier_endentry(L);
            lua_settop(L, top);
            return LUAHIER_RUN_INTERRUPTED;
        }
        /* Written inside the line's budget: its JSON is host work the line's limits bound. */
        int written = LUAHIER_JSON_CAREFUL;
        if (lua_type(L, r->trace) != LUA_TTABLE && *run->presented == presented) {
            for (int collected = 0;; collected = 1) {
                size_t available = g->limit == 0 ? (size_t)-1 : g->used >= g->limit ? 0 : g->limit - g->used;
                written = luahier_writeoutcome(L, line->number, top + 1, request->has_id, top + 2, r, available, out);
                if (written == LUAHIER_JSON_LIMIT && out->stopped) {
                    /* The budget ran out while the value was written (a value that holds one
                     * table many times reads as exponentially many bytes): the line ends with
                     * the limit's error, as if its dispatch had. */
                    luahier_answerwithlimit(L, r);
                    written = luahier_writeoutcome(L, line->number, top + 1, request->has_id, top + 2, r, (size_t)-1, out);
                    break;
                }
                /* What the cap leaves may be held by garbage (the tables of the lines before):
                 * collected once, as Lua does before it refuses, so identical lines get
                 * identical answers whatever came before them. */
                if (written != LUAHIER_JSON_LIMIT || g->limit == 0 || collected) break;
                int caller_in_host = g->in_host;
                g->in_host = 1;
                lua_gc(L, LUA_GCCOLLECT);
                g->in_host = caller_in_host;
            }
        }
        luahier_endentry(L);
        if (written == LUAHIER_JSON_WRITTEN && !run->deliver(run->context, out->bytes, out->size)) {
            written = LUAHIER_JSON_LIMIT;
        }
        /* Delivered (written or copied): a buffer that grew for a large answer goes. */
        if (written == LUAHIER_JSON_WRITTEN) luahier_jsonshrink(out, 1 << 20);
        if (written != LUAHIER_JSON_WRITTEN) return LUAHIER_RUN_DISPATCHED;
        lua_settop(L, top);
        run->counts[r->status]++;
        if (*e->changes != changes) {
            run->next++;
            return LUAHIER_RUN_CHANGED;
        }
    }
    return LUAHIER_RUN_DONE;
}
