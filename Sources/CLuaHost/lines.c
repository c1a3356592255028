/* JSON into Lua, and `luahier dispatch`'s lines answered in C (luahier_lines.h). */
#include "luahier_lines.h"
#include "walk_internal.h"
#include "luahier_engine.h"
#include "luahier_jsonwrite.h"
#include "luahier_limits.h"
#include "luahier_walk.h"
#include "luahier_watchdog.h"
#include "luahier_tape.h"

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

/* As luahier_pushjson, the value made with `room` more members than it has when it is an
 * object (for the fields the host adds to it). */
static int luahier_pushjsonwithroom(lua_State *L, luahier_JSONReader *r, int depth, luahier_JSONMemory *memory,
                                    int room) {
    int top = lua_gettop(L);
    luahier_jsonbegin(r, depth);
    for (;;) {
        switch (luahier_jsonnext(r)) {
        case LUAHIER_JSON_BEGIN_OBJECT:
            /* Each open container holds its table and a key on the stack. */
            if (!lua_checkstack(L, 3)) break;
            lua_createtable(L, 0, luahier_sizehint(memory, r, LUAHIER_JSON_IN_OBJECT) + (lua_gettop(L) == top ? room : 0));
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

int luahier_pushjson(lua_State *L, luahier_JSONReader *r, int depth, luahier_JSONMemory *memory) {
    return luahier_pushjsonwithroom(L, r, depth, memory, 0);
}

/* Where a container's item or member goes as a tape is walked. */
typedef struct luahier_TapeLevel {
    int is_object;
    lua_Integer items;
} luahier_TapeLevel;

/* Why a tape's reading was refused: its message and column. */
typedef struct luahier_TapeRefusal {
    const char *message;
    size_t length;
    size_t column;
} luahier_TapeRefusal;

/* The refusal whose word is at `p` (LUAHIER_TAPE_FAILED). */
static void luahier_taperefusal(const uint64_t *p, luahier_TapeRefusal *refusal) {
    refusal->length = LUAHIER_TAPE_SIZE(p[0]);
    refusal->column = (size_t)p[1];
    refusal->message = (const char *)(p + 2);
}

/* A table is made at its final size, up to this many slots (past it, it grows as it fills). */
#define LUAHIER_TAPE_PRESIZE (1 << 24)
static int luahier_presize(uint64_t word) {
    size_t size = LUAHIER_TAPE_SIZE(word);
    return size < LUAHIER_TAPE_PRESIZE ? (int)size : LUAHIER_TAPE_PRESIZE;
}

/* [-0, +(0|1), m] The value whose tokens start at `*cursor`, on the tape of `line`, made as
 * luahier_pushjson makes it from the reader (each table at its final size, an object read
 * whole with `room` more members): 1 with `*cursor` past it, or 0 with nothing pushed and
 * `refusal` saying why (the tape's, or the Lua stack out of room). */
static int luahier_pushtape(lua_State *L, const uint64_t **cursor, const char *line, int room,
                            luahier_TapeRefusal *refusal) {
    luahier_TapeLevel levels[LUAHIER_JSON_MAX_DEPTH];
    const uint64_t *p = *cursor;
    int top = lua_gettop(L);
    int depth = 0;
    for (;;) {
        uint64_t word = *p;
        switch (LUAHIER_TAPE_TAG(word)) {
        case LUAHIER_TAPE_OBJECT:
        case LUAHIER_TAPE_ARRAY:
            /* Each open container holds its table and a key on the stack. */
            if (!lua_checkstack(L, 3)) {
                /* Out of stack (only past any depth a reader follows): where the reader was
                 * after the container's bracket. */
                static const char message[] = "nesting too deep for the Lua stack";
                refusal->message = message;
                refusal->length = sizeof message - 1;
                refusal->column = (size_t)p[1] + 1;
                lua_settop(L, top);
                return 0;
            }
            levels[depth].is_object = LUAHIER_TAPE_TAG(word) == LUAHIER_TAPE_OBJECT;
            levels[depth].items = 0;
            if (levels[depth].is_object) lua_createtable(L, 0, luahier_presize(word) + (depth == 0 ? room : 0));
            else lua_createtable(L, luahier_presize(word), 0);
            depth++;
            p += 2;
            continue;
        case LUAHIER_TAPE_KEY_AT:
            lua_pushlstring(L, line + p[1], LUAHIER_TAPE_SIZE(word));
            p += 2;
            continue;
        case LUAHIER_TAPE_KEY_HERE:
            lua_pushlstring(L, (const char *)(p + 1), LUAHIER_TAPE_SIZE(word));
            p += 1 + LUAHIER_TAPE_WORDS(LUAHIER_TAPE_SIZE(word));
            continue;
        case LUAHIER_TAPE_STRING_AT:
            lua_pushlstring(L, line + p[1], LUAHIER_TAPE_SIZE(word));
            p += 2;
            break;
        case LUAHIER_TAPE_STRING_HERE:
            lua_pushlstring(L, (const char *)(p + 1), LUAHIER_TAPE_SIZE(word));
            p += 1 + LUAHIER_TAPE_WORDS(LUAHIER_TAPE_SIZE(word));
            break;
        case LUAHIER_TAPE_INTEGER:
            lua_pushinteger(L, (lua_Integer)(int64_t)p[1]);
            p += 2;
            break;
        case LUAHIER_TAPE_DOUBLE: {
            double number;
            memcpy(&number, p + 1, sizeof number);
            lua_pushnumber(L, (lua_Number)number);
            p += 2;
            break;
        }
        case LUAHIER_TAPE_NULL: lua_pushnil(L); p++; break;
        case LUAHIER_TAPE_TRUE: lua_pushboolean(L, 1); p++; break;
        case LUAHIER_TAPE_FALSE: lua_pushboolean(L, 0); p++; break;
        case LUAHIER_TAPE_END: depth--; p++; break;
        default:
            luahier_taperefusal(p, refusal);
            lua_settop(L, top);
            return 0;
        }
        /* A value is complete: it goes into its container, or it is the one read. A null member
         * stores nil, which leaves the field absent. */
        if (depth == 0) {
            *cursor = p;
            return 1;
        }
        if (levels[depth - 1].is_object) lua_rawset(L, -3);
        else lua_rawseti(L, -2, ++levels[depth - 1].items);
    }
}

int luahier_pushtapevalue(lua_State *L, const uint64_t *tape, const char *bytes, const char **message,
                          size_t *message_length, size_t *column) {
    const uint64_t *p = tape + 1;
    luahier_TapeRefusal refusal;
    if (luahier_pushtape(L, &p, bytes, 0, &refusal)) {
        if (LUAHIER_TAPE_TAG(*p) == LUAHIER_TAPE_VALUE_END) return 1;
        lua_pop(L, 1);
        luahier_taperefusal(p, &refusal);
    }
    *message = refusal.message;
    *message_length = refusal.length;
    *column = refusal.column;
    return 0;
}

/* [-0, +(0|1), m] The plan of the node at the path at `path`: kept by path while the plans are
 * current (luahier_Engine.plans_epoch), else asked of the host. Returns LUAHIER_PLAN_FOUND (the
 * plan pushed), or _NO_NODE / _NOT_A_PATH with nothing pushed. With `make` 0, the host only
 * looks the node up (nothing pushed). */
static int luahier_pushplanat(lua_State *L, luahier_Engine *e, int path, int make) {
    if (make && *e->changes == e->plans_epoch) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, e->plans_ref);
        lua_pushvalue(L, path);
        if (lua_rawget(L, -2) == LUA_TTABLE) {
            lua_remove(L, -2);
            return LUAHIER_PLAN_FOUND;
        }
        lua_pop(L, 2);
    }
    size_t length;
    const char *bytes = lua_tolstring(L, path, &length);
    return e->plan_at(e->host, L, bytes, length, make);
}

/* [-0, +0, m] Whether what the state holds fits under its memory cap, after a full collection
 * if it seemed not to (always, without a cap). */
static int luahier_fitscap(lua_State *L) {
    luahier_Guard *g = luahier_guard(L);
    if (g->limit == 0 || g->used <= g->limit) return 1;
    int caller_in_host = g->in_host;
    g->in_host = 1;
    lua_gc(L, LUA_GCCOLLECT);
    g->in_host = caller_in_host;
    return g->used <= g->limit;
}

/* Ends a request's reading with `refusal`: for LUAHIER_REFUSE_JSON, the reader's message (in
 * `why`) at `top + 4`. */
static int luahier_refuse(lua_State *L, const luahier_TapeRefusal *why, int top, luahier_Request *request, int refusal) {
    if (refusal == LUAHIER_REFUSE_JSON) {
        lua_pushlstring(L, why->message, why->length);
        lua_replace(L, top + 4);
        request->column = (long)why->column;
    }
    request->refusal = refusal;
    return LUAHIER_REQUEST_REFUSED;
}

/* As luahier_refuse, returning the refusal: how the member readers end. */
static int luahier_refusedas(lua_State *L, const luahier_TapeRefusal *why, int top, luahier_Request *request, int refusal) {
    luahier_refuse(L, why, top, request, refusal);
    return refusal;
}

/* Refuses a request whose tape says at `p` why it is not JSON: LUAHIER_REFUSE_JSON. */
static int luahier_refusejson(lua_State *L, const uint64_t *p, int top, luahier_Request *request) {
    luahier_TapeRefusal why;
    luahier_taperefusal(p, &why);
    return luahier_refusedas(L, &why, top, request, LUAHIER_REFUSE_JSON);
}

/* A string on the tape at `p` (as a member's key): its bytes and length; returns the word
 * after it. */
static const uint64_t *luahier_tapestring(const uint64_t *p, const char *line, const char **bytes, size_t *length) {
    *length = LUAHIER_TAPE_SIZE(p[0]);
    if (LUAHIER_TAPE_TAG(p[0]) == LUAHIER_TAPE_STRING_AT) {
        *bytes = line + p[1];
        return p + 2;
    }
    *bytes = (const char *)(p + 1);
    return p + 1 + LUAHIER_TAPE_WORDS(*length);
}

/* [-0, +1, m] `INPUT:N`, the place an error read from line N of INPUT names: what
 * lua_pushfstring("%s:%I") makes, at a tenth of its cost (it is made for every error line). */
static void luahier_pushinputline(lua_State *L, const char *input, long number) {
    char text[256];
    size_t length = strlen(input);
    if (number < 0 || length > sizeof text - 24) {
        lua_pushfstring(L, "%s:%I", input, (LUAI_UACINT)number);
        return;
    }
    memcpy(text, input, length);
    text[length++] = ':';
    char digits[24];
    int count = 0;
    do {
        digits[count++] = (char)('0' + number % 10);
        number /= 10;
    } while (number > 0);
    while (count > 0) text[length++] = digits[--count];
    lua_pushlstring(L, text, length);
}

/* What reading a request's members leaves for the checks after them. */
typedef struct luahier_Members {
    int seen_at, unknown, is_error;
} luahier_Members;

/* [-0, +0, m] Names the first unknown member, `key`, at `top + 4`. */
static void luahier_noteunknown(lua_State *L, luahier_Members *m, int top, const char *key, size_t length) {
    if (m->unknown++) return;
    lua_pushlstring(L, key, length);
    lua_replace(L, top + 4);
}

/* [-1, +0, -] Keeps the value of member `slot` pushed (nil for an id read from its text), its
 * JSON text from `start` to `end` in the line: the last of a member given twice counts, a
 * null payload is an absent one, a long string id is the host's to echo. */
static void luahier_keepmember(lua_State *L, luahier_Request *request, luahier_Members *m, int top, int slot,
                               int member_is_error, size_t start, size_t end) {
    if (slot == 1 && !request->id_is_text) {
        /* The memory cap counts what the request's payload takes, not its id (dropped here,
         * it is garbage). */
        request->id_is_text = lua_type(L, -1) == LUA_TSTRING && lua_rawlen(L, -1) > LUAHIER_ID_KEPT;
        if (request->id_is_text) {
            lua_pop(L, 1);
            lua_pushnil(L);
        }
    }
    if (slot == 3) {
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return;
        }
        request->payloads++;
        request->payload_kinds |= member_is_error ? 2 : 1;
        m->is_error = member_is_error;
    }
    lua_replace(L, top + slot);
    if (slot == 1) {
        request->has_id = 1;
        request->id_start = (long)start;
        request->id_length = (long)(end - start);
    } else if (slot == 2) {
        m->seen_at = 1;
        request->at_start = (long)start;
        request->at_length = (long)(end - start);
    }
}

