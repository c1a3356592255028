/* JSON into Lua, and `luahier dispatch`'s lines answered in C (lines.c): a request read from
 * JSON into Lua values by the one JSON reader (luahier_jsonread.h), straight or through the
 * tape the dispatch reader made of it (luahier_tape.h), the engine's dispatch, and the outcome
 * written as JSON, with nothing built in Swift on the way. Every rule
 * of the line protocol is here, once: whether a request is valid (luahier_readrequest, which
 * says why not with a code the host words), and how an outcome line is laid out
 * (luahier_writeoutcome, which the host calls too for the lines it finishes: a trace, errors
 * presented, a value for the careful writer, a refusal).
 * Uses limits, the watchdog, jsonwrite (and CJSONReader), the walk's value rules and the
 * engine's driver. */
#ifndef LUAHIER_LINES_H
#define LUAHIER_LINES_H

#include <lua.h>
#include <stddef.h>

#include "luahier_enginetypes.h"
#include "luahier_jsonread.h"
#include "luahier_tape.h"

struct luahier_Engine;
struct luahier_JSONOut;
struct luahier_Result;

/* [-0, +(0|1), m] Reads the value at the reader's place, at nesting depth `depth`, into a Lua
 * value (JSON's nulls as Lua's nil: a null member is absent, a null item refused): objects
 * become tables of their members, arrays sequences, integers integers, other numbers floats.
 * With `memory` (NULL: none), tables are made the sizes it remembers, and it learns from this
 * read. Returns 1, or 0 with nothing pushed and the reader saying why. The direct reading,
 * which the tapes of request lines (luahier_readrequest) are held to. */
int luahier_pushjson(lua_State *L, luahier_JSONReader *reader, int depth, luahier_JSONMemory *memory);

/* What a request line holds, once read. */
typedef struct luahier_Request {
    int has_id;       /* the line has an "id" (pushed: nil for null) */
    int id_is_text;   /* the id is an array, an object or a string longer than LUAHIER_ID_KEPT:
                       * nil is pushed, and the host reads it from its text (it is echoed as it
                       * came) */
    long id_start, id_length; /* the id's JSON text in the line */
    long at_start, at_length; /* "at"'s JSON text in the line */
    int is_error;     /* "error" rather than "event" (the last payload given) */
    int payloads;     /* how many payloads were given (a null one is absent) */
    int payload_kinds;/* 1: an "event" was given, 2: an "error" */
    int refusal;      /* LUAHIER_REFUSE_* */
    long column;      /* LUAHIER_REFUSE_JSON: where the reader stopped */
} luahier_Request;

/* The longest string id held in Lua (longer ones are read from the line's text). */
#define LUAHIER_ID_KEPT 256

enum {
    LUAHIER_REQUEST_READY = 1,   /* pushed: the id (or nil), the plan, the value, its type */
    LUAHIER_REQUEST_REFUSED = 0  /* pushed: 4 values (below); `refusal` says why */
};

/* Why a request line is refused: the one place a request's validity is decided (the host only
 * words each, Sources/LuaHierarchy/Lines/LineProcessor.swift). When several apply, the first in
 * this order is given, the order a reader meets them. Pushed with each: the id's slot, "at" (or
 * the plan), the payload as read, then the first unknown key (_UNKNOWN_FIELD) or the reader's
 * message (_JSON). */
enum {
    LUAHIER_REFUSE_NONE = 0,
    LUAHIER_REFUSE_JSON,           /* not JSON (the reader's message and `column`) */
    LUAHIER_REFUSE_NOT_OBJECT,     /* JSON, but not an object */
    LUAHIER_REFUSE_UNKNOWN_FIELD,  /* a member other than id, at, event, error */
    LUAHIER_REFUSE_NO_AT,          /* no "at" */
    LUAHIER_REFUSE_AT_NOT_PATH,    /* "at" is not a string (its text at at_start) */
    LUAHIER_REFUSE_NOT_A_PATH,     /* "at" is not a path (no leading '/', an empty name) */
    LUAHIER_REFUSE_NO_NODE,        /* no node at "at" */
    LUAHIER_REFUSE_NO_PAYLOAD,     /* no "event" or "error" */
    LUAHIER_REFUSE_PAYLOADS,       /* more than one (`payloads`, `payload_kinds`) */
    LUAHIER_REFUSE_NOT_A_MESSAGE,  /* the payload is not a message of its domain */
    LUAHIER_REFUSE_MEMORY          /* the request does not fit under the memory cap */
};

