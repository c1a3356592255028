/* Lua values written as JSON in one pass (jsonwrite.c): the outcome lines of dispatch. */
#ifndef LUAHIER_JSONWRITE_H
#define LUAHIER_JSONWRITE_H

#include <lua.h>
#include <stddef.h>

/* Where JSON is written: a growing malloc'd buffer, reused from value to value. */
typedef struct luahier_JSONOut {
    char *bytes;
    size_t size, capacity;
    size_t limit;        /* the most bytes one value may take (what the memory cap leaves) */
    int depth_limit;     /* tables nested deeper go to the careful path */
    /* Appends a double's text as the host writes it (Swift's JSONWriter, the one place its
     * form is decided), through luahier_jsonappend; 0 when past the limit. */
    int (*writedouble)(struct luahier_JSONOut *out, double number);
    /* The state's luahier_Guard (NULL: none): every LUAHIER_JSON_PROGRESS_BYTES written are
     * charged to its running budget as host work, and a budget that has tripped (a deadline,
     * an interrupt) stops the writing: the value is then _LIMIT, and `stopped` is set. A value
     * that holds one table many times (not a cycle) reads as exponentially many bytes: only
     * the cap and the deadline bound them. */
    void *guard;
    size_t progress_at;  /* the size at which the budget is next charged */
    int stopped;
} luahier_JSONOut;

/* How often (in bytes written) a writer with a guard charges its budget. */
#define LUAHIER_JSON_PROGRESS_BYTES (64 * 1024)

/* [-0, +0, -] Empties `out` for a new value (its room kept), its progress counted afresh. */
void luahier_jsonoutbegin(luahier_JSONOut *out);

/* Lets go of `out`'s buffer when it holds more than `keep` bytes of room (it grew for one
 * large value): a buffer reused from value to value would otherwise keep its largest size for
 * the host's life, outside what the cap counts. */
void luahier_jsonshrink(luahier_JSONOut *out, size_t keep);

/* How a value was written. */
enum {
    LUAHIER_JSON_WRITTEN = 1,
    LUAHIER_JSON_CAREFUL = 0,  /* not plain data (a function, mixed or non-string keys, a cycle
                                * too deep, bytes that are not UTF-8): nothing usable was
                                * written; the host writes the value its careful way */
    LUAHIER_JSON_LIMIT = -1    /* its JSON is larger than `limit` */
};

/* [-0, +0, m] Writes the value at `index` to `out` (emptied first), reading it raw (no
 * metamethods): nil, booleans, integers, doubles, UTF-8 strings, tables whose keys are
 * exactly 1..n (an array) or all strings (an object, keys in byte order); `{}` for an empty
 * table. Returns LUAHIER_JSON_*. */
int luahier_writejson(lua_State *L, int index, luahier_JSONOut *out);

/* [-0, +0, m] As luahier_writejson, appending to what `out` holds (on any result but
 * LUAHIER_JSON_WRITTEN, `out` is left as it was). */
int luahier_appendjson(lua_State *L, int index, luahier_JSONOut *out);

/* Appends UTF-8 bytes `s` as a JSON string: LUAHIER_JSON_WRITTEN, _CAREFUL (not UTF-8) or
 * _LIMIT, nothing appended but on the first. */
int luahier_appendjsonstring(luahier_JSONOut *out, const char *s, size_t length);

/* Appends `length` bytes; 0 (nothing appended) past the limit or out of memory. */
int luahier_jsonappend(luahier_JSONOut *out, const void *bytes, size_t length);

#endif