/* [-0, +0, m] A request's members read from its tape into their slots: LUAHIER_REFUSE_NONE, or
 * the refusal it ends with (_JSON with the reader's message at `top + 4`, or _NOT_OBJECT). */
static int luahier_tapemembers(lua_State *L, const char *bytes, const uint64_t *tape, int top, luahier_Request *request,
                               luahier_Members *m) {
    const uint64_t *p = tape + 1;   /* past the depth limit it was read with */
    if (LUAHIER_TAPE_TAG(*p) == LUAHIER_TAPE_NOT_OBJECT) return luahier_refusedas(L, NULL, top, request, LUAHIER_REFUSE_NOT_OBJECT);
    for (;;) {
        uint64_t word = *p;
        if (LUAHIER_TAPE_TAG(word) == LUAHIER_TAPE_REQUEST_END) return LUAHIER_REFUSE_NONE;
        if (LUAHIER_TAPE_TAG(word) != LUAHIER_TAPE_MEMBER) return luahier_refusejson(L, p, top, request);
        size_t start = (size_t)p[1], end = (size_t)p[2];
        const char *key;
        size_t key_length;
        p = luahier_tapestring(p + 3, bytes, &key, &key_length);
        int member_is_error = 0;
        int slot = luahier_requestslot(key, key_length, &member_is_error);
        if (slot == 0) {
            /* Read through (its JSON must be good too). */
            luahier_noteunknown(L, m, top, key, key_length);
            if (LUAHIER_TAPE_TAG(*p) != LUAHIER_TAPE_SKIPPED) return luahier_refusejson(L, p, top, request);
            p++;
            continue;
        }
        if (LUAHIER_TAPE_TAG(*p) == LUAHIER_TAPE_SKIPPED) {
            /* An id is echoed as it came, nulls and all; a table cannot say whether it came as
             * [] or {}, nor its members' order: the host reads it from its text. */
            p++;
            lua_pushnil(L);
            request->id_is_text = 1;
        } else {
            if (slot == 1) request->id_is_text = 0;
            luahier_TapeRefusal why;
            /* An error read whole gets its `where` (luahier_readrequest): room for it. */
            if (!luahier_pushtape(L, &p, bytes, member_is_error, &why)) return luahier_refusedas(L, &why, top, request, LUAHIER_REFUSE_JSON);
        }
        luahier_keepmember(L, request, m, top, slot, member_is_error, start, end);
    }
}

