/* JSON into Lua, and `luahier dispatch`'s lines answered in C (lines.c): a request read from
 * JSON straight into Lua values by the one JSON reader (luahier_jsonread.h), the engine's
 * dispatch, and the outcome written as JSON, with nothing built in Swift on the way. A line
 * this path declines (anything unusual: a refusal, an id that is not a scalar, a value the C
 * writer leaves to the careful path) is answered by the host's own path (Sources/LuaHierarchy/
 * Rules/LineProcessor.swift), which reads it with the same reader and words every refusal.
 * Uses limits, the watchdog, jsonwrite (and CJSONReader), the walk's value rules and the
 * engine's driver. */
#ifndef LUAHIER_LINES_H
#define LUAHIER_LINES_H

#include <lua.h>
#include <stddef.h>

#include "luahier_enginetypes.h"
#include "luahier_jsonread.h"

struct luahier_Engine;
struct luahier_JSONOut;
struct luahier_Result;

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
 * when not kept), the value made one of its domain (contract §3, luahier_asvalue), an error's
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

/* ---- Runs of lines ------------------------------------------------------------------------- */

/* A line of a batch: its bytes at `start` in the batch's chunk (Sources/LuaHierarchy/Rules/
 * LineReader.swift), or only its length when it was too long to keep. */
typedef struct luahier_Line {
    long number;
    long start;
    long count;
    int oversized;
} luahier_Line;

/* Hands an answered line's outcome (with its newline) to the host, which keeps it for the
 * writer: the bytes live only for the call. Returns 0 when it could not take them. */
typedef int (*luahier_Deliver)(void *context, const char *bytes, size_t size);

/* A run of a batch's lines answered in C, one after the other, until one needs the host. */
typedef struct luahier_LineRun {
    /* The lines: lines[next] on, of `count`, in `chunk`; `input` names them in messages. */
    const char *chunk;
    const luahier_Line *lines;
    long count;
    long next;                  /* in: the first line to answer; out: the one the run stopped at */
    const char *input;
    int depth_limit;
    /* Each line's budget, as luahier_beginentry takes it. */
    long long instructions;
    double seconds;
    int scope;
    /* No line is begun at or after this (CLOCK_MONOTONIC seconds, luahier_now; 0: none): a
     * batch's own time budget. A line under way goes on within its own budget. */
    double start_by;
    /* Where the answers go, one line at a time, as each is answered (a flusher may write them
     * while the run goes on). */
    luahier_Deliver deliver;
    void *context;
    /* How many errors the host was handed to present so far (nested dispatches' and publishes'):
     * a line during which it moves has them in its outcome, which the host writes. */
    const long *presented;
    /* Out: lines answered by status (LUAHIER_STATUS_*), and for LUAHIER_RUN_DISPATCHED the
     * line's request and how its dispatch ended. */
    long counts[3];
    luahier_Request request;
    struct luahier_Result *result; /* in: where it goes */
} luahier_LineRun;

/* Why a run stopped at line `next`. */
enum {
    LUAHIER_RUN_DONE = 0,       /* every line is answered */
    LUAHIER_RUN_HOST = 1,       /* line `next` is the host's, untouched: too long, not a request C
                                 * reads, or an interrupt came before it */
    LUAHIER_RUN_DISPATCHED = 2, /* line `next` was dispatched and the host writes its outcome (it
                                 * has errors presented meanwhile, a trace, or a value for the careful
                                 * writer): pushed, the id, the plan, the value, its type, then the
                                 * LUAHIER_DISPATCH_RESULTS values `result` names */
    LUAHIER_RUN_INTERRUPTED = 3,/* an interrupt cut line `next` short: it is not answered */
    LUAHIER_RUN_CHANGED = 4,    /* the tree's chains changed during the line before `next` (the
                                 * rules' doing): the host looks at its settings before going on */
    LUAHIER_RUN_EXPIRED = 5     /* `start_by` passed before line `next` began: it is not answered */
};

/* [-0, +(0|4+LUAHIER_DISPATCH_RESULTS), m] Answers the run's lines: each read
 * (luahier_readrequest), dispatched inside its own top-level budget (nothing may be under way),
 * its outcome written (luahier_writeoutcome, the value within what the memory cap leaves) and
 * delivered (the host holds it on the rules' behalf until written). Returns LUAHIER_RUN_*. */
int luahier_answerrun(lua_State *L, struct luahier_Engine *engine, luahier_LineRun *run);

#endif
