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

/* Room for `length` more bytes: luahier_jsonreserve, its common answer without a call. */
static inline int luahier_jsonroom(luahier_JSONOut *out, size_t length) {
    size_t end = out->size + length;
    if (end <= out->capacity && end <= out->limit && end <= out->progress_at) return 1;
    return luahier_jsonreserve(out, length);
}

int luahier_jsonappend(luahier_JSONOut *out, const void *bytes, size_t length) {
    if (!luahier_jsonroom(out, length)) return 0;
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

/* 1 for the bytes a JSON string holds as they are: printable ASCII but `"` and `\`. */
static const unsigned char luahier_plainbytes[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x80-0xFF: 0, a multi-byte sequence to check */
};

/* Bytes `s` as a JSON string, in one pass: `"` and `\` escaped, control characters as \n, \r,
 * \t, \b, \f or \u00XX (JSONWriter.writeEscaped's rules), the rest as it is, provided it is
 * well-formed UTF-8 (the JSON reader's test, luahier_utf8prefix). LUAHIER_JSON_WRITTEN, or
 * _CAREFUL (not UTF-8) / _LIMIT with nothing appended. Plain bytes are copied as they are
 * checked, a word at a time, then byte by byte: most strings are short, and a call to memcpy
 * per run would cost more than the copy. */
static int luahier_jsonstring(luahier_JSONOut *out, const char *text, size_t length) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)text;
    size_t mark = out->size;
    /* Room for the bytes and the quotes; an escape asks for more as it comes. */
    if (!luahier_jsonroom(out, length + 2)) return LUAHIER_JSON_LIMIT;
    char *o = out->bytes + out->size;
    *o++ = '"';
    size_t i = 0;
    for (;;) {
        while (i + 8 <= length) {
            uint64_t word;
            memcpy(&word, s + i, sizeof word);
            if (luahier_specialbytes(word)) break;
            memcpy(o, &word, sizeof word);
            o += 8;
            i += 8;
        }
        size_t rest = length - i;
        if (rest > 0 && rest < 8) {
            /* The last bytes in one check when they are plain: the last eight of the string
             * (those before `i` in it are plain too, so already copied as they are), or for
             * a string of four to seven, its first and last four. */
            uint64_t word;
            if (length >= 8) {
                memcpy(&word, s + length - 8, sizeof word);
                if (!luahier_specialbytes(word)) {
                    memcpy(o + rest - 8, &word, sizeof word);
                    o += rest;
                    break;
                }
            } else if (rest >= 4) {
                uint32_t head, tail;
                memcpy(&head, s + i, sizeof head);
                memcpy(&tail, s + length - 4, sizeof tail);
                if (!luahier_specialbytes((uint64_t)head | (uint64_t)tail << 32)) {
                    memcpy(o, &head, sizeof head);
                    memcpy(o + rest - 4, &tail, sizeof tail);
                    o += rest;
                    break;
                }
            }
        }
        while (i < length && luahier_plainbytes[s[i]]) *o++ = (char)s[i++];
        if (i == length) break;
        unsigned char c = s[i];
        if (c >= 0x80) {
            /* One multi-byte sequence, checked, then copied. */
            size_t end = i + 4 < length ? i + 4 : length;
            size_t valid = luahier_utf8prefix(s + i, end - i);
            size_t width = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (valid < width) { out->size = mark; return LUAHIER_JSON_CAREFUL; }
            for (size_t k = 0; k < width; k++) *o++ = (char)s[i + k];
            i += width;
            continue;
        }
        /* An escape: up to six bytes for one. */
        out->size = (size_t)(o - out->bytes);
        if (!luahier_jsonreserve(out, (length - i) + 6)) { out->size = mark; return LUAHIER_JSON_LIMIT; }
        o = out->bytes + out->size;
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            *o++ = 'u'; *o++ = '0'; *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 0xF];
        }
        i++;
    }
    *o++ = '"';
    out->size = (size_t)(o - out->bytes);
    return LUAHIER_JSON_WRITTEN;
}

static int luahier_jsonvalue(lua_State *L, int index, luahier_JSONOut *out, int depth);

/* A string key of the table being written, the stack slot of its pair, and its first eight
 * bytes as a big-endian number (zeros past its end), which orders most pairs of keys alone. */
typedef struct { const char *bytes; size_t length; int slot; uint64_t head; } luahier_JSONKey;

static uint64_t luahier_keyhead(const char *bytes, size_t length) {
    uint64_t head = 0;
    if (length >= 8) {
        memcpy(&head, bytes, sizeof head);
        return __builtin_bswap64(head);
    }
    for (size_t k = 0; k < 8; k++) head = head << 8 | (k < length ? (unsigned char)bytes[k] : 0);
    return head;
}

/* Orders keys by their bytes, a prefix first (JSONWriter's order of a map's keys). Heads that
 * differ order their keys as the bytes do: where they first differ, both keys have bytes, or
 * the shorter one ended (a zero) and the longer has a byte above zero there, so the shorter is
 * its prefix. */
static int luahier_comparekeys(const void *a, const void *b) {
    const luahier_JSONKey *x = (const luahier_JSONKey *)a, *y = (const luahier_JSONKey *)b;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
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
        keys[i].head = luahier_keyhead(keys[i].bytes, keys[i].length);
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

/* `x` written as JSONWriter writes a double (Swift's shortest digits that read back as `x`; in
 * decimal notation from 0.0001 to past 10^15) when it is a decimal of at most six places
 * between 0.001 and 2^32 in magnitude: its length, else 0 (the host writes it). The fewest
 * places that read back give the fewest digits; below 2^32 a double's neighbours are nearer
 * than 10^-6, so no other decimal of as many places reads back as `x`, and Swift has no
 * closer one to pick. */
static size_t luahier_shortdecimal(double x, char *text) {
    static const double powers[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
    double magnitude = x < 0 ? -x : x;
    if (!(magnitude >= 0.001 && magnitude < 4294967296.0)) return 0;
    for (int places = 0; places <= 6; places++) {
        /* Below 2^32 * 10^6 < 2^53: the digits are exact in a double. */
        uint64_t digits = (uint64_t)(magnitude * powers[places] + 0.5);
        if ((double)digits / powers[places] != magnitude) continue;
        char reversed[24];
        int count = 0;
        do { reversed[count++] = (char)('0' + digits % 10); digits /= 10; } while (digits);
        char *p = text;
        if (x < 0) *p++ = '-';
        if (count <= places) *p++ = '0';
        for (int k = count - 1; k >= places; k--) *p++ = reversed[k];
        *p++ = '.';
        if (places == 0) *p++ = '0';
        for (int k = places - 1; k >= 0; k--) *p++ = k < count ? reversed[k] : '0';
        return (size_t)(p - text);
    }
    return 0;
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
        {
            double number = lua_tonumberx(L, index, NULL);
            char text[32];
            size_t length = luahier_shortdecimal(number, text);
            int appended = length ? luahier_jsonappend(out, text, length) : out->writedouble(out, number);
            return appended ? LUAHIER_JSON_WRITTEN : LUAHIER_JSON_LIMIT;
        }
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