/* Refuses a request the reader found not JSON: its message at `top + 4`. */
static int luahier_refusereader(lua_State *L, const luahier_JSONReader *r, int top, luahier_Request *request) {
    luahier_TapeRefusal why;
    why.message = r->message ? r->message : "invalid JSON";
    why.length = strlen(why.message);
    why.column = r->column;
    return luahier_refusedas(L, &why, top, request, LUAHIER_REFUSE_JSON);
}

/* [-0, +0, m] A request's members read straight from its bytes, the same way the tape was made
 * (tape.c): as luahier_tapemembers. */
static int luahier_directmembers(lua_State *L, luahier_Engine *e, luahier_JSONReader *reader, int top,
                                 luahier_Request *request, luahier_Members *m) {
    if (luahier_jsonmember(reader) != LUAHIER_JSON_BEGIN_OBJECT) {
        /* Not an object: still read through, so a text that is not JSON says so first. */
        if (!luahier_jsonskipvalue(reader) || !luahier_jsonexpectend(reader)) return luahier_refusereader(L, reader, top, request);
        return luahier_refusedas(L, NULL, top, request, LUAHIER_REFUSE_NOT_OBJECT);
    }
    for (;;) {
        int token = luahier_jsonmember(reader);
        if (token == LUAHIER_JSON_END_OBJECT) break;
        if (token != LUAHIER_JSON_KEY) return luahier_refusereader(L, reader, top, request);
        int member_is_error = 0;
        int slot = luahier_requestslot(reader->string, reader->string_length, &member_is_error);
        if (slot == 0) {
            luahier_noteunknown(L, m, top, reader->string, reader->string_length);
            if (!luahier_jsonskipvalue(reader)) return luahier_refusereader(L, reader, top, request);
            continue;
        }
        luahier_jsonskipspace(reader);
        size_t start = reader->index;
        if (slot == 1 && start < reader->length && (reader->bytes[start] == '[' || reader->bytes[start] == '{')) {
            reader->nulls_as_nil = 0;
            int read = luahier_jsonskipvalue(reader);
            reader->nulls_as_nil = 1;
            if (!read) return luahier_refusereader(L, reader, top, request);
            lua_pushnil(L);
            request->id_is_text = 1;
        } else {
            if (slot == 1) reader->nulls_as_nil = 0;
            int read = luahier_pushjsonwithroom(L, reader, 1, &e->json_memory, member_is_error);
            reader->nulls_as_nil = 1;
            if (!read) return luahier_refusereader(L, reader, top, request);
            if (slot == 1) request->id_is_text = 0;
        }
        luahier_keepmember(L, request, m, top, slot, member_is_error, start, reader->index);
    }
    if (!luahier_jsonexpectend(reader)) return luahier_refusereader(L, reader, top, request);
    return LUAHIER_REFUSE_NONE;
}

