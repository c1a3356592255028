/* Limits: memory, instructions, time (limits.c). contract §7; the README's "Limits". */
#ifndef LUAHIER_LIMITS_H
#define LUAHIER_LIMITS_H

#include <lua.h>
#include <signal.h>
#include <stddef.h>

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

/* The signal that asked the process to stop (SIGINT, SIGTERM), 0 while none did. Defined and
 * set by the interrupt handler (Sources/CLuaHost/watchdog.c); every check reads it. */
extern volatile sig_atomic_t luahier_interrupt_signal;
/* How many times an interrupt was asked for (an error kept from an earlier one is not
 * raised again for a later one, after a reset). */
extern volatile sig_atomic_t luahier_interrupt_generation;

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
} luahier_WatchCell;

/* Per Lua state. The extra space of every thread points here (coroutines copy it). */
typedef struct luahier_Guard {
    void *host;                    /* the Swift LuaHost, unretained */
    /* Memory, counted by the allocator, plus what the host holds on the script's behalf. */
    size_t used, peak, limit;      /* limit 0: none */
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
} luahier_Guard;

/* The count hook runs every this many instructions; once tripped, at every instruction. Host
 * work is charged in the same units, and the clock is read every this many of them. */
#define LUAHIER_HOOK_INTERVAL 1000
/* Bytes allocated that count as one unit of work (a copy, a concatenation, a table grown). */
#define LUAHIER_BYTES_PER_UNIT 64
/* Room the error machinery gets past the memory cap once it has tripped (message handler,
 * traceback, the error table): the script itself can run no instruction by then. */
#define LUAHIER_MEMORY_GRACE (1 << 20)

/* [-0, +0, -] */
luahier_Guard *luahier_guard(lua_State *L);

/* [-0, +0, -] */
double luahier_now(void);

/* [-0, +0, -] Whether `ar` (with "S" filled) is a frame of the host's own Lua code (its
 * chunks are named "=[luahier ...]"): the sandbox's wrappers, `print`, the hier proxy. A
 * `where` never names one: it names the script's line that called it. */
int luahier_ishostcode(const lua_Debug *ar);

/* [-0, +0, -] Fills `ar` with the innermost Lua frame at `level` or above that has a line
 * and is not host code;
 * returns 0 when there is none. Reads only: safe from inside the allocator. */
int luahier_findluaframe(lua_State *L, int level, lua_Debug *ar);

/* [-0, +0, -] Remembers `ar`'s place in the guard, for errors that come without a handler. */
void luahier_noteplace(luahier_Guard *g, const lua_Debug *ar);

/* [-0, +0, -] Records a trip found outside the hook (by the allocator or host work) and makes
 * the running thread's next instruction raise it. Only ever on the Lua thread. */
void luahier_trip(luahier_Guard *g, int kind);

/* [-0, +0, -] Charges host work to the running budget: `units` instructions' worth. Reads
 * the clock once enough work has added up (or the watchdog prompted it), so long host work is
 * stopped by the deadline too. A trip makes the next Lua instruction raise. */
void luahier_chargework(luahier_Guard *g, long long units);

/* The allocator: counts every block at the size malloc really gives it (so the cap bounds
 * what the process holds, not what Lua asked for), and refuses growth past the limit unless
 * the host is allocating (host code must never see an allocation raise). A refusal trips the
 * memory limit of the running budget: sticky, like the others. Growth is also work: every
 * LUAHIER_BYTES_PER_UNIT bytes are charged, so copies and concatenations inside one
 * instruction count, and the clock is read as they add up. Shrinking never fails. */
void *luahier_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* [-0, +0, -] Fixes glibc's mmap threshold at 256 KiB (once per process). The memory cap
 * counts live bytes; with the dynamic threshold, once a large block (a 1 MB string, an input
 * line) is freed, later ones come from the heap, where freed memory stays resident, and the
 * process drifts far above what the cap counts. Mapped, they are given back when freed. */
void luahier_fixmmapthreshold(void);

void luahier_pushlimiterror(lua_State *L, luahier_Guard *g);

/* [-0, +0, v] Raises the tripped limit on `L`, whose hook now fires at every instruction. */
int luahier_raiselimit(lua_State *L, luahier_Guard *g);

/* The count hook. Once a limit trips it stays tripped and the hook fires at every
 * instruction, so a script's own pcall, xpcall, coroutine, __close or load-with-reader cannot
 * swallow it: the next instruction after the catch raises again. (The host also checks after
 * every protected call, so a trip that was swallowed and returned from still ends the entry.) */
void luahier_hook(lua_State *L, lua_Debug *ar);

/* [-0, +0, -] Makes `L` run the hook at its next instruction (no call when it already does:
 * lua_sethook walks every frame of the thread's stack). Async-signal-safe. */
void luahier_hooknext(lua_State *L);

/* [-0, +0, -] Installs the count hook on `L` (done once, on the main thread, at creation:
 * coroutines copy it when they are created). */
void luahier_installhook(lua_State *L);

/* [-0, +0, -] Starts a top-level entry's budget on `L` (nothing may be under way):
 * `instructions` (0: none) and `seconds` (0: none) of `scope`. The hook count starts afresh,
 * so the entry's instruction count is exact. */
void luahier_beginentry(lua_State *L, long long instructions, double seconds, int scope);

/* [-0, +0, -] Ends the top-level entry; returns what it tripped on (LUAHIER_TRIPPED_*). */
int luahier_endentry(lua_State *L);

/* [-0, +0, -] Starts a dispatch's budget inside the running one: its own `instructions` and
 * `seconds` (0: none), capped by what is left of the enclosing budget, which is saved in
 * `saved` for luahier_popbudget. Unwatched, the clock is not read: the dispatch's own time
 * starts at its first check (within one hook interval). A trip under way is inherited. */
void luahier_pushbudget(lua_State *L, luahier_Budget *saved, long long instructions, double seconds);

/* [-0, +0, -] Ends the dispatch's budget: the enclosing one is back, and goes on with what is
 * left of it (if that is spent too, its next instruction raises). Returns what the dispatch's
 * budget tripped on (LUAHIER_TRIPPED_*, 0: nothing). */
int luahier_popbudget(lua_State *L, const luahier_Budget *saved);

/* [-0, +0, -] Charges host work done for `L`'s state (luahier_chargework). */
void luahier_charge(lua_State *L, long long units);

/* [-0, +0, v] For C functions of the sandbox doing long work: charges `units` and raises the
 * limit if the budget is spent. */
void luahier_work(lua_State *L, long long units);

/* [-0, +0, -] What the running budget has tripped on (LUAHIER_TRIPPED_*, 0: nothing). */
int luahier_tripped(lua_State *L);

/* [-0, +0, -] luahier_tripped, for code that holds the guard and no state (the JSON writer). */
int luahier_guardtripped(luahier_Guard *g);

/* [-0, +0, -] Whether the function running at `ar`'s level is the one at registry reference
 * `ref` (0: none). */
int luahier_frameruns(lua_State *L, lua_Debug *ar, int ref);

#endif
