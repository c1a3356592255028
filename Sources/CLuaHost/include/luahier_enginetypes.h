/* The dispatch engine (contract §4–5): the one place every dispatch runs, from Lua, from Swift,
 * from `luahier dispatch`, nested or not. docs/architecture.md ("How a dispatch runs") follows it.
 *
 * - A *plan* is a chain snapshot, made by the Swift side's ChainPlan (Sources/LuaHierarchy/
 *   Dispatch/ChainPlan.swift) and laid out as a Lua table (LuaEngine.swift): each domain's
 *   responders in dispatch order, with their filters and kinds.
 * - The *walk* (walk.c) is a Lua function that offers the value to each entry of the plan in
 *   order and applies what each answers: contract §4's table, all of it. Responders are Lua-to-
 *   Lua calls (a nested dispatch costs Lua one C-stack level, no more); Swift closures, alert
 *   responders and safety checks are host closures it calls the same way.
 * - The *driver* (engine.c) runs the walk in protected calls: a responder's raised error goes
 *   back into the walk at the next responder (the position rule), a tripped limit ends the
 *   dispatch, and the end is the outcome.
 *
 * This header is the engine's shared layout, types only (no unit of its own): plans, entries,
 * states, trace records, results and luahier_Engine, read by walk.c (luahier_walk.h),
 * engine.c (luahier_engine.h), lines.c (luahier_lines.h) and the host's Swift.
 */
#ifndef LUAHIER_ENGINETYPES_H
#define LUAHIER_ENGINETYPES_H

#include <lua.h>

/* A plan: a table, all in its array part. It holds what its dispatches need and nothing
 * that keeps a node alive (paths are strings). The plans kept are current while the tree's
 * chain-change count equals luahier_Engine.plans_epoch; once it moves, they all go. */
enum {
    LUAHIER_PLAN_WALK = 1,     /* the walk its dispatches run: the one that records traces, if
                                * the plan traces */
    LUAHIER_PLAN_AT = 2,       /* the origin's path */
    LUAHIER_PLAN_END = 3,      /* how a value that passes every entry ends: LUAHIER_STATUS_UNHANDLED,
                                * or _DETACHED when the chain's top is not the root */
    LUAHIER_PLAN_HOPS = 4,     /* nodes in the chain */
    LUAHIER_PLAN_TRACE = 5,    /* false, "path" or "full": what dispatches along it record */
    LUAHIER_PLAN_EVENTS = 6,   /* the first slot of the event entries, */
    LUAHIER_PLAN_ERRORS = 7,   /* of the error entries (where the event entries end), */
    LUAHIER_PLAN_LAST = 8,     /* and the slot after them */
    LUAHIER_PLAN_HOSTONLY = 9, /* no entry hands the value to Lua code: the host may keep what a
                                * value it made stands for (LuaEngine.swift) */
    LUAHIER_PLAN_RECORDS = 10, /* a traced plan's: the trace records its dispatches share (the
                                * walk's keptrecord), a table; false when it does not trace */
    LUAHIER_PLAN_ENTRIES = 11
};

/* One entry: its fields at these offsets from its first slot. */
enum {
    LUAHIER_ENTRY_CALL = 0,    /* what the walk calls with the value: a Lua function, or a host
                                * closure (a Swift closure, an alert responder, a safety check);
                                * once the responder is removed during a dispatch, the skipper,
                                * whose answer the walk takes as "not offered" */
    LUAHIER_ENTRY_FILTER = 1,  /* false (any type) or a set of type names */
    LUAHIER_ENTRY_CLASS = 2,   /* LUAHIER_CLASS_*: what its answers mean */
    LUAHIER_ENTRY_CROSS = 3,   /* the slot in the other domain's entries where the walk goes on
                                * when this entry changes the value's domain */
    LUAHIER_ENTRY_NODE = 4,    /* its node's path */
    LUAHIER_ENTRY_INDEX = 5,   /* its 1-based position on its node */
    LUAHIER_ENTRY_WHERE = 6,   /* where its code is, file:line */
    LUAHIER_ENTRY_KIND = 7,    /* the responder kind's name ("receiveEvent", ...) */
    LUAHIER_ENTRY_OBJECT = 8,  /* the host's object: for a host closure's entry, a userdata that
                                * holds it (the Swift responder, the arrival); for a Lua
                                * function's, the responder's address (a light userdata), which
                                * only tells it from others */
    LUAHIER_ENTRY_RUN = 9,     /* for a plain receive (any type; a Lua function or a host closure)
                                * and the plain receives right after it: the slot of the last
                                * of them, which the walk calls in a tight loop; false otherwise */
    LUAHIER_ENTRY_STRIDE = 10
};

/* What an entry's answer means (the walk's reading of contract §4's table). */
enum {
    LUAHIER_CLASS_RECEIVE = 1,   /* "handled", "notHandled" or a replacement of its domain */
    LUAHIER_CLASS_HANDLE = 2,    /* anything: handled */
    LUAHIER_CLASS_TRANSFORM = 3, /* a replacement of its domain */
    LUAHIER_CLASS_CATCH = 4,     /* an event in place of the error */
    LUAHIER_CLASS_ALERT = 5,     /* host: nil when the error is not alertable (it was not
                                  * offered), else "handled" and the recovery option chosen */
    LUAHIER_CLASS_ARRIVE = 6     /* host, the safety check as the value arrives at a declaring
                                  * node (not a responder): nil passes, else the violation error
                                  * that replaces the value */
};

