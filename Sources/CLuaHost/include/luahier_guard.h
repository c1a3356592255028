/* The guard (guard.c): what the host keeps per Lua state for its limits, reached from every
 * thread of the state through Lua's extra space. Types only, and the one accessor: the units
 * above read and write its fields (limits.c owns the budgets, errors.c reads the walk refs,
 * host.c queues releases, watchdog.c publishes deadlines).
 *
 * The host's C units, each with its own header, in dependency order (a unit includes only
 * headers of units before it; CJSONReader and CSignals are targets of their own, below all):
 *   guard -> tags -> errors -> host -> limits -> watchdog (+ CSignals) -> sandbox -> pattern
 *   -> jsonwrite (+ CJSONReader) -> tape (no Lua) -> walk -> engine -> lines
 * Stack notes `[-o, +p, x]` follow the Lua manual: pops, pushes, and whether it can raise
 * (`-` never, `m` only on memory errors, `e` any error, `v` raises on purpose). */
#ifndef LUAHIER_GUARD_H
#define LUAHIER_GUARD_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

/* Which limit a budget tripped on (sticky until the budget ends). */
enum {
    LUAHIER_TRIPPED_NONE = 0,
    LUAHIER_TRIPPED_INSTRUCTIONS = 1,
    LUAHIER_TRIPPED_TIME = 2,
    LUAHIER_TRIPPED_MEMORY = 3,
    /* Not a limit: SIGINT or SIGTERM asked the process to stop. It trips every budget out to
     * the top-level entry, and no new entry runs an instruction until it is reset. */
    LUAHIER_TRIPPED_INTERRUPTED = 4
};

/* The errors the host made of rules failing while a top-level entry ran, whether or not a
 * responder caught them (luahier_Guard.failures): a server counts them apart from the errors
 * rules report of their own (docs/serve.md, metrics). One bit per error type. */
enum {
    LUAHIER_FAILED_LUA = 1 << 0,            /* LuaError: a raise, Lua's own or of a non-error */
    LUAHIER_FAILED_CONTRACT = 1 << 1,       /* ResponderContractError */
    LUAHIER_FAILED_DEPTH = 1 << 2,          /* DispatchDepthExceeded */
    LUAHIER_FAILED_HOST = 1 << 3,           /* HostError */
    LUAHIER_FAILED_PAYLOAD = 1 << 4,        /* PayloadError */
    LUAHIER_FAILED_NOMEMORY = 1 << 5,       /* MemoryError: malloc failed, with no cap */
    LUAHIER_FAILED_INSTRUCTIONS = 1 << 6,   /* InstructionLimitExceeded */
    LUAHIER_FAILED_TIME = 1 << 7,           /* TimeLimitExceeded */
    LUAHIER_FAILED_MEMORY = 1 << 8          /* MemoryLimitExceeded */
};

/* Whose limit bounds a budget: the top-level chunk's or a dispatch's (for messages). */
enum { LUAHIER_SCOPE_CHUNK = 0, LUAHIER_SCOPE_DISPATCH = 1 };

/* One budget: a top-level entry's (a chunk, or a dispatch started from Swift), or a dispatch's
 * nested in it. A nested budget is its own limits capped by what is left of the enclosing one;
 * the enclosing budget is saved by the caller and restored when the nested one ends. */
typedef struct luahier_Budget {
    long long trip_at;            /* the guard's `spent` at which it trips (LLONG_MAX: never) */
    long long instruction_limit;  /* the limit behind trip_at, for messages (0: none) */
    double deadline;              /* CLOCK_MONOTONIC seconds (0: none) */
    double time_limit;            /* the limit behind the deadline, for messages */
    double own_time;              /* a dispatch's own seconds, not started yet: its clock starts
                                   * at the first check inside it, so entering one reads no clock */
    int instruction_scope, time_scope; /* LUAHIER_SCOPE_*: whose limits these are */
    int exceeded;                 /* LUAHIER_TRIPPED_* */
} luahier_Budget;

/* What a state shows the watchdog (Sources/CLuaHost/watchdog.c): the thread running an entry of it
 * and the innermost deadline known. Written by that thread, read by the watchdog's. */
typedef struct luahier_WatchCell {
    volatile long tid;             /* the kernel id of the thread in an entry (0: none) */
    volatile double deadline;      /* CLOCK_MONOTONIC seconds (0: none) */
    void *volatile guard;          /* the state's luahier_Guard (NULL: the cell is free) */
    volatile int pending;          /* a signal was sent and its handler has not run yet: no
                                    * other is sent (they would queue up behind a slow one) */
    volatile long progress;        /* bumped by the Lua thread each time it shows it can be
                                    * stopped: a check of the budget, the hook, host code */
    volatile long entry_line;      /* the input line the entry answers (0: none), and */
    char entry_name[96];           /* what the entry runs (a script, an input), for the
                                    * message when the process must stop (luahier_watchdog.h) */
    volatile int background;       /* a shadow candidate's state: one stuck is left to finish
                                    * its call, and the process goes on */
} luahier_WatchCell;