/* What the host's plan_at reports (luahier_Engine.plan_at). */
enum { LUAHIER_PLAN_NO_NODE = 0, LUAHIER_PLAN_FOUND = 1, LUAHIER_PLAN_NOT_A_PATH = 2 };

/* [-0, +4, m] Readies the dispatch of request line `bytes` (`length` bytes; {"id": any, "at":
 * "/path", "event": E} or {..., "error": E}): read from its tape when it has one
 * (luahier_tape.h, read with `depth_limit`), else straight from its bytes by the reader, the
 * same way; its value's tables made, the plan of the node at "at" (asked of the host when not
 * kept), the value made one of its domain (contract §3, luahier_asvalue), an error's `where`
 * its line (`input`:`number`) unless it names one. Returns LUAHIER_REQUEST_*. */
int luahier_readrequest(lua_State *L, struct luahier_Engine *engine, const char *bytes, size_t length,
                        const uint64_t *tape, int depth_limit, const char *input, long number,
                        luahier_Request *request);

/* [-0, +(0|1), m] The value a tape of luahier_tapevalue holds (of the text `bytes`), made in
 * Lua as luahier_pushjson makes it: 1, or 0 with nothing pushed and the reader's refusal in
 * `message` (`message_length` bytes, valid while the tape is) and `column`. */
int luahier_pushtapevalue(lua_State *L, const uint64_t *tape, const char *bytes, const char **message,
                          size_t *message_length, size_t *column);

/* One field of an outcome line: a Lua value at stack `index` (0: none), or the host's `text`
 * (JSON for the JSON fields, the string itself for the string fields; NULL: none), or
 * `deferred`: the host writes it in place, where luahier_writeoutcome stops for it. */
typedef struct luahier_Field {
    int index;
    const char *text;
    size_t length;
    int deferred;
} luahier_Field;

/* The status of an outcome line that refuses its request. */
#define LUAHIER_OUTCOME_INVALID 3

/* One outcome line (docs/line-protocol.md), whoever made its parts: C for the lines it answers
 * end to end, the host for the rest (a trace, errors presented, a value for the careful writer,
 * a refusal). */
typedef struct luahier_Outcome {
    long number;
    int status;                /* LUAHIER_STATUS_*, or LUAHIER_OUTCOME_INVALID */
    int is_error;              /* the value's domain */
    int has_id;
    luahier_Field id;          /* JSON; an id with neither is null */
    luahier_Field value;       /* JSON */
    size_t value_room;         /* the most bytes the value's JSON may take */
    luahier_Field by, responder, choice;           /* strings */
    luahier_Field presented;   /* JSON (an array) */
    long presented_omitted;
    luahier_Field trace;       /* JSON (an array) */
    long trace_omitted;
    luahier_Field error_type, error_message, error_where; /* strings, for an invalid line */
} luahier_Outcome;

/* Where luahier_writeoutcome starts (LUAHIER_OUTCOME_START), and where it goes on after the
 * host wrote a deferred field. */
enum {
    LUAHIER_OUTCOME_START = 0,
    LUAHIER_OUTCOME_AFTER_VALUE,
    LUAHIER_OUTCOME_AFTER_PRESENTED,
    LUAHIER_OUTCOME_AFTER_TRACE
};

/* What luahier_writeoutcome returns when it stopped for a deferred field. */
#define LUAHIER_OUTCOME_DEFERRED 2

