/* JSON into Lua, and `luahier dispatch`'s lines answered in C (lines.c): a request read from
 * JSON straight into Lua values by the one JSON reader (luahier_jsonread.h), the engine's
 * dispatch, and the outcome written as JSON, with nothing built in Swift on the way. A line
 * this path declines (anything unusual: a refusal, an id that is not a scalar, a value the C
 * writer leaves to the careful path) is answered by the host's own path (Sources/LuaHierarchy/
 * Rules/LineProcessor.swift), which reads it with the same reader and words every refusal. */
#ifndef LUAHIER_LINES_H
#define LUAHIER_LINES_H

#include <lua.h>
#include <stddef.h>

#include "luahier_jsonread.h"

struct luahier_Engine;
struct luahier_JSONOut;
struct luahier_Result;

/* What the builder remembers from one read to the next (the lines of a stream look alike): the
 * sizes of the tables last read at each depth (up to LUAHIER_JSON_SHAPE_DEPTH), so the next ones
 * are made that size and fill without a rehash. (A cache of the short strings made last was
 * measured too: Lua's own interning costs no more than looking one up.) */
#define LUAHIER_JSON_SHAPE_DEPTH 8
typedef struct luahier_JSONMemory {
    unsigned char members[LUAHIER_JSON_SHAPE_DEPTH];
    unsigned char items[LUAHIER_JSON_SHAPE_DEPTH];
} luahier_JSONMemory;

/* [-0, +(0|1), m] Reads the value at the reader's place, at nesting depth `depth`, into a Lua
 * value (JSON's nulls as Lua's nil: a null member is absent, a null item refused): objects
 * become tables of their members, arrays sequences, integers integers, other numbers floats.
 * With `memory` (NULL: none), tables are made the sizes it remembers, and it learns from this
 * read. Returns 1, or 0 with nothing pushed and the reader saying why. */
int luahier_pushjson(lua_State *L, luahier_JSONReader *reader, int depth, luahier_JSONMemory *memory);

/* What a request line holds, once read. */
typedef struct luahier_Request {
    int has_id;     /* the line has an "id" (pushed: nil for null) */
    int is_error;   /* "error" rather than "event" */
} luahier_Request;

enum {
    LUAHIER_REQUEST_READY = 1,  /* pushed: the id (or nil), the plan, the value, its type */
    LUAHIER_REQUEST_HOST = 0    /* nothing pushed: the host answers this line */
};

/* [-0, +(0|4), m] Reads request line `bytes` ({"id": scalar, "at": "/path", "event": E} or
 * {..., "error": E}) and readies its dispatch: the plan of the node at "at" (asked of the host
 * when not kept), the value made one of its domain (SPEC §3, luahier_asvalue), an error's
 * `where` its line (`input`:`number`) unless it names one. Returns LUAHIER_REQUEST_*. */
int luahier_readrequest(lua_State *L, struct luahier_Engine *engine, const char *bytes, size_t length,
                        int depth_limit, const char *input, long number, luahier_Request *request);

/* [-0, +0, m] Writes the outcome line of request `number` (its id at `id` if `has_id`), whose
 * dispatch along the plan at `plan` ended as `r` says, to `out` (emptied first): {"line", "id",
 * "status", "kind", "value", "by", "responder", "choice"} and a newline, the value's JSON at
 * most `available` bytes. Returns LUAHIER_JSON_WRITTEN, or LUAHIER_JSON_CAREFUL / _LIMIT when
 * the host must write it (the value needs its careful writing, or is past `available`). */
int luahier_writeoutcome(lua_State *L, long number, int id, int has_id, int plan, const struct luahier_Result *r,
                         size_t available, struct luahier_JSONOut *out);

#endif