/* A dispatch's state: a table per nesting depth, reused, that the walk keeps up to date so
 * the driver knows where things stood when a responder raised an error. The walk clears what
 * holds values as it ends (the driver, when it ends by an error): it holds nothing between
 * dispatches. */
enum {
    LUAHIER_STATE_REACHED = 1, /* the slot of the entry being called (0: none yet) */
    LUAHIER_STATE_VALUE = 2,   /* the value once a responder replaced it (false: the first), */
    LUAHIER_STATE_TYPE = 3,    /* its type, */
    LUAHIER_STATE_ERROR = 4,   /* and whether it is an error */
    LUAHIER_STATE_BEFORE = 5,  /* full tracing: a copy of the value the entry was called with */
    LUAHIER_STATE_RECORD = 6,  /* the trace record, while a traced walk is under way (true until its
                                * first step makes it; false when not traced) */
    LUAHIER_STATE_PASSED = 7,  /* the traced walk in a run of plain receives: the slot of the first
                                * of those that passed the value by and are not in the record yet
                                * (false outside a run, unless the run's step waits: below) */
    LUAHIER_STATE_PASSEDTO = 8, /* a run that ended with no record made: the slot of its last
                                 * entry, whose step waits for the next (false otherwise) */
    LUAHIER_STATE_SIZE = 8
};

/* A trace record: its plan, itself (so the record is the pair {plan, record} a traced outcome
 * keeps for its lazy trace), then its steps, up to the first with no entry. Made at a traced
 * dispatch's first step (until then state[LUAHIER_STATE_RECORD] is true); a dispatch that
 * ends with no more than a run passed by and the handling entry returns one its plan keeps
 * (LUAHIER_PLAN_RECORDS), which is never written to again. A step writes only
 * what it has, and the entries of a run of plain receives (LUAHIER_ENTRY_RUN) that pass the value
 * by one after another are one step of the record: the walk writes them once the run ends or an
 * entry of it does not pass (until then state[LUAHIER_STATE_PASSED] says where they start). */
enum {
    LUAHIER_TRACE_PLAN = 1,
    LUAHIER_TRACE_SELF = 2,
    LUAHIER_TRACE_STEPS = 3,
    LUAHIER_STEP_ENTRY = 0,    /* the entry's slot (of a run's steps: the first one's) */
    LUAHIER_STEP_INPUT = 1,    /* the type it was called with */
    LUAHIER_STEP_RESULT = 2,   /* "handled", "event" or "error" (replaced by a value of that
                                * domain), "raised"; nil: passed by ("notHandled") */
    LUAHIER_STEP_TYPE = 3,     /* the type of the replacement or raised error; of a run's steps,
                                * the slot of the last entry (none: a step that passed it alone) */
    LUAHIER_STEP_BEFORE = 4,   /* full tracing: copies of the value before and after a */
    LUAHIER_STEP_AFTER = 5,    /* replacement (none otherwise) */
    LUAHIER_STEP_STRIDE = 6
};

/* How a dispatch ended; the walk returns it, with the final value (luahier_Result). */
enum {
    LUAHIER_STATUS_HANDLED = 0,   /* an entry handled it */
    LUAHIER_STATUS_UNHANDLED = 1, /* it passed the last entry of its domain: LUAHIER_PLAN_END */
    LUAHIER_STATUS_DETACHED = 2
};

/* Interned words (the table at luahier_Engine.words_ref), so C pushes them without hashing:
 * an outcome's keys and words, and the value rules' fields. The one list: each word's name
 * and its text (luahier_pushwords makes the table from it). */
#define LUAHIER_WORDS(X) \
    X(TYPE, "type") X(MESSAGE, "message") X(WHERE, "where") X(CAUSE, "cause") \
    X(EVENT, "event") X(ERROR, "error") X(HANDLED, "handled") X(NOTHANDLED, "notHandled") \
    X(UNHANDLED, "unhandled") X(DETACHED, "detached") X(STATUS, "status") X(KIND, "kind") \
    X(VALUE, "value") X(AT, "at") X(BY, "by") X(RESPONDER, "responder") \
    X(INDEX, "index") X(CHOICE, "choice") X(ERRORTYPE, "Error") X(LUAERROR, "LuaError")

enum {
    LUAHIER_WORD_NONE = 0,
#define LUAHIER_WORD_NAME(name, text) LUAHIER_WORD_##name,
    LUAHIER_WORDS(LUAHIER_WORD_NAME)
#undef LUAHIER_WORD_NAME
    LUAHIER_WORD_END,
    LUAHIER_WORD_COUNT = LUAHIER_WORD_END - 1
};

/* The most dispatches nested at once (the depth limit is at most 180, Dispatcher.depthLimits). */
#define LUAHIER_MAX_DEPTH 200