/* Blocks Lua asks for of at most 264 bytes come in 16 size classes (limits.c). */
#define LUAHIER_SIZE_CLASSES 16

/* The domain each live table has travelled as (tags.c, luahier_tags.h), by the table's
 * address: open addressing in `slots` (an address | 1 for an event, | 0 for an error; 0 an
 * empty slot), held by a userdata of the state so the memory cap counts it. */
typedef struct luahier_TagSet {
    uintptr_t *slots;              /* NULL: no set (not made yet, or the state is closing) */
    size_t count;                  /* tables tagged */
    unsigned bits;                 /* log2 of the slots */
    uint64_t seed;                 /* the hash's secret: where a table's probe starts */
    int reseed_due;                /* a look-up walked a long run: the next tag draws a new seed */
    size_t longest_probe;          /* the longest probe a tag went on with: for tests */
    size_t table_bytes;            /* what Lua frees a table's block with (0: no set) */
    int ref;                       /* registry reference to the userdata holding `slots` */
} luahier_TagSet;

/* Per Lua state. The extra space of every thread points here (coroutines copy it). */
typedef struct luahier_Guard {
    void *host;                    /* the Swift LuaHost, unretained */
    /* Memory, counted by the allocator, plus what the host holds on the script's behalf. */
    size_t used, peak, limit;      /* limit 0: none */
    /* Freed small blocks kept for reuse, one list per size class (limits.c): the collector
     * frees a heap's worth of them at once, more than malloc's own per-thread cache keeps. */
    void *cached_blocks[LUAHIER_SIZE_CLASSES + 1];
    size_t cached_bytes;
    int in_host;                   /* 1 while Swift code runs: its allocations never fail */
    int memory_refused;            /* an allocation was refused since the budget began */
    void *refused_block;           /* the last request refused (Lua retries it once, after a */
    size_t refused_size;           /* full collection) */
    int refusal_pending;           /* a request was refused and no retry has yet succeeded: a
                                    * refusal Lua does not retry (a string buffer's growth, in
                                    * string.rep, .., table.concat, string.pack) raises a plain
                                    * "not enough memory" that pcall could catch, so it trips
                                    * the cap at the next instruction or host check */
    /* Instructions and time. */
    int active;                    /* a budgeted entry (a chunk, a dispatch) is under way */
    int hooked;                    /* the count hook is wanted: an instruction budget, or a time
                                    * limit the watchdog cannot enforce (LuaHost.init) */
    long long spent;               /* instructions and charged host work since the entry began */
    long long work;                /* host work and allocation since the clock was last read */
    /* Deterministic measures of all the work done for the state, never reset (the scaling
     * test reads them: Tests/LuaHierarchyTests/ScalingTests.swift): Lua instructions the count
     * hook saw (under an instruction budget) and host work units charged, and bytes allocated (the Lua heap's growth and the host's charged copies). */
    long long work_total, allocated_total;
    luahier_Budget budget;         /* the innermost budget */
    unsigned failures;             /* LUAHIER_FAILED_* since the top-level entry began: a
                                    * limit's set where its error is made (limits.c), a raise
                                    * of a responder or a subscriber by luahier_noteraised
                                    * (errors.c); kept after the entry ends until the next
                                    * one begins */
    /* Where Lua last was when the hook ran: the place named by memory errors, which come
     * without a message handler. */
    char last_source[LUA_IDSIZE];
    int last_line;
    lua_State *main;               /* the main thread */
    lua_State *running;            /* the thread running Lua: main, or the coroutine the
                                    * sandbox's resume entered (where a trip sets the hook) */
    /* Registry references to the dispatch engine's walks, untraced and traced (0: none yet):
     * frames of the host's that tracebacks leave out, and where a tripped limit waits for the
     * next responder. */
    int walk_ref, traced_walk_ref;
    luahier_WatchCell *watch;      /* the watchdog's cell for this state (NULL: not watched) */
    volatile int prompted;         /* set by the watchdog's signal: the next charge reads the
                                    * clock (C loops that never reach an instruction: sort,
                                    * patterns) */
    /* Swift objects whose userdata Lua finalized, for the host to release at its next safe
     * point (malloc'd; never Lua memory). Finalizers only append here: no Swift runs in a
     * collection, nor while the state closes. */
    void **released;
    size_t released_count, released_capacity;
    int interrupt_ref;             /* registry reference to the entry's interrupt error, made
                                    * where it first tripped and raised again as it unwinds
                                    * (0: none), and the interrupt it is for */
    int interrupt_generation;
    luahier_TagSet tags;           /* the domain tags: the allocator forgets a freed table's */
} luahier_Guard;

/* [-0, +0, -] The guard of `L`'s state. */
luahier_Guard *luahier_guard(lua_State *L);

#endif