int luahier_readrequest(lua_State *L, luahier_Engine *e, const char *bytes, size_t length, const uint64_t *tape,
                        int depth_limit, const char *input, long number, luahier_Request *request) {
    int top = lua_gettop(L);
    memset(request, 0, sizeof *request);
    /* The 4 slots, a container being read (the readers check their own), a plan looked up
     * (2), the value rules (3). */
    if (!lua_checkstack(L, 12)) {
        lua_settop(L, top + 4);
        request->refusal = LUAHIER_REFUSE_MEMORY;
        return LUAHIER_REQUEST_REFUSED;
    }
    /* [id, at (then the plan), value (then its type), the first unknown key or the reader's
     * message] */
    lua_settop(L, top + 4);
    luahier_Members members = { 0, 0, 0 };
    int refused;
    if (tape != NULL) {
        refused = luahier_tapemembers(L, bytes, tape, top, request, &members);
    } else {
        luahier_JSONReader reader;
        luahier_jsoninit(&reader, bytes, length, depth_limit, 1);
        refused = luahier_directmembers(L, e, &reader, top, request, &members);
        luahier_jsonfree(&reader);
    }
    if (refused != LUAHIER_REFUSE_NONE) return LUAHIER_REQUEST_REFUSED;
    int seen_at = members.seen_at, unknown = members.unknown, is_error = members.is_error;
    request->is_error = is_error;
    /* The rest in the order a reader meets the fields (docs/line-protocol.md). */
    if (unknown) return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_UNKNOWN_FIELD);
    if (!seen_at) return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_NO_AT);
    if (lua_type(L, top + 2) != LUA_TSTRING) return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_AT_NOT_PATH);
    /* Read as the host's (no refusal halfway through a value): a request past the memory cap
     * is refused before any rule runs, and its node's plan is not made. */
    int fits = luahier_fitscap(L);
    switch (luahier_pushplanat(L, e, top + 2, fits)) {
    case LUAHIER_PLAN_FOUND: break;
    case LUAHIER_PLAN_NOT_A_PATH: return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_NOT_A_PATH);
    default: return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_NO_NODE);
    }
    if (fits) lua_replace(L, top + 2);
    if (request->payloads == 0) return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_NO_PAYLOAD);
    if (request->payloads > 1) return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_PAYLOADS);
    lua_settop(L, top + 3);
    if (!luahier_asvalue(L, e, top + 3, is_error)) {
        lua_settop(L, top + 4);
        return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_NOT_A_MESSAGE);
    }
    if (!fits) {
        lua_settop(L, top + 4);
        return luahier_refuse(L, NULL, top, request, LUAHIER_REFUSE_MEMORY);
    }
    if (is_error) {
        /* [id, plan, value, type] An error names its input line unless it names a place. */
        luahier_pushinputline(L, input, number);
        luahier_setifabsent(L, e, top + 3, LUAHIER_WORD_WHERE, -1);
        lua_settop(L, top + 4);
    }
    return LUAHIER_REQUEST_READY;
}