/* What lines.c's builder remembers from one read to the next, kept in luahier_Engine (the
 * lines of a stream look alike): the sizes of the tables last read at each depth (up to
 * LUAHIER_JSON_SHAPE_DEPTH), so the next ones are made that size and fill without a rehash. (A cache of the short strings made last was
 * measured too: Lua's own interning costs no more than looking one up.) */
#define LUAHIER_JSON_SHAPE_DEPTH 8
typedef struct luahier_JSONMemory {
    unsigned char members[LUAHIER_JSON_SHAPE_DEPTH];
    unsigned char items[LUAHIER_JSON_SHAPE_DEPTH];
} luahier_JSONMemory;

struct luahier_Engine;

/* How a dispatch ended, for whoever started it. The stack indices stay valid until the caller
 * pops them: the driver leaves the final value, the choice and the trace record on the stack. */
typedef struct luahier_Result {
    int status;                /* LUAHIER_STATUS_* */
    int is_error;              /* the final value's domain */
    int slot;                  /* handled: the entry's slot in the plan; else 0 */
    int value;                 /* stack index of the final value, */
    int type;                  /* of its type, */
    int choice;                /* of the recovery option an alert handler chose (or nil), */
    int trace;                 /* of the trace record (or nil) */
    int tripped;               /* LUAHIER_TRIPPED_* of the limit that ended it (0: none) */
    int chain_cut;             /* an unhandled end: the chain's top was not the root (contract §2) */
    long long serial;          /* which dispatch it was (luahier_Engine.serials) */
} luahier_Result;

/* How many values luahier_rundispatch leaves on the stack. */
#define LUAHIER_DISPATCH_RESULTS 8

/* One hierarchy's engine: what C shares with the host (LuaEngine.swift). */
typedef struct luahier_Engine {
    void *host;                /* the Swift engine, unretained */
    const long *changes;       /* the tree's chain-change count */
    long *depth;               /* dispatches and publishes under way, nested */
    long depth_limit;
    /* registry references */
    int walk_ref;              /* the walk (walk.c), and its variant that records traces: */
    int traced_walk_ref;       /* LUAHIER_PLAN_WALK holds one of them */
    int plans_ref;             /* a node's address (light userdata) -> its plan */
    long plans_epoch;          /* the chain-change count the plans kept were made at */
    struct luahier_TagSet *tags; /* the domain each table travelled as (luahier_tags.h): a
                                * table never comes back as the other domain */
    int state_refs[LUAHIER_MAX_DEPTH + 1]; /* depth -> its state table (0: not made yet) */
    lua_State *threads[LUAHIER_MAX_DEPTH + 1]; /* depth -> the thread its dispatch runs on (a
                                * removal finds the plans under way in their walks' frames) */
    long long serials[LUAHIER_MAX_DEPTH + 1]; /* depth -> which dispatch runs there: each gets
                                * the next number */
    int words_ref;             /* LUAHIER_WORD_* -> the word */
    int expected_ref;          /* kind name -> what it must return, for contract errors */
    const void *handled;       /* the interned verdicts */
    const void *not_handled;
    long long dispatch_charge; /* charged to the instruction budget per dispatch, and */
    long long dispatch_instructions; /* a dispatch's own limits (0: none) */
    double dispatch_seconds;
    int presents;              /* the host presents errors that end unhandled (at depths from
                                * `presents_from` on), */
    long presents_from;
    int observes;              /* and sees every end (an observer) */
    /* Into the host. None of them raises; each runs as a host function does (host mode). */
    /* [-0, +1] The current plan for the node at address `node`, made if need be. */
    void (*plan_for)(void *host, lua_State *L, void *node);
    /* [-0, +(0|1)] The current plan of the node at `path` (`length` bytes), made if need be
     * and kept by its path too (with `make` 0, the node is only looked up: nothing pushed).
     * Returns LUAHIER_PLAN_FOUND, _NO_NODE or _NOT_A_PATH (luahier_lines.h). */
    int (*plan_at)(void *host, lua_State *L, const char *path, size_t length, int make);
    /* [-0, +0] A dispatch along the plan at `plan` ended as `r` says: present an unhandled error
     * (as the policy says), let an observer see it. */
    void (*ended)(void *host, lua_State *L, int plan, const luahier_Result *r);
    /* [-0, +1] A host-made error: LUAHIER_FAIL_*. */
    void (*push_failure)(void *host, lua_State *L, int failure);
    /* Where the C writer writes one outcome line (the host's buffer, LuaJSON.swift). */
    struct luahier_JSONOut *json_out;
    /* What reading request lines into Lua remembers from line to line (luahier_readrequest). */
    luahier_JSONMemory json_memory;
    /* Counters, for tests: dispatches run, and plans made. */
    long long dispatches, plans_made;
} luahier_Engine;

/* What push_failure makes. */
enum {
    LUAHIER_FAIL_DEPTH = 1,    /* DispatchDepthExceeded at the depth limit */
    LUAHIER_FAIL_NOMEMORY = 2  /* malloc failed with no memory cap set */
};
#endif
