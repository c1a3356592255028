/* Lua values written as JSON in one pass, for the outcome lines of `luahier dispatch`: no
 * Swift value is built, nothing is allocated per value but the output's own bytes. */
#include "luahier_jsonwrite.h"
#include "luahier_limits.h"
#include "luahier_jsonread.h"

#include <lauxlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void luahier_jsonoutbegin(luahier_JSONOut *out) {
    out->size = 0;
    out->stopped = 0;
    out->progress_at = out->guard ? LUAHIER_JSON_PROGRESS_BYTES : (size_t)-1;
}

/* [-0, +0, -] Charges what was written since the last charge to the running budget; 0 (and
 * `stopped`) once it has tripped. */
static int luahier_jsonprogress(luahier_JSONOut *out) {
    luahier_Guard *g = (luahier_Guard *)out->guard;
    if (g == NULL) {
        out->progress_at = (size_t)-1;
        return 1;
    }
    luahier_chargework(g, LUAHIER_JSON_PROGRESS_BYTES / LUAHIER_BYTES_PER_UNIT);
    if (luahier_guardtripped(g)) {
        out->stopped = 1;
        return 0;
    }
    out->progress_at = out->size + LUAHIER_JSON_PROGRESS_BYTES;
    return 1;
}

/* Room for `length` more bytes within the limit; 0 past it, once the budget tripped, or out
 * of memory. */
static int luahier_jsonreserve(luahier_JSONOut *out, size_t length) {
    if (out->size + length > out->limit) return 0;
    if (out->size + length > out->progress_at && !luahier_jsonprogress(out)) return 0;
    if (out->size + length <= out->capacity) return 1;
    size_t capacity = out->capacity ? out->capacity : 256;
    while (capacity < out->size + length) capacity *= 2;
    char *grown = (char *)realloc(out->bytes, capacity);
    if (grown == NULL) return 0;
    out->bytes = grown;
    out->capacity = capacity;
    return 1;
}

void luahier_jsonshrink(luahier_JSONOut *out, size_t keep) {
    if (out->capacity <= keep) return;
    free(out->bytes);
    out->bytes = NULL;
    out->size = out->capacity = 0;
}

int luahier_jsonappend(luahier_JSONOut *out, const void *bytes, size_t length) {
    if (!luahier_jsonreserve(out, length)) return 0;
    memcpy(out->bytes + out->size, bytes, length);
    out->size += length;
    return 1;
}

/* One byte, the common case of an append. */
static int luahier_jsonbyte(luahier_JSONOut *out, char byte) {
    if (out->size >= out->capacity || out->size >= out->limit || out->size >= out->progress_at)
        return luahier_jsonappend(out, &byte, 1);
    out->bytes[out->size++] = byte;
    return 1;
}

#define LUAHIER_ONES 0x0101010101010101ULL
#define LUAHIER_HIGHS 0x8080808080808080ULL

/* The bytes of `word` a JSON string cannot hold as they are (a quote, a backslash, a control
 * character) or that need a UTF-8 check (a byte of a multi-byte sequence): the high bit of
 * each is set; the lowest set bit marks the first exactly (the bits above may be false alarms). */
static uint64_t luahier_specialbytes(uint64_t word) {
    uint64_t quote = word ^ (LUAHIER_ONES * '"'), backslash = word ^ (LUAHIER_ONES * '\\');
    return (((quote - LUAHIER_ONES) & ~quote) | ((backslash - LUAHIER_ONES) & ~backslash) | (word - LUAHIER_ONES * 0x20) |
            word) & LUAHIER_HIGHS;
}

/* Bytes `s` as a JSON string, in one pass: `"` and `\` escaped, control characters as \n, \r,
 * \t, \b, \f or \u00XX (JSONWriter.writeEscaped's rules), the rest as it is, provided it is
 * well-formed UTF-8 (the JSON reader's test, luahier_utf8prefix). LUAHIER_JSON_WRITTEN, or
 * _CAREFUL (not UTF-8) / _LIMIT with nothing appended. */