/* `,"status":…,"kind":…,"value":` by status and domain. */
static const char *const luahier_outcomeheads[3][2] = {
    { ",\"status\":\"handled\",\"kind\":\"event\",\"value\":", ",\"status\":\"handled\",\"kind\":\"error\",\"value\":" },
    { ",\"status\":\"unhandled\",\"kind\":\"event\",\"value\":", ",\"status\":\"unhandled\",\"kind\":\"error\",\"value\":" },
    { ",\"status\":\"detached\",\"kind\":\"event\",\"value\":", ",\"status\":\"detached\",\"kind\":\"error\",\"value\":" },
};

#define LUAHIER_APPEND(out, literal) luahier_jsonappend(out, literal, sizeof literal - 1)

/* [-0, +0, m] `key` (`,"name":`) and the field's JSON: a Lua value, or the host's JSON text. */
static int luahier_appendjsonfield(lua_State *L, luahier_JSONOut *out, const char *key, size_t key_length,
                                   const luahier_Field *field) {
    if (!luahier_jsonappend(out, key, key_length)) return LUAHIER_JSON_LIMIT;
    if (field->text) return luahier_jsonappend(out, field->text, field->length) ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
    if (field->index) return luahier_appendjson(L, field->index, out);
    return LUAHIER_APPEND(out, "null") ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
}