/* [-0, +0, m] Writes outcome line `o` and a newline to `out` (emptied first), from `*stage`:
 * {"line", "id", "status", "kind", "value", "by", "responder", "choice", "presented",
 * "presentedOmitted", "trace", "traceOmitted"}, absent fields left out, or {"line", "id",
 * "status": "invalid", "error": {"type", "message", "where"}}: the one layout of an outcome
 * line. Returns LUAHIER_JSON_WRITTEN; LUAHIER_OUTCOME_DEFERRED when it stopped before a
 * deferred field (its key written), `*stage` where to go on once the host wrote it after what
 * `out` holds (large parts are written where they are kept, never copied); or
 * LUAHIER_JSON_CAREFUL / _LIMIT when the host must write the line (a Lua value needs the
 * careful writer, or the value is past `value_room`). With no Lua values, `L` may be NULL. */
int luahier_writeoutcome(lua_State *L, const luahier_Outcome *o, struct luahier_JSONOut *out, int *stage);

/* ---- Runs of lines ------------------------------------------------------------------------- */

/* A line of a batch: its bytes at `start` in the batch's chunk (Sources/LuaHierarchy/Pool/
 * LineReader.swift), or only its length when it was too long to keep. */
typedef struct luahier_Line {
    long number;
    long start;
    long count;
    int oversized;
    long tape;                  /* where its tape starts in the run's `tape` (-1: none) */
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
    /* The lines' tapes read ahead (luahier_tape.h; NULL: none): a line without one, or read
     * with another depth limit, is read straight from its bytes. */
    const uint64_t *tape;
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
    /* In: nonzero to name each line's handling responder while `deliver` runs (for a
     * responder key, docs/replay.md): its `file:line` and its node's path (pointing into the
     * plan, valid only during `deliver`) and its 1-based place on the node. Left NULL and 0 for
     * a line no responder handled, and untouched when zero: off, it costs one test per line. */
    int names_responders;
    const char *responder_where;
    size_t responder_where_length;
    const char *responder_node;
    size_t responder_node_length;
    long responder_index;
} luahier_LineRun;

/* Why a run stopped at line `next`. */
enum {
    LUAHIER_RUN_DONE = 0,       /* every line is answered */
    LUAHIER_RUN_TOO_LONG = 1,   /* line `next` was too long to keep: the host refuses it */
    LUAHIER_RUN_DISPATCHED = 2, /* line `next` was dispatched and the host writes its outcome (it
                                 * has errors presented meanwhile, a trace, an id read from its
                                 * text, or a value for the careful writer): pushed, the id, the
                                 * plan, the value, its type, the LUAHIER_DISPATCH_RESULTS values
                                 * `result` names, then up to 4 more (the handled entry's node and
                                 * place, per writing tried) */
    LUAHIER_RUN_INTERRUPTED = 3,/* an interrupt came before or during line `next`: it is not answered */
    LUAHIER_RUN_CHANGED = 4,    /* the tree's chains changed during the line before `next` (the
                                 * rules' doing): the host looks at its settings before going on */
    LUAHIER_RUN_EXPIRED = 5,    /* `start_by` passed before line `next` began: it is not answered */
    LUAHIER_RUN_REFUSED = 6     /* line `next` is not a valid request: pushed as luahier_readrequest
                                 * leaves a refusal, `request` says why, and the host words it */
};

/* [-0, +(0|4|4+LUAHIER_DISPATCH_RESULTS+(0|2|4)), m] Answers the run's lines: each read
 * (luahier_readrequest), dispatched inside its own top-level budget (nothing may be under way),
 * its outcome written (luahier_writeoutcome, the value within what the memory cap leaves) and
 * delivered (the host holds it on the rules' behalf until written). Returns LUAHIER_RUN_*,
 * leaving what _REFUSED and _DISPATCHED say (the host reads them by index from the top it
 * had, and sets the top back). */
int luahier_answerrun(lua_State *L, struct luahier_Engine *engine, luahier_LineRun *run);

#endif
