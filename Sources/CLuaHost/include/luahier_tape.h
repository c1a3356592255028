/* A request line read ahead into a token tape (tape.c): scanned, validated and decoded by the
 * one JSON reader (luahier_jsonread.h) on any thread, without Lua, so the state's thread only
 * walks the tape making tables (lines.c: luahier_readrequest). The tape holds what that
 * thread would have met reading the line itself, in the same order: each member's key, its
 * value's tokens (containers with their final sizes, strings unescaped, numbers read) or that
 * it was read through, and where the reading stopped: the end, or the reader's refusal (its
 * message and column), at the token where the reader refused.
 *
 * Size: a tape's memory is fixed when it is made (luahier_tapemake) and never grows: a line is
 * taped only when the line is at most LUAHIER_TAPE_LINE_BUDGET bytes and its tape fits in
 * LUAHIER_TAPE_LINE_BUDGET bytes and in the room the tape has left. Taping stops as soon as
 * either would be passed, and the line is left to the direct reading (lines.c), on the
 * state's thread, under the memory cap. So the reader's own scratch (escaped strings, long
 * numbers, a refusal's message) stays within about twice the budget too. */
#ifndef LUAHIER_TAPE_H
#define LUAHIER_TAPE_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes of a line taped, and of its tape. */
#define LUAHIER_TAPE_LINE_BUDGET (64 * 1024)

/* The tapes of a run of lines, one after the other: words[count] of `capacity`, fixed. */
typedef struct luahier_Tape {
    uint64_t *words;
    size_t count, capacity;
    size_t line_end;            /* while a line is taped: the word its tape may not reach */
    int full;                   /* the line being taped does not fit: it is dropped */
    size_t largest_line;        /* the most words one line's tape took: for tests of the budget */
    long lines_dropped;         /* lines left to the direct reading: for tests */
} luahier_Tape;

/* What a tape word holds in its low byte (the rest: a size, where it is said). */
enum {
    LUAHIER_TAPE_OBJECT = 1,    /* members << 8; then where the reader was after its '{' */
    LUAHIER_TAPE_ARRAY,         /* items << 8; then where the reader was after its '[' */
    LUAHIER_TAPE_END,           /* the innermost container closed */
    LUAHIER_TAPE_NULL,
    LUAHIER_TAPE_TRUE,
    LUAHIER_TAPE_FALSE,
    LUAHIER_TAPE_INTEGER,       /* then the int64 */
    LUAHIER_TAPE_DOUBLE,        /* then the double */
    LUAHIER_TAPE_STRING_AT,     /* length << 8; then where it is in the line (no escape) */
    LUAHIER_TAPE_STRING_HERE,   /* length << 8; then its bytes, decoded, in words */
    LUAHIER_TAPE_KEY_AT,        /* a member's key inside a value: as the strings */
    LUAHIER_TAPE_KEY_HERE,
    LUAHIER_TAPE_MEMBER,        /* a member of the request: then where its value starts and ends
                                 * in the line; then its key (a string), then its value's tokens
                                 * or LUAHIER_TAPE_SKIPPED */
    LUAHIER_TAPE_SKIPPED,       /* the member's value was read through (an unknown member, an
                                 * id given as an array or an object) */
    LUAHIER_TAPE_REQUEST_END,   /* the object closed and only whitespace follows it */
    LUAHIER_TAPE_NOT_OBJECT,    /* the line is JSON, but not an object */
    LUAHIER_TAPE_VALUE_END,     /* a value read alone (luahier_tapevalue) is complete */
    LUAHIER_TAPE_FAILED         /* message length << 8; then the column; then the message */
};

#define LUAHIER_TAPE_TAG(word) ((int)((word) & 0xFF))
#define LUAHIER_TAPE_SIZE(word) ((size_t)((word) >> 8))

/* Makes an empty tape of `bytes` bytes (rounded down to words), its whole memory taken now:
 * 1, or 0 when it could not be had (a tape of no room, which tapes no line). */
int luahier_tapemake(luahier_Tape *tape, size_t bytes);

/* Appends the tape of request line `bytes` (`length` bytes, read with nesting up to
 * `depth_limit`), its first word the depth limit it was read with. Returns where it starts
 * (in words), or -1 when it does not fit (the line's bytes or its tape past
 * LUAHIER_TAPE_LINE_BUDGET, or past the tape's room): nothing kept. */
long luahier_tapeline(luahier_Tape *tape, const char *bytes, size_t length, int depth_limit);

/* Appends the tape of a document that is one value (nulls as Lua's nil: a null item is
 * refused), ending LUAHIER_TAPE_VALUE_END or _FAILED, within the tape's room alone (no line
 * budget): for tests that hold the tape to the direct reader. Returns where it starts, or -1. */
long luahier_tapevalue(luahier_Tape *tape, const char *bytes, size_t length, int depth_limit);

/* Forgets the tapes held (the memory is kept), or frees it. */
void luahier_tapeclear(luahier_Tape *tape);
void luahier_tapefree(luahier_Tape *tape);

/* The member `key` names in a request: 1 id, 2 at, 3 a payload ("event", or "error" with
 * `*is_error` set), or 0 for any other. */
int luahier_requestslot(const char *key, size_t length, int *is_error);

/* How many words a string's bytes take on the tape. */
#define LUAHIER_TAPE_WORDS(length) (((length) + 7) / 8)

#endif