/* [-0, +0, m] `key` and the field as a JSON string: a Lua string, or the host's text; a Lua
 * value that is not a string is the careful writer's. */
static int luahier_appendstringfield(lua_State *L, luahier_JSONOut *out, const char *key, size_t key_length,
                                     const luahier_Field *field) {
    size_t length = field->length;
    const char *bytes = field->text;
    if (!bytes) {
        if (lua_type(L, field->index) != LUA_TSTRING) return LUAHIER_JSON_CAREFUL;
        bytes = lua_tolstring(L, field->index, &length);
    }
    if (!luahier_jsonappend(out, key, key_length)) return LUAHIER_JSON_LIMIT;
    return luahier_appendjsonstring(out, bytes, length);
}

static int luahier_hasfield(const luahier_Field *field) { return field->text != NULL || field->index != 0 || field->deferred; }

/* A count field (`,"name":N`), its digits written backwards (no printf per line). */
static int luahier_appendcount(luahier_JSONOut *out, const char *key, long count) {
    char digits[48];
    char *end = digits + sizeof digits, *p = end;
    unsigned long magnitude = count < 0 ? 0 : (unsigned long)count;
    do { *--p = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude);
    size_t key_length = strlen(key);
    p -= key_length;
    memcpy(p, key, key_length);
    return luahier_jsonappend(out, p, (size_t)(end - p));
}

/* [-0, +0, m] `key` and a JSON part; for a deferred part, its key alone: the host writes the
 * part after what `out` holds, and the writer goes on at `next` (set in `*stage`). */
static int luahier_appendpart(lua_State *L, luahier_JSONOut *out, const char *key, size_t key_length,
                              const luahier_Field *part, int next, int *stage) {
    if (!luahier_jsonappend(out, key, key_length)) return LUAHIER_JSON_LIMIT;
    if (!part->deferred) return luahier_appendjsonfield(L, out, "", 0, part);
    *stage = next;
    return LUAHIER_OUTCOME_DEFERRED;
}