static int luahier_jsonstring(luahier_JSONOut *out, const char *text, size_t length) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)text;
    size_t mark = out->size;
    /* Room for the bytes and the quotes; an escape asks for more as it comes. */
    if (!luahier_jsonreserve(out, length + 2)) return LUAHIER_JSON_LIMIT;
    out->bytes[out->size++] = '"';
    size_t i = 0;
    while (i < length) {
        /* A plain run, eight bytes at a time. */
        size_t run = i;
        while (i + 8 <= length) {
            uint64_t word;
            memcpy(&word, s + i, sizeof word);
            uint64_t special = luahier_specialbytes(word);
            if (special) {
                i += (size_t)__builtin_ctzll(special) >> 3;
                break;
            }
            i += 8;
        }
        while (i < length && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\') i++;
        memcpy(out->bytes + out->size, s + run, i - run);
        out->size += i - run;
        if (i == length) break;
        unsigned char c = s[i];
        if (c >= 0x80) {
            /* One multi-byte sequence, checked, then copied. */
            size_t end = i + 4 < length ? i + 4 : length;
            size_t valid = luahier_utf8prefix(s + i, end - i);
            size_t width = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (valid < width) { out->size = mark; return LUAHIER_JSON_CAREFUL; }
            memcpy(out->bytes + out->size, s + i, width);
            out->size += width;
            i += width;
            continue;
        }
        /* An escape: up to six bytes for one. */
        if (!luahier_jsonreserve(out, (length - i) + 6)) { out->size = mark; return LUAHIER_JSON_LIMIT; }
        char *p = out->bytes + out->size;
        *p++ = '\\';
        switch (c) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        default:
            *p++ = 'u'; *p++ = '0'; *p++ = '0';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xF];
        }
        out->size = (size_t)(p - out->bytes);
        i++;
    }
    out->bytes[out->size++] = '"';
    return LUAHIER_JSON_WRITTEN;
}

static int luahier_jsonvalue(lua_State *L, int index, luahier_JSONOut *out, int depth);

/* A string key of the table being written, and the stack slot of its pair. */
typedef struct { const char *bytes; size_t length; int slot; } luahier_JSONKey;

/* Orders keys by their bytes, a prefix first (JSONWriter's order of a map's keys). */
static int luahier_comparekeys(const void *a, const void *b) {
    const luahier_JSONKey *x = (const luahier_JSONKey *)a, *y = (const luahier_JSONKey *)b;
    size_t common = x->length < y->length ? x->length : y->length;
    int order = memcmp(x->bytes, y->bytes, common);
    if (order != 0) return order;
    return x->length < y->length ? -1 : x->length > y->length;
}

/* Byte order, as JSONWriter sorts. An insertion sort for the few keys most values have (no
 * call per comparison); qsort, O(n log n), past that: a value may have hundreds of thousands
 * of keys, and the insertion sort's n^2 / 4 moves would take minutes (the keys are distinct,
 * so the order is the same either way). */
static void luahier_sortkeys(luahier_JSONKey *keys, int count) {
    if (count > 16) {
        qsort(keys, (size_t)count, sizeof *keys, luahier_comparekeys);
        return;
    }
    for (int i = 1; i < count; i++) {
        luahier_JSONKey key = keys[i];
        int j = i - 1;
        while (j >= 0 && luahier_comparekeys(&keys[j], &key) > 0) {
            keys[j + 1] = keys[j];
            j--;
        }
        keys[j + 1] = key;
    }
}

/* [-0, +0, m] The table at `table` (absolute): an array when its keys are exactly 1..n, an
 * object when they are all strings (sorted), `{}` when it has none; anything else is for the
 * careful path. Its pairs are kept on the stack while it is written. */
