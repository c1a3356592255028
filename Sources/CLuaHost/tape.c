/* Request lines read ahead into token tapes (luahier_tape.h). No Lua here: any thread may tape
 * a line. What is read, and in which order, is what luahier_readrequest (lines.c) met when it
 * read the line itself: the same reader calls, the same nulls rule per member. */
#include "luahier_tape.h"
#include "luahier_jsonread.h"

#include <stdlib.h>
#include <string.h>

/* Room for `more` words in the line's share; 0 (and `full` set) when they would pass it. */
static int tape_room(luahier_Tape *t, size_t more) {
    if (t->full) return 0;
    if (more <= t->line_end - t->count) return 1;
    t->full = 1;
    return 0;
}

static void put1(luahier_Tape *t, uint64_t a) {
    if (tape_room(t, 1)) t->words[t->count++] = a;
}

static void put2(luahier_Tape *t, uint64_t a, uint64_t b) {
    if (!tape_room(t, 2)) return;
    t->words[t->count] = a;
    t->words[t->count + 1] = b;
    t->count += 2;
}

/* `length` bytes into whole words (the last one's rest zero). */
static void put_bytes(luahier_Tape *t, const char *bytes, size_t length) {
    size_t words = LUAHIER_TAPE_WORDS(length);
    if (words == 0) return;
    t->words[t->count + words - 1] = 0;
    memcpy(t->words + t->count, bytes, length);
    t->count += words;
}

/* The reader's last string: where it is in the line when it had no escape, else its bytes. */
static void put_string(luahier_Tape *t, const luahier_JSONReader *r, int at_tag, int here_tag) {
    size_t length = r->string_length;
    if (r->scratch == NULL || r->string != r->scratch) {
        put2(t, (uint64_t)at_tag | (uint64_t)length << 8, (uint64_t)((const unsigned char *)r->string - r->bytes));
        return;
    }
    if (!tape_room(t, 1 + LUAHIER_TAPE_WORDS(length))) return;
    t->words[t->count++] = (uint64_t)here_tag | (uint64_t)length << 8;
    put_bytes(t, r->string, length);
}

/* The reader's refusal: its message and column. */
static void put_failed(luahier_Tape *t, const luahier_JSONReader *r) {
    const char *message = r->message ? r->message : "invalid JSON";
    size_t length = strlen(message);
    if (!tape_room(t, 2 + LUAHIER_TAPE_WORDS(length))) return;
    t->words[t->count] = (uint64_t)LUAHIER_TAPE_FAILED | (uint64_t)length << 8;
    t->words[t->count + 1] = (uint64_t)r->column;
    t->count += 2;
    put_bytes(t, message, length);
}

/* The tokens of the value at the reader's place, at depth 1, as luahier_pushjson meets them:
 * 1, or 0 with the refusal put (or the tape `full`: taping stops there). A container's size
 * is put in its first word once it closed. */
static int tape_value(luahier_Tape *t, luahier_JSONReader *r) {
    size_t opened[LUAHIER_JSON_MAX_DEPTH];
    luahier_jsonbegin(r, 1);
    for (;;) {
        if (t->full) return 0;
        switch (luahier_jsonnext(r)) {
        case LUAHIER_JSON_BEGIN_OBJECT:
            opened[r->depth - 1] = t->count;
            put2(t, LUAHIER_TAPE_OBJECT, (uint64_t)r->index);
            continue;
        case LUAHIER_JSON_BEGIN_ARRAY:
            opened[r->depth - 1] = t->count;
            put2(t, LUAHIER_TAPE_ARRAY, (uint64_t)r->index);
            continue;
        case LUAHIER_JSON_KEY:
            put_string(t, r, LUAHIER_TAPE_KEY_AT, LUAHIER_TAPE_KEY_HERE);
            continue;
        case LUAHIER_JSON_NULL: put1(t, LUAHIER_TAPE_NULL); break;
        case LUAHIER_JSON_TRUE: put1(t, LUAHIER_TAPE_TRUE); break;
        case LUAHIER_JSON_FALSE: put1(t, LUAHIER_TAPE_FALSE); break;
        case LUAHIER_JSON_INTEGER: put2(t, LUAHIER_TAPE_INTEGER, (uint64_t)r->integer); break;
        case LUAHIER_JSON_DOUBLE: {
            uint64_t bits;
            memcpy(&bits, &r->number, sizeof bits);
            put2(t, LUAHIER_TAPE_DOUBLE, bits);
            break;
        }
        case LUAHIER_JSON_STRING:
            put_string(t, r, LUAHIER_TAPE_STRING_AT, LUAHIER_TAPE_STRING_HERE);
            break;
        case LUAHIER_JSON_END_OBJECT:
        case LUAHIER_JSON_END_ARRAY:
            if (!t->full) t->words[opened[r->depth]] |= (uint64_t)r->counts[r->depth] << 8;
            put1(t, LUAHIER_TAPE_END);
            break;
        default:
            put_failed(t, r);
            return 0;
        }
        if (r->depth == 0) return 1;
    }
}

int luahier_requestslot(const char *key, size_t length, int *is_error) {
    if (length == 2 && key[0] == 'i' && key[1] == 'd') return 1;
    if (length == 2 && key[0] == 'a' && key[1] == 't') return 2;
    if (length == 5 && memcmp(key, "event", 5) == 0) { *is_error = 0; return 3; }
    if (length == 5 && memcmp(key, "error", 5) == 0) { *is_error = 1; return 3; }
    return 0;
}