#define LUAHIER_FIELD(L, out, kind, key, part) \
    if ((result = luahier_append##kind##field(L, out, key, sizeof key - 1, part)) != LUAHIER_JSON_WRITTEN) return result

int luahier_writeoutcome(lua_State *L, const luahier_Outcome *o, luahier_JSONOut *out, int *stage) {
    luahier_jsonoutbegin(out);
    out->limit = (size_t)-1;
    int result = LUAHIER_JSON_WRITTEN;
    switch (*stage) {
    case LUAHIER_OUTCOME_START:
        if (!luahier_appendcount(out, "{\"line\":", o->number)) return LUAHIER_JSON_LIMIT;
        if (o->has_id) { LUAHIER_FIELD(L, out, json, ",\"id\":", &o->id); }
        if (o->status == LUAHIER_OUTCOME_INVALID) {
            if (!LUAHIER_APPEND(out, ",\"status\":\"invalid\"")) return LUAHIER_JSON_LIMIT;
            LUAHIER_FIELD(L, out, string, ",\"error\":{\"type\":", &o->error_type);
            LUAHIER_FIELD(L, out, string, ",\"message\":", &o->error_message);
            LUAHIER_FIELD(L, out, string, ",\"where\":", &o->error_where);
            return LUAHIER_APPEND(out, "}}\n") ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
        }
        const char *head = luahier_outcomeheads[o->status][o->is_error != 0];
        if (!luahier_jsonappend(out, head, strlen(head))) return LUAHIER_JSON_LIMIT;
        if (o->value.deferred) {
            *stage = LUAHIER_OUTCOME_AFTER_VALUE;
            return LUAHIER_OUTCOME_DEFERRED;
        }
        /* The value's JSON is held on the rules' behalf: at most what the memory cap leaves. */
        if (o->value_room < (size_t)-1 - out->size) out->limit = out->size + o->value_room;
        result = o->value.text ? (luahier_jsonappend(out, o->value.text, o->value.length) ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT)
                               : luahier_appendjson(L, o->value.index, out);
        out->limit = (size_t)-1;
        if (result != LUAHIER_JSON_WRITTEN) return result;
        /* fallthrough */
    case LUAHIER_OUTCOME_AFTER_VALUE:
        if (luahier_hasfield(&o->by)) { LUAHIER_FIELD(L, out, string, ",\"by\":", &o->by); }
        if (luahier_hasfield(&o->responder)) { LUAHIER_FIELD(L, out, string, ",\"responder\":", &o->responder); }
        if (o->choice.text || (o->choice.index && !lua_isnil(L, o->choice.index))) {
            LUAHIER_FIELD(L, out, string, ",\"choice\":", &o->choice);
        }
        if (luahier_hasfield(&o->presented)) {
            static const char key[] = ",\"presented\":";
            result = luahier_appendpart(L, out, key, sizeof key - 1, &o->presented, LUAHIER_OUTCOME_AFTER_PRESENTED, stage);
            if (result != LUAHIER_JSON_WRITTEN) return result;
        }
        /* fallthrough */
    case LUAHIER_OUTCOME_AFTER_PRESENTED:
        if (o->presented_omitted > 0 && !luahier_appendcount(out, ",\"presentedOmitted\":", o->presented_omitted))
            return LUAHIER_JSON_LIMIT;
        if (luahier_hasfield(&o->trace)) {
            static const char key[] = ",\"trace\":";
            result = luahier_appendpart(L, out, key, sizeof key - 1, &o->trace, LUAHIER_OUTCOME_AFTER_TRACE, stage);
            if (result != LUAHIER_JSON_WRITTEN) return result;
        }
        /* fallthrough */
    case LUAHIER_OUTCOME_AFTER_TRACE:
        if (o->trace_omitted > 0 && !luahier_appendcount(out, ",\"traceOmitted\":", o->trace_omitted))
            return LUAHIER_JSON_LIMIT;
        return LUAHIER_APPEND(out, "}\n") ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
    default:
        return LUAHIER_JSON_WRITTEN;
    }
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

/* [-0, +(0|2), m] The outcome of the dispatch `r` describes, along the plan at `plan`: its
 * status, value and choice, and for a handled one the entry's node and place (pushed). */
static void luahier_fillresult(lua_State *L, luahier_Outcome *o, const luahier_Result *r, int plan) {
    o->status = r->status;
    o->is_error = r->is_error;
    o->value.index = r->value;
    o->choice.index = r->choice;
    o->by.index = o->responder.index = 0;
    if (r->status == LUAHIER_STATUS_HANDLED) {
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_NODE);
        o->by.index = lua_gettop(L);
        lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_WHERE);
        o->responder.index = lua_gettop(L);
    }
}

/* [-0, +0, -] Names the responder that handled `r` along the plan at `plan` in the run's
 * responder_* fields (NULL and 0 when none did). The strings stay in the plan, which outlives
 * the line's delivery. */
static void luahier_nameresponder(lua_State *L, luahier_LineRun *run, const luahier_Result *r, int plan) {
    run->responder_where = run->responder_node = NULL;
    run->responder_where_length = run->responder_node_length = 0;
    run->responder_index = 0;
    if (r->status != LUAHIER_STATUS_HANDLED) return;
    lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_WHERE);
    run->responder_where = lua_tolstring(L, -1, &run->responder_where_length);
    lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_NODE);
    run->responder_node = lua_tolstring(L, -1, &run->responder_node_length);
    lua_rawgeti(L, plan, r->slot + LUAHIER_ENTRY_INDEX);
    run->responder_index = (long)lua_tointeger(L, -1);
    lua_pop(L, 3);
}

