/* The one JSON reader (jsonread.c): RFC 8259, strictly, as a pull reader. Swift builds its
 * `Value`s from it (Sources/LuaHierarchy/JSON/JSONParser.swift) and the Lua bridge builds Lua
 * values from it (Sources/CLuaHost/lines.c), so every JSON text the host takes in is read by
 * the same rules, with the same messages:
 *
 * - integers (no fraction, no exponent) must fit 64 bits; other numbers are doubles, correctly
 *   rounded, and must be finite: nothing is silently rounded to an integer or to infinity;
 * - strings must be UTF-8, escapes included (a lone surrogate is refused); `\u0000` is kept;
 * - nesting is bounded; a duplicate key is read again (the reader's user keeps the last).
 *
 * It needs no Lua: the Lua bridge is the only code that imports Lua's headers. */
#ifndef LUAHIER_JSONREAD_H
#define LUAHIER_JSONREAD_H

#include <stddef.h>
#include <stdint.h>

/* The deepest nesting a reader follows, whatever its limit says. */
#define LUAHIER_JSON_MAX_DEPTH 1024

/* What the reader read. */
enum {
    LUAHIER_JSON_FAILED = 0,     /* refused: `message` and `column` say why */
    LUAHIER_JSON_NULL,
    LUAHIER_JSON_TRUE,
    LUAHIER_JSON_FALSE,
    LUAHIER_JSON_INTEGER,        /* in `integer` */
    LUAHIER_JSON_DOUBLE,         /* in `number` */
    LUAHIER_JSON_STRING,         /* in `string`, `string_length`: valid UTF-8, valid until the next read */
    LUAHIER_JSON_BEGIN_OBJECT,
    LUAHIER_JSON_KEY,            /* a member's key, as a string; its value follows */
    LUAHIER_JSON_END_OBJECT,
    LUAHIER_JSON_BEGIN_ARRAY,
    LUAHIER_JSON_END_ARRAY,
    LUAHIER_JSON_DONE            /* the value begun with luahier_jsonbegin is complete */
};

/* What a container is, in `kinds`. */
enum { LUAHIER_JSON_IN_OBJECT = 1, LUAHIER_JSON_IN_ARRAY = 2 };

typedef struct luahier_JSONReader {
    const unsigned char *bytes;
    size_t length;
    size_t index;               /* the next byte to read */
    int depth_limit;            /* a container deeper than this is refused */
    int nulls_as_nil;           /* `null` in an array is refused (a Lua sequence cannot hold nil) */

    /* The value being read: the containers open in it, innermost last. */
    int depth;                  /* how many are open */
    int top_depth;              /* the depth the value itself is at (1 for a document) */
    int state;                  /* what comes next (jsonread.c) */
    unsigned char kinds[LUAHIER_JSON_MAX_DEPTH];     /* LUAHIER_JSON_IN_* per open container */
    uint32_t counts[LUAHIER_JSON_MAX_DEPTH];         /* per open container, its members or items
                                                      * begun so far (the 1-based position of the
                                                      * one being read); a container just closed
                                                      * leaves its count at counts[depth] */
    int member_state;           /* luahier_jsonmember's place */

    /* The last token's content. */
    const char *string;
    size_t string_length;
    int64_t integer;
    double number;

    /* Strings with escapes are decoded here (malloc'd on first need; luahier_jsonfree). */
    char *scratch;
    size_t scratch_size, scratch_capacity;

    /* Why the text was refused (NUL-terminated; in `message_space`, or malloc'd when longer),
     * and the 1-based byte column where it was seen. */
    char *message;
    size_t column;
    char message_space[160];
} luahier_JSONReader;

/* Starts reading `bytes` (not copied: they must outlive the reader's use). `depth_limit` is
 * clamped to LUAHIER_JSON_MAX_DEPTH. */
void luahier_jsoninit(luahier_JSONReader *r, const void *bytes, size_t length, int depth_limit, int nulls_as_nil);

/* Frees what the reader allocated (its scratch). */
void luahier_jsonfree(luahier_JSONReader *r);

/* Skips whitespace at the reader's place. */
void luahier_jsonskipspace(luahier_JSONReader *r);

/* Readies the reading of one value at the reader's place, at nesting depth `depth` (1 for a
 * document's value; a container at a depth past the limit is refused). */
void luahier_jsonbegin(luahier_JSONReader *r, int depth);

/* The next token of the value begun: scalars, and containers as BEGIN, their members (KEY, then
 * the value) or items, and END. After the value's last token, LUAHIER_JSON_DONE. The innermost
 * open container is `kinds[depth - 1]`; when a value inside an array was just read, its position
 * is `counts[depth - 1]`; after an END, the container's size is `counts[depth]`. */
int luahier_jsonnext(luahier_JSONReader *r);

/* Reads past the value at the reader's place, building nothing: 1, or 0 with the reader saying
 * why (a request's member read through, as the direct reading and the tape both do). */
int luahier_jsonskipvalue(luahier_JSONReader *r);

/* Refuses the text at the reader's place for a reason of its user's (a builder out of room):
 * returns LUAHIER_JSON_FAILED, `message` set. */
int luahier_jsonfail(luahier_JSONReader *r, const char *message);

/* After a document's value: 1 when only whitespace follows, else 0 (refused). */
int luahier_jsonexpectend(luahier_JSONReader *r);

/* A document that is an object, member by member, each member's value read by its user (with
 * luahier_jsonbegin(r, 1) and luahier_jsonnext to LUAHIER_JSON_DONE):
 * - the first call, at the document's start: LUAHIER_JSON_BEGIN_OBJECT once it opened the
 *   object, or LUAHIER_JSON_DONE when the document is not one (only whitespace was read);
 * - each call after: LUAHIER_JSON_KEY with the key in `string` and the reader at its value,
 *   LUAHIER_JSON_END_OBJECT once the object closed, or LUAHIER_JSON_FAILED. */
int luahier_jsonmember(luahier_JSONReader *r);

/* The first `length` bytes of `s` that are well-formed UTF-8 (no overlongs, no surrogates,
 * nothing past U+10FFFF): `length` when all are. */
size_t luahier_utf8prefix(const unsigned char *s, size_t length);

/* At least the bytes `s` take as text with each byte that is not part of well-formed UTF-8
 * replaced by U+FFFD (three bytes): `length` for well-formed UTF-8, at most 3 x `length`. A
 * copy that repairs a string (Swift's String(decoding:as:)) is never larger. */
size_t luahier_utf8repairedlength(const unsigned char *s, size_t length);

#endif