static int luahier_jsontable(lua_State *L, int table, luahier_JSONOut *out, int depth) {
    if (depth >= out->depth_limit || !lua_checkstack(L, 8)) return LUAHIER_JSON_CAREFUL;
    int base = lua_gettop(L);
    int strings = 0;
    lua_Integer integers = 0, largest = 0;
    lua_pushnil(L);
    while (lua_next(L, table) != 0) {
        int type = lua_type(L, -2);
        if (type == LUA_TSTRING) {
            strings++;
        } else if (type == LUA_TNUMBER && lua_isinteger(L, -2)) {
            lua_Integer key = lua_tointegerx(L, -2, NULL);
            integers++;
            if (key > largest) largest = key;
        } else {
            lua_settop(L, base);
            return LUAHIER_JSON_CAREFUL;
        }
        /* Keep the pair; the key again on top for the next lua_next. */
        if (!lua_checkstack(L, 3)) {
            lua_settop(L, base);
            return LUAHIER_JSON_CAREFUL;
        }
        lua_pushvalue(L, -2);
    }
    int count = (lua_gettop(L) - base) / 2;
    int result = LUAHIER_JSON_WRITTEN;
    if (integers > 0) {
        /* Distinct integer keys, as many as the largest, none below 1: exactly 1..n. */
        if (strings > 0 || largest != integers) {
            lua_settop(L, base);
            return LUAHIER_JSON_CAREFUL;
        }
        lua_settop(L, base);
        if (!luahier_jsonbyte(out, '[')) return LUAHIER_JSON_LIMIT;
        for (lua_Integer position = 1; position <= integers; position++) {
            if (position > 1 && !luahier_jsonbyte(out, ',')) return LUAHIER_JSON_LIMIT;
            lua_rawgeti(L, table, position);
            result = luahier_jsonvalue(L, lua_gettop(L), out, depth + 1);
            lua_pop(L, 1);
            if (result != LUAHIER_JSON_WRITTEN) return result;
        }
        return luahier_jsonbyte(out, ']') ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
    }
    luahier_JSONKey small[32];
    luahier_JSONKey *keys = count <= 32 ? small : (luahier_JSONKey *)malloc(sizeof(luahier_JSONKey) * (size_t)count);
    if (keys == NULL) {
        lua_settop(L, base);
        return LUAHIER_JSON_CAREFUL;
    }
    for (int i = 0; i < count; i++) {
        keys[i].slot = base + 1 + 2 * i;
        keys[i].bytes = lua_tolstring(L, keys[i].slot, &keys[i].length);
    }
    luahier_sortkeys(keys, count);
    if (!luahier_jsonbyte(out, '{')) result = LUAHIER_JSON_LIMIT;
    for (int i = 0; i < count && result == LUAHIER_JSON_WRITTEN; i++) {
        if (i > 0 && !luahier_jsonbyte(out, ',')) { result = LUAHIER_JSON_LIMIT; break; }
        /* A key that is not UTF-8 is refused (the careful path describes the value). */
        if ((result = luahier_jsonstring(out, keys[i].bytes, keys[i].length)) != LUAHIER_JSON_WRITTEN) break;
        if (!luahier_jsonbyte(out, ':')) { result = LUAHIER_JSON_LIMIT; break; }
        result = luahier_jsonvalue(L, keys[i].slot + 1, out, depth + 1);
    }
    if (result == LUAHIER_JSON_WRITTEN && !luahier_jsonbyte(out, '}')) result = LUAHIER_JSON_LIMIT;
    if (keys != small) free(keys);
    lua_settop(L, base);
    return result;
}

static int luahier_jsonvalue(lua_State *L, int index, luahier_JSONOut *out, int depth) {
    switch (lua_type(L, index)) {
    case LUA_TNIL:
        return luahier_jsonappend(out, "null", 4) ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
    case LUA_TBOOLEAN:
        return (lua_toboolean(L, index) ? luahier_jsonappend(out, "true", 4) : luahier_jsonappend(out, "false", 5))
            ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
    case LUA_TNUMBER:
        if (lua_isinteger(L, index)) {
            /* Decimal digits, written backwards (no printf per number). */
            char text[24];
            char *end = text + sizeof text, *p = end;
            lua_Integer n = lua_tointegerx(L, index, NULL);
            unsigned long long magnitude = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
            do { *--p = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude);
            if (n < 0) *--p = '-';
            return luahier_jsonappend(out, p, (size_t)(end - p)) ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
        }
        return out->writedouble(out, lua_tonumberx(L, index, NULL)) ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
    case LUA_TSTRING: {
        size_t length;
        const char *s = lua_tolstring(L, index, &length);
        return luahier_jsonstring(out, s, length);
    }
    case LUA_TTABLE:
        return luahier_jsontable(L, index, out, depth);
    default:
        return LUAHIER_JSON_CAREFUL;
    }
}

int luahier_writejson(lua_State *L, int index, luahier_JSONOut *out) {
    luahier_jsonoutbegin(out);
    return luahier_jsonvalue(L, lua_absindex(L, index), out, 0);
}

int luahier_appendjson(lua_State *L, int index, luahier_JSONOut *out) {
    size_t mark = out->size;
    int result = luahier_jsonvalue(L, lua_absindex(L, index), out, 0);
    if (result != LUAHIER_JSON_WRITTEN) out->size = mark;
    return result;
}

int luahier_appendjsonstring(luahier_JSONOut *out, const char *s, size_t length) {
    return luahier_jsonstring(out, s, length);
}