/* The tape of `line` the run was handed, read ahead with the run's depth limit; NULL when it
 * has none (too long to tape, or never taped): it is read straight from its bytes. */
static const uint64_t *luahier_linetape(const luahier_LineRun *run, const luahier_Line *line) {
    if (run->tape != NULL && line->tape >= 0 && run->tape[line->tape] == (uint64_t)run->depth_limit) return run->tape + line->tape;
    return NULL;
}

int luahier_answerrun(lua_State *L, luahier_Engine *e, luahier_LineRun *run) {
    luahier_Guard *g = luahier_guard(L);
    luahier_JSONOut *out = e->json_out;
    for (; run->next < run->count; run->next++) {
        const luahier_Line *line = &run->lines[run->next];
        if (luahier_interrupt_pending()) return LUAHIER_RUN_INTERRUPTED;
        if (run->start_by > 0 && luahier_now() >= run->start_by) return LUAHIER_RUN_EXPIRED;
        if (line->oversized) return LUAHIER_RUN_TOO_LONG;
        if (g->watch) luahier_watchdog_name(g->watch, NULL, line->number);
        int top = lua_gettop(L);
        luahier_Request *request = &run->request;
        if (g->watch) luahier_watchdog_prepare_thread();
        /* The line's budget starts before its request is read: reading it and making its
         * node's plan are host work the line's limits bound (a plan trips them as it goes). */
        luahier_beginentry(L, run->instructions, run->seconds, run->scope);
        const char *bytes = run->chunk + line->start;
        if (luahier_readrequest(L, e, bytes, (size_t)line->count, luahier_linetape(run, line), run->depth_limit,
                                run->input, line->number, request) != LUAHIER_REQUEST_READY) {
            luahier_endentry(L);
            return LUAHIER_RUN_REFUSED;
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
        if (lua_type(L, r->trace) != LUA_TTABLE && *run->presented == presented && !request->id_is_text) {
            luahier_Outcome outcome;
            memset(&outcome, 0, sizeof outcome);
            outcome.number = line->number;
            outcome.has_id = request->has_id;
            outcome.id.index = top + 1;
            for (int collected = 0;; collected = 1) {
                luahier_fillresult(L, &outcome, r, top + 2);
                outcome.value_room = g->limit == 0 ? (size_t)-1 : g->used >= g->limit ? 0 : g->limit - g->used;
                int stage = LUAHIER_OUTCOME_START;
                written = luahier_writeoutcome(L, &outcome, out, &stage);
                if (written == LUAHIER_JSON_LIMIT && out->stopped) {
                    /* The budget ran out while the value was written (a value that holds one
                     * table many times reads as exponentially many bytes): the line ends with
                     * the limit's error, as if its dispatch had. */
                    luahier_answerwithlimit(L, r);
                    luahier_fillresult(L, &outcome, r, top + 2);
                    outcome.value_room = (size_t)-1;
                    stage = LUAHIER_OUTCOME_START;
                    written = luahier_writeoutcome(L, &outcome, out, &stage);
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
        if (run->names_responders && written == LUAHIER_JSON_WRITTEN) luahier_nameresponder(L, run, r, top + 2);
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