/* Ends a line's tape: where it starts, or -1 (and nothing kept) when it did not fit. */
static long finish(luahier_Tape *t, luahier_JSONReader *r, size_t start) {
    luahier_jsonfree(r);
    t->line_end = t->count;
    if (t->full) {
        t->count = start;
        t->full = 0;
        t->lines_dropped++;
        return -1;
    }
    if (t->count - start > t->largest_line) t->largest_line = t->count - start;
    return (long)start;
}

/* Begins a line's tape: its share of the room, `words` at most. */
static void begin(luahier_Tape *t, size_t words) {
    size_t left = t->capacity - t->count;
    t->line_end = t->count + (words < left ? words : left);
    t->full = 0;
}

long luahier_tapeline(luahier_Tape *t, const char *bytes, size_t length, int depth_limit) {
    size_t start_count = t->count;
    if (length > LUAHIER_TAPE_LINE_BUDGET) {
        /* Not even scanned here: the reader's scratch stays within the budget too. */
        t->lines_dropped++;
        return -1;
    }
    begin(t, LUAHIER_TAPE_LINE_BUDGET / sizeof(uint64_t));
    luahier_JSONReader reader;
    luahier_jsoninit(&reader, bytes, length, depth_limit, 1);
    put1(t, (uint64_t)depth_limit);
    if (luahier_jsonmember(&reader) != LUAHIER_JSON_BEGIN_OBJECT) {
        /* Not an object: still read through, so a text that is not JSON says so first. */
        if (!luahier_jsonskipvalue(&reader) || !luahier_jsonexpectend(&reader)) put_failed(t, &reader);
        else put1(t, LUAHIER_TAPE_NOT_OBJECT);
        return finish(t, &reader, start_count);
    }
    for (;;) {
        int token = luahier_jsonmember(&reader);
        if (token == LUAHIER_JSON_END_OBJECT) break;
        if (token != LUAHIER_JSON_KEY) {
            put_failed(t, &reader);
            return finish(t, &reader, start_count);
        }
        int is_error = 0;
        int slot = luahier_requestslot(reader.string, reader.string_length, &is_error);
        size_t member = t->count;
        put1(t, LUAHIER_TAPE_MEMBER);
        put2(t, 0, 0);
        put_string(t, &reader, LUAHIER_TAPE_STRING_AT, LUAHIER_TAPE_STRING_HERE);
        if (slot == 0) {
            /* Read through (its JSON must be good too). */
            if (!luahier_jsonskipvalue(&reader)) {
                put_failed(t, &reader);
                return finish(t, &reader, start_count);
            }
            put1(t, LUAHIER_TAPE_SKIPPED);
            if (t->full) return finish(t, &reader, start_count);
            continue;
        }
        luahier_jsonskipspace(&reader);
        size_t start = reader.index;
        if (slot == 1 && start < length && (bytes[start] == '[' || bytes[start] == '{')) {
            /* An id given as an array or an object is echoed from its text, nulls and all. */
            reader.nulls_as_nil = 0;
            int read = luahier_jsonskipvalue(&reader);
            reader.nulls_as_nil = 1;
            if (!read) {
                put_failed(t, &reader);
                return finish(t, &reader, start_count);
            }
            put1(t, LUAHIER_TAPE_SKIPPED);
        } else {
            if (slot == 1) reader.nulls_as_nil = 0;
            int read = tape_value(t, &reader);
            reader.nulls_as_nil = 1;
            if (!read) return finish(t, &reader, start_count);
        }
        if (t->full) return finish(t, &reader, start_count);
        t->words[member + 1] = (uint64_t)start;
        t->words[member + 2] = (uint64_t)reader.index;
    }
    if (!luahier_jsonexpectend(&reader)) put_failed(t, &reader);
    else put1(t, LUAHIER_TAPE_REQUEST_END);
    return finish(t, &reader, start_count);
}

long luahier_tapevalue(luahier_Tape *t, const char *bytes, size_t length, int depth_limit) {
    size_t start_count = t->count;
    begin(t, t->capacity);
    luahier_JSONReader reader;
    luahier_jsoninit(&reader, bytes, length, depth_limit, 1);
    put1(t, (uint64_t)depth_limit);
    luahier_jsonskipspace(&reader);
    if (tape_value(t, &reader)) {
        if (!luahier_jsonexpectend(&reader)) put_failed(t, &reader);
        else put1(t, LUAHIER_TAPE_VALUE_END);
    }
    return finish(t, &reader, start_count);
}

int luahier_tapemake(luahier_Tape *t, size_t bytes) {
    memset(t, 0, sizeof *t);
    size_t words = bytes / sizeof(uint64_t);
    if (words == 0) return 1;
    t->words = (uint64_t *)malloc(words * sizeof(uint64_t));
    if (t->words == NULL) return 0;
    t->capacity = words;
    return 1;
}

void luahier_tapeclear(luahier_Tape *t) {
    t->count = t->line_end = 0;
    t->full = 0;
}

void luahier_tapefree(luahier_Tape *t) {
    free(t->words);
    memset(t, 0, sizeof *t);
}
