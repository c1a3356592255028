/*
 * The one C header of LuaHierarchy's Lua bridge.
 *
 * 1. Re-exports the Lua API macros Swift cannot import (function-like macros and
 *    `LUA_REGISTRYINDEX`) as `static inline` functions with the same meaning.
 * 2. Holds the two pieces of the bridge that must be C, because they raise Lua errors
 *    (`lua_error` longjmps, and a longjmp must never cross a Swift frame):
 *    - `luahier_trampoline`: every Swift function callable from Lua is entered through it;
 *      the Swift side returns a negative count to ask the trampoline to raise the error
 *      it left on the stack, after the Swift frame has returned.
 *    - `luahier_msgh`: the message handler of every protected call the host makes; it turns
 *      any error value into a table with `type`, `message`, `where` and `traceback`.
 *
 * Stack notes `[-o, +p, x]` follow the Lua manual: pops, pushes, and whether it can raise
 * (`-` never, `m` only on memory errors, `e` any error).
 */
#ifndef LUAHIER_SHIM_H
#define LUAHIER_SHIM_H

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- Constants ---------------------------------------------------------------------- */

static const int luahier_REGISTRYINDEX = LUA_REGISTRYINDEX;

/* ---- Macro re-exports ---------------------------------------------------------------- */

/* [-n, +0, -] */
static inline void luahier_pop(lua_State *L, int n) { lua_pop(L, n); }
/* [-(nargs+1), +(nresults|1), -] */
static inline int luahier_pcall(lua_State *L, int nargs, int nresults, int msgh) {
    return lua_pcall(L, nargs, nresults, msgh);
}
/* [-0, +1, m] */
static inline void luahier_newtable(lua_State *L) { lua_newtable(L); }
/* [-0, +1, -] */
static inline void luahier_pushcfunction(lua_State *L, lua_CFunction f) { lua_pushcfunction(L, f); }
/* [-0, +1, -] */
static inline void luahier_pushglobaltable(lua_State *L) { lua_pushglobaltable(L); }
/* [-1, +1, -] */
static inline void luahier_insert(lua_State *L, int idx) { lua_insert(L, idx); }
/* [-1, +0, -] */
static inline void luahier_remove(lua_State *L, int idx) { lua_remove(L, idx); }
/* [-1, +0, -] */
static inline void luahier_replace(lua_State *L, int idx) { lua_replace(L, idx); }
/* [-0, +0, -] */
static inline int luahier_upvalueindex(int i) { return lua_upvalueindex(i); }
/* [-0, +0, -] */
static inline void *luahier_getextraspace(lua_State *L) { return lua_getextraspace(L); }
/* [-0, +0, -] (never converts: callers check the type first) */
static inline lua_Number luahier_tonumber(lua_State *L, int idx) { return lua_tonumberx(L, idx, NULL); }
/* [-0, +0, -] */
static inline lua_Integer luahier_tointeger(lua_State *L, int idx) { return lua_tointegerx(L, idx, NULL); }
/* [-0, +0, -] A full collection (finalizers run protected; their errors become warnings). */
static inline void luahier_fullgc(lua_State *L) { lua_gc(L, LUA_GCCOLLECT); }

/* ---- The trampoline ------------------------------------------------------------------ */

/* A Swift function exposed to Lua. It returns the number of results it pushed, or -1
 * after pushing an error value: the trampoline raises it once Swift has returned. */
typedef int (*luahier_HostFunction)(lua_State *L);

static inline void luahier_notewalkchange(lua_State *L);

static inline int luahier_endhostcall(lua_State *L, int results);

/* [-?, +?, e]  upvalue 1: the Swift entry as a light userdata; further upvalues are the
 * entry's own. A string error gets the caller's `chunk:line: ` prefix, as luaL_error does. */
static inline int luahier_trampoline(lua_State *L) {
    luahier_HostFunction entry = (luahier_HostFunction)lua_touserdata(L, lua_upvalueindex(1));
    int results = entry(L);
    luahier_notewalkchange(L);
    return luahier_endhostcall(L, results);
}

/* [-?, +?, e] The end of a host call: its `results`, or the error it left raised. */
static inline int luahier_endhostcall(lua_State *L, int results) {
    if (results >= 0) return results;
    if (lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

/* [-nup, +1, -] `function` (the trampoline, or a C function that ends in it) as a closure
 * over `entry` and the `nup` upvalues already pushed. */
static inline void luahier_pushhostclosure(lua_State *L, luahier_HostFunction entry, lua_CFunction function, int nup) {
    lua_pushlightuserdata(L, (void *)entry);
    lua_insert(L, -(nup + 1));
    lua_pushcclosure(L, function, nup + 1);
}

/* [-nup, +1, -] The trampoline as a closure over `entry` and `nup` upvalues already pushed. */
static inline void luahier_pushhostfunction(lua_State *L, luahier_HostFunction entry, int nup) {
    luahier_pushhostclosure(L, entry, luahier_trampoline, nup);
}


/* ---- Limits: memory, instructions, time ------------------------------------------------ */

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
 * set by the interrupt handler (Sources/CLuaWatchdog); every check reads it. */
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

/* What a state shows the watchdog (Sources/CLuaWatchdog): the thread running an entry of it
 * and the innermost deadline known. Written by that thread, read by the watchdog's. */
typedef struct luahier_WatchCell {
    volatile long tid;             /* the kernel id of the thread in an entry (0: none) */
    volatile double deadline;      /* CLOCK_MONOTONIC seconds (0: none) */
    void *volatile guard;          /* the state's luahier_Guard (NULL: the cell is free) */
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
    /* Instructions and time. */
    int active;                    /* a budgeted entry (a chunk, a dispatch) is under way */
    int hooked;                    /* the count hook is wanted (an instruction or time limit) */
    long long spent;               /* instructions and charged host work since the entry began */
    long long work;                /* host work and allocation since the clock was last read */
    luahier_Budget budget;         /* the innermost budget */
    /* Where Lua last was when the hook ran: the place named by memory errors, which come
     * without a message handler. */
    char last_source[LUA_IDSIZE];
    int last_line;
    lua_State *main;               /* the main thread */
    lua_State *running;            /* the thread running Lua: main, or the coroutine the
                                    * sandbox's resume entered (where a trip sets the hook) */
    int run_ref;                   /* registry reference to the responder-run loop (0: none) */
    int plan_ref;                  /* registry reference to the plan walk of the fast path */
    /* While the fast path walks a plan: the tree's chain-change count and its value when the
     * walk began (NULL otherwise). The trampoline marks the walk stale when a host call
     * moved it, so the walk calls no responder of a chain that changed under it. */
    const long *walk_changes;
    long walk_changes_at_start;
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
static inline luahier_Guard *luahier_guard(lua_State *L) {
    return *(luahier_Guard **)lua_getextraspace(L);
}

/* [-0, +0, -] */
static inline double luahier_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* [-0, +0, -] Whether `ar` (with "S" filled) is a frame of the host's own Lua code (its
 * chunks are named "=[luahier ...]"): the sandbox's wrappers, `print`, the hier proxy. A
 * `where` never names one: it names the script's line that called it. */
static inline int luahier_ishostcode(const lua_Debug *ar) {
    if (ar->source == NULL) return 0;
    /* Host chunks are loaded stripped (luahier_strip), which names their source "=?"; the
     * sandbox loads text only, so no script's function is stripped. */
    return strncmp(ar->source, "=[luahier", 9) == 0 || (strcmp(ar->source, "=?") == 0 && *ar->what != 'C');
}

/* [-0, +0, -] Fills `ar` with the innermost Lua frame at `level` or above that has a line
 * and is not host code;
 * returns 0 when there is none. Reads only: safe from inside the allocator. */
static inline int luahier_findluaframe(lua_State *L, int level, lua_Debug *ar) {
    for (; lua_getstack(L, level, ar); level++) {
        if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0 && !luahier_ishostcode(ar)) return 1;
    }
    return 0;
}

/* [-0, +0, -] Remembers `ar`'s place in the guard, for errors that come without a handler. */
static inline void luahier_noteplace(luahier_Guard *g, const lua_Debug *ar) {
    memcpy(g->last_source, ar->short_src, sizeof g->last_source);
    g->last_line = ar->currentline;
}

static void luahier_hook(lua_State *L, lua_Debug *ar);

/* [-0, +0, -] How many instructions the hook should wait for next: the interval, or fewer
 * when the budget ends sooner (so a budget trips at exactly its count). */
static inline int luahier_nextcount(const luahier_Guard *g) {
    long long left = g->budget.trip_at - g->spent;
    if (left >= LUAHIER_HOOK_INTERVAL) return LUAHIER_HOOK_INTERVAL;
    return left < 1 ? 1 : (int)left;
}

/* [-0, +0, -] Sets `L`'s hook as the guard wants it now: at every instruction once tripped,
 * at the next count while a limit is on, else none. */
static inline void luahier_sethook(lua_State *L, const luahier_Guard *g) {
    if (g->active && g->budget.exceeded) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    else if (g->hooked) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, g->active ? luahier_nextcount(g) : LUAHIER_HOOK_INTERVAL);
    else lua_sethook(L, NULL, 0, 0);
}

/* [-0, +0, -] Shows the watchdog the innermost deadline now known. */
static inline void luahier_publishdeadline(luahier_Guard *g) {
    if (g->watch) __atomic_store(&g->watch->deadline, &g->budget.deadline, __ATOMIC_RELEASE);
}

/* [-0, +0, -] The calling thread's kernel id (cached per thread). */
static inline long luahier_threadid(void) {
    static __thread long cached;
    if (cached == 0) cached = (long)syscall(SYS_gettid);
    return cached;
}

/* [-0, +0, -] Starts the innermost budget's own clock at `now`: its deadline is `seconds` on,
 * unless the enclosing budget's comes sooner. */
static inline void luahier_startclock(luahier_Guard *g, double now, double seconds) {
    luahier_Budget *b = &g->budget;
    double own = now + seconds;
    if (b->deadline <= 0 || own < b->deadline) {
        b->deadline = own;
        b->time_limit = seconds;
        b->time_scope = LUAHIER_SCOPE_DISPATCH;
        luahier_publishdeadline(g);
    }
    b->own_time = 0;
}

/* [-0, +0, -] Whether the innermost budget is spent (instructions, then time); records the
 * trip. Starts a dispatch's own clock at its first check. */
static inline int luahier_check(luahier_Guard *g) {
    luahier_Budget *b = &g->budget;
    if (b->exceeded) return b->exceeded;
    if (luahier_interrupt_signal) return b->exceeded = LUAHIER_TRIPPED_INTERRUPTED;
    if (g->spent >= b->trip_at) return b->exceeded = LUAHIER_TRIPPED_INSTRUCTIONS;
    if (b->deadline > 0 || b->own_time > 0) {
        double now = luahier_now();
        if (b->own_time > 0) luahier_startclock(g, now, b->own_time);
        if (now > b->deadline) return b->exceeded = LUAHIER_TRIPPED_TIME;
    }
    return 0;
}

/* [-0, +0, -] Records a trip found outside the hook (by the allocator or host work) and makes
 * the running thread's next instruction raise it. Only ever on the Lua thread. */
static inline void luahier_trip(luahier_Guard *g, int kind) {
    lua_State *running = g->running ? g->running : g->main;
    lua_Debug ar;
    /* The place it tripped, for `where` (the allocator noted a refusal's place already). */
    if (kind != LUAHIER_TRIPPED_MEMORY && luahier_findluaframe(running, 0, &ar)) luahier_noteplace(g, &ar);
    if (!g->budget.exceeded) g->budget.exceeded = kind;
    lua_sethook(running, luahier_hook, LUA_MASKCOUNT, 1);
}

/* [-0, +0, -] Charges host work to the running budget: `units` instructions' worth. Reads
 * the clock once enough work has added up (or the watchdog prompted it), so long host work is
 * stopped by the deadline too. A trip makes the next Lua instruction raise. */
static inline void luahier_chargework(luahier_Guard *g, long long units) {
    if (!g->active || g->budget.exceeded) return;
    g->spent += units;
    g->work += units;
    if (g->prompted) {
        g->prompted = 0;
        g->work = LUAHIER_HOOK_INTERVAL;
    }
    if (g->spent < g->budget.trip_at && g->work < LUAHIER_HOOK_INTERVAL) return;
    g->work = 0;
    int kind = luahier_check(g);
    if (kind) luahier_trip(g, kind);
}

/* The allocator: counts every block at the size malloc really gives it (so the cap bounds
 * what the process holds, not what Lua asked for), and refuses growth past the limit unless
 * the host is allocating (host code must never see an allocation raise). A refusal trips the
 * memory limit of the running budget: sticky, like the others. Growth is also work: every
 * LUAHIER_BYTES_PER_UNIT bytes are charged, so copies and concatenations inside one
 * instruction count, and the clock is read as they add up. Shrinking never fails. */
static inline void *luahier_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    luahier_Guard *g = (luahier_Guard *)ud;
    size_t old = ptr ? malloc_usable_size(ptr) : 0;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        g->used -= old;
        return NULL;
    }
    if (nsize > old) {
        /* Lua answers a refusal with a full collection and asks again for the same block at
         * once: only that retry, refused too, is the cap really reached (garbage is not). The
         * record of a refusal is good for the next growing request only (a collection makes
         * none), so an unrelated request of the same size is never taken for the retry. */
        int retry = g->refused_size != 0 && ptr == g->refused_block && nsize == g->refused_size;
        g->refused_block = NULL;
        g->refused_size = 0;
        size_t cap = g->limit + (g->active && g->budget.exceeded == LUAHIER_TRIPPED_MEMORY ? LUAHIER_MEMORY_GRACE : 0);
        /* malloc hands out at most 16 bytes more than asked: count them up front. */
        if (g->limit && !g->in_host && g->used - old + nsize + 16 > cap) {
            lua_Debug ar;
            lua_State *at = g->running ? g->running : g->main;
            if (!g->memory_refused && at && luahier_findluaframe(at, 0, &ar)) luahier_noteplace(g, &ar);
            g->memory_refused = 1;
            if (!retry) {
                g->refused_block = ptr;
                g->refused_size = nsize;
            } else if (g->active && !g->budget.exceeded) {
                luahier_trip(g, LUAHIER_TRIPPED_MEMORY);
            }
            return NULL;
        }
    }
    void *block = realloc(ptr, nsize);
    if (block == NULL) return NULL;
    g->used = g->used - old + malloc_usable_size(block);
    if (g->used > g->peak) g->peak = g->used;
    if (nsize > old) luahier_chargework(g, (long long)((nsize - old) / LUAHIER_BYTES_PER_UNIT));
    return block;
}

/* [-0, +0, -] Fixes glibc's mmap threshold at 256 KiB (once per process). The memory cap
 * counts live bytes; with the dynamic threshold, once a large block (a 1 MB string, an input
 * line) is freed, later ones come from the heap, where freed memory stays resident, and the
 * process drifts far above what the cap counts. Mapped, they are given back when freed. */
static inline void luahier_fixmmapthreshold(void) {
    static int fixed;
    if (__atomic_exchange_n(&fixed, 1, __ATOMIC_ACQ_REL)) return;
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

/* [-0, +1, -] The error a tripped limit raises: { type, message, limit, where }. The one place
 * its wording lives (the host reads it from here too). Allocates as the host does: never fails. */
static inline void luahier_pushtraceback(lua_State *L, int level);

/* [-0, +1, -] The error of an interrupt: { type = "Interrupted", message = "interrupted",
 * signal, where, traceback }, made where it first tripped (with the traceback from there,
 * as lua.c shows it), then the same table each time it is raised again on the way out, so
 * the entry ends naming the place the script was stopped at. Called by
 * luahier_pushlimiterror, in host mode. */
static inline void luahier_pushinterrupterror(lua_State *L, luahier_Guard *g) {
    if (g->interrupt_ref > 0 && g->interrupt_generation == luahier_interrupt_generation) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, g->interrupt_ref);
        return;
    }
    if (g->interrupt_ref > 0) luaL_unref(L, LUA_REGISTRYINDEX, g->interrupt_ref);
    g->interrupt_generation = luahier_interrupt_generation;
    lua_createtable(L, 0, 5);
    lua_pushstring(L, "Interrupted");
    lua_setfield(L, -2, "type");
    lua_pushstring(L, "interrupted");
    lua_setfield(L, -2, "message");
    lua_pushstring(L, luahier_interrupt_signal == SIGTERM ? "SIGTERM" : "SIGINT");
    lua_setfield(L, -2, "signal");
    if (g->last_line > 0) {
        lua_pushfstring(L, "%s:%d", g->last_source, g->last_line);
        lua_setfield(L, -2, "where");
    }
    lua_Debug ar;
    if (lua_getstack(L, 0, &ar)) {
        luahier_pushtraceback(L, 0);
        lua_setfield(L, -2, "traceback");
    }
    lua_pushvalue(L, -1);
    g->interrupt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

static inline void luahier_pushlimiterror(lua_State *L, luahier_Guard *g) {
    int caller_in_host = g->in_host;
    g->in_host = 1;
    const luahier_Budget *b = &g->budget;
    if (b->exceeded == LUAHIER_TRIPPED_INTERRUPTED) {
        luahier_pushinterrupterror(L, g);
        g->in_host = caller_in_host;
        return;
    }
    lua_createtable(L, 0, 4);
    if (b->exceeded == LUAHIER_TRIPPED_INSTRUCTIONS) {
        lua_pushstring(L, "InstructionLimitExceeded");
        lua_setfield(L, -2, "type");
        if (b->instruction_scope == LUAHIER_SCOPE_DISPATCH)
            lua_pushfstring(L, "instruction limit exceeded: more than %I instructions in one dispatch "
                               "(set with --dispatch-max-instructions or Limits.dispatchInstructions)",
                            (LUAI_UACINT)b->instruction_limit);
        else
            lua_pushfstring(L, "instruction limit exceeded: more than %I instructions "
                               "(set with --max-instructions or Limits.instructions)",
                            (LUAI_UACINT)b->instruction_limit);
        lua_setfield(L, -2, "message");
        lua_pushinteger(L, b->instruction_limit);
    } else if (b->exceeded == LUAHIER_TRIPPED_TIME) {
        lua_pushstring(L, "TimeLimitExceeded");
        lua_setfield(L, -2, "type");
        if (b->time_scope == LUAHIER_SCOPE_DISPATCH)
            lua_pushfstring(L, "time limit exceeded: one dispatch ran longer than %f seconds "
                               "(set with --dispatch-timeout or Limits.dispatchTime)", b->time_limit);
        else
            lua_pushfstring(L, "time limit exceeded: ran longer than %f seconds "
                               "(set with --timeout or Limits.time)", b->time_limit);
        lua_setfield(L, -2, "message");
        lua_pushnumber(L, b->time_limit);
    } else {
        lua_pushstring(L, "MemoryLimitExceeded");
        lua_setfield(L, -2, "type");
        lua_pushfstring(L, "memory limit exceeded: the script may hold at most %I bytes "
                           "(set with --max-memory or Limits.memory)", (LUAI_UACINT)g->limit);
        lua_setfield(L, -2, "message");
        lua_pushinteger(L, (lua_Integer)g->limit);
    }
    lua_setfield(L, -2, "limit");
    if (g->last_line > 0) {
        lua_pushfstring(L, "%s:%d", g->last_source, g->last_line);
        lua_setfield(L, -2, "where");
    }
    g->in_host = caller_in_host;
}

/* [-0, +0, v] Raises the tripped limit on `L`, whose hook now fires at every instruction. */
static inline int luahier_raiselimit(lua_State *L, luahier_Guard *g) {
    lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    luahier_pushlimiterror(L, g);
    return lua_error(L);
}

/* [-0, +0, -] Whether the function running at `ar`'s level is the one at registry reference
 * `ref` (0: none). */
static inline int luahier_frameruns(lua_State *L, lua_Debug *ar, int ref) {
    if (ref <= 0 || !lua_checkstack(L, 2)) return 0;
    lua_getinfo(L, "f", ar);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    int runs = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return runs;
}

/* [-0, +0, -] Whether the function running at `ar`'s level is the fast path's plan walk. A
 * tripped limit is not raised there but at the first instruction of the next responder it
 * calls (the walk is short and bounded), so an error from a walk always names its responder,
 * as it did when the walk was C code the hook never ran in. */
static inline int luahier_inplanwalk(lua_State *L, lua_Debug *ar) {
    return luahier_frameruns(L, ar, luahier_guard(L)->plan_ref);
}

/* The count hook. Once a limit trips it stays tripped and the hook fires at every
 * instruction, so a script's own pcall, xpcall, coroutine, __close or load-with-reader cannot
 * swallow it: the next instruction after the catch raises again. (The host also checks after
 * every protected call, so a trip that was swallowed and returned from still ends the entry.) */
static void luahier_hook(lua_State *L, lua_Debug *ar) {
    luahier_Guard *g = luahier_guard(L);
    if (g->active && !g->budget.exceeded && luahier_interrupt_signal) {
        /* Stopped by a signal (the handler set this hook on a state with no limits too). */
        lua_Debug place;
        if (luahier_findluaframe(L, 0, &place)) luahier_noteplace(g, &place);
        g->budget.exceeded = LUAHIER_TRIPPED_INTERRUPTED;
    }
    if (!g->active || (!g->budget.exceeded && !g->hooked)) {
        /* Left over from a trip that ended, on a thread that was not running then. */
        luahier_sethook(L, g);
        return;
    }
    if (!g->budget.exceeded) {
        /* The place, for `where`: the running function's line, or (in the plan walk, which has
         * none) its caller's. */
        lua_Debug place;
        if (luahier_findluaframe(L, 0, &place)) luahier_noteplace(g, &place);
        g->spent += lua_gethookcount(L);
        g->work = 0;
        if (!luahier_check(g)) {
            int next = luahier_nextcount(g);
            if (lua_gethookcount(L) != next) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, next);
            return;
        }
    }
    lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    if (luahier_inplanwalk(L, ar)) return;
    luahier_raiselimit(L, g);
}

/* [-0, +0, -] Installs the count hook on `L` (done once, on the main thread, at creation:
 * coroutines copy it when they are created). */
static inline void luahier_installhook(lua_State *L) {
    lua_sethook(L, luahier_hook, LUA_MASKCOUNT, LUAHIER_HOOK_INTERVAL);
}

/* [-0, +0, -] Starts a top-level entry's budget on `L` (nothing may be under way):
 * `instructions` (0: none) and `seconds` (0: none) of `scope`. The hook count starts afresh,
 * so the entry's instruction count is exact. */
static inline void luahier_beginentry(lua_State *L, long long instructions, double seconds, int scope) {
    luahier_Guard *g = luahier_guard(L);
    luahier_Budget *b = &g->budget;
    g->active = 1;
    g->spent = 0;
    g->work = 0;
    g->last_line = 0;
    g->refused_block = NULL;
    g->refused_size = 0;
    b->trip_at = instructions > 0 ? instructions : LLONG_MAX;
    b->instruction_limit = instructions;
    b->instruction_scope = scope;
    b->deadline = seconds > 0 ? luahier_now() + seconds : 0;
    b->time_limit = seconds;
    b->time_scope = scope;
    b->own_time = 0;
    b->exceeded = 0;
    if (g->watch) {
        luahier_publishdeadline(g);
        __atomic_store_n(&g->watch->tid, luahier_threadid(), __ATOMIC_RELEASE);
    }
    /* The thread is published before the flag is read, and the handler sets the flag before
     * it reads the threads: one of the two sees the other, so no interrupt falls between. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (luahier_interrupt_signal) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    else if (g->hooked) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, luahier_nextcount(g));
}

/* [-0, +0, -] Ends the top-level entry; returns what it tripped on (LUAHIER_TRIPPED_*). */
static inline int luahier_endentry(lua_State *L) {
    luahier_Guard *g = luahier_guard(L);
    int tripped = g->budget.exceeded;
    if (g->watch) __atomic_store_n(&g->watch->tid, 0, __ATOMIC_RELEASE);
    g->active = 0;
    g->budget.exceeded = 0;
    if (g->interrupt_ref > 0) {
        luaL_unref(g->main, LUA_REGISTRYINDEX, g->interrupt_ref);
        g->interrupt_ref = 0;
    }
    if (tripped) {
        luahier_sethook(g->main, g);
        if (L != g->main) luahier_sethook(L, g);
    }
    return tripped;
}

/* [-0, +0, -] Starts a dispatch's budget inside the running one: its own `instructions` and
 * `seconds` (0: none), capped by what is left of the enclosing budget, which is saved in
 * `saved` for luahier_popbudget. Unwatched, the clock is not read: the dispatch's own time
 * starts at its first check (within one hook interval). A trip under way is inherited. */
static inline void luahier_pushbudget(lua_State *L, luahier_Budget *saved, long long instructions, double seconds) {
    luahier_Guard *g = luahier_guard(L);
    luahier_Budget *b = &g->budget;
    *saved = *b;
    if (instructions > 0 && instructions < b->trip_at - g->spent) {
        b->trip_at = g->spent + instructions;
        b->instruction_limit = instructions;
        b->instruction_scope = LUAHIER_SCOPE_DISPATCH;
    }
    b->own_time = 0;
    /* Watched, the deadline is known now, so the watchdog can enforce it even when the
     * dispatch's first check is long in coming (one clock read per dispatch). */
    if (seconds > 0 && g->watch) luahier_startclock(g, luahier_now(), seconds);
    else if (seconds > 0) b->own_time = seconds;
}

/* [-0, +0, -] Ends the dispatch's budget: the enclosing one is back, and goes on with what is
 * left of it (if that is spent too, its next instruction raises). Returns what the dispatch's
 * budget tripped on (LUAHIER_TRIPPED_*, 0: nothing). */
static inline int luahier_popbudget(lua_State *L, const luahier_Budget *saved) {
    luahier_Guard *g = luahier_guard(L);
    int tripped = g->budget.exceeded;
    int started = g->budget.deadline != saved->deadline;
    g->budget = *saved;
    if (started) luahier_publishdeadline(g);
    if (tripped && !saved->exceeded) {
        int kind = luahier_check(g);
        if (kind) {
            luahier_trip(g, kind);
        } else {
            luahier_sethook(L, g);
            if (g->running && g->running != L) luahier_sethook(g->running, g);
        }
    }
    return tripped;
}

/* [-0, +0, -] Charges host work done for `L`'s state (luahier_chargework). */
static inline void luahier_charge(lua_State *L, long long units) {
    luahier_chargework(luahier_guard(L), units);
}

/* [-0, +0, v] For C functions of the sandbox doing long work: charges `units` and raises the
 * limit if the budget is spent. */
static inline void luahier_work(lua_State *L, long long units) {
    luahier_Guard *g = luahier_guard(L);
    luahier_charge(L, units);
    if (g->active && g->budget.exceeded) luahier_raiselimit(L, g);
}

/* [-0, +0, -] What the running budget has tripped on (LUAHIER_TRIPPED_*, 0: nothing). */
static inline int luahier_tripped(lua_State *L) {
    luahier_Guard *g = luahier_guard(L);
    return g->active ? g->budget.exceeded : 0;
}

/* An xpcall message handler, guarded: once a limit has tripped the error passes through
 * untouched and no Lua code runs. Lua 5.4.4 re-enters a message handler that raises, in C,
 * forever; a tripped limit raises at every Lua instruction, so the user's handler must not run. */
static inline int luahier_guardedhandler(lua_State *L) {
    if (luahier_tripped(L)) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* lua_CFunction (handler) -> the handler, guarded. */
static inline int luahier_guardhandler(lua_State *L) {
    lua_settop(L, 1);
    lua_pushcclosure(L, luahier_guardedhandler, 1);
    return 1;
}

/* lua_CFunction coroutine.resume(co, ...) for the sandbox: Lua's, plus the guard's note of the
 * running thread, so a trip found outside the hook (memory, host work) hooks the thread that
 * runs. lua_resume itself refuses a dead, running or normal coroutine. */
static inline int luahier_resume(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    int narg = lua_gettop(L) - 1;
    if (!lua_checkstack(co, narg)) {
        lua_pushboolean(L, 0);
        lua_pushliteral(L, "too many arguments to resume");
        return 2;
    }
    lua_xmove(L, co, narg);
    luahier_Guard *g = luahier_guard(L);
    lua_State *caller = g->running;
    g->running = co;
    /* An interrupt that hooked the caller just before: the coroutine stops too. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (g->active && luahier_interrupt_signal) lua_sethook(co, luahier_hook, LUA_MASKCOUNT, 1);
    int nres = 0;
    int status = lua_resume(co, L, narg, &nres);
    g->running = caller;
    /* A trip while the coroutine ran: the caller's next instruction raises it too. */
    if (g->active && g->budget.exceeded) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushboolean(L, 0);
            lua_pushliteral(L, "too many results to resume");
            return 2;
        }
        lua_pushboolean(L, 1);
        lua_xmove(co, L, nres);
        return nres + 1;
    }
    /* false, then the message (lua_xmove does nothing when the coroutine is the caller). */
    lua_xmove(co, L, 1);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* [-0, +0, e] Whether the value at `a` sorts before the one at `b`: the comparator at index 2,
 * or `<`. */
static inline int luahier_sortless(lua_State *L, int a, int b, int has_comparator) {
    if (!has_comparator) return lua_compare(L, a, b, LUA_OPLT);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a);
    lua_pushvalue(L, b);
    lua_call(L, 2, 1);
    int less = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return less;
}

/* [-0, +0, e] Heap sort's sift-down of the element at `root` within 1..n of the table at 1. */
static inline void luahier_siftdown(lua_State *L, lua_Integer root, lua_Integer n, int has_comparator) {
    lua_geti(L, 1, root);
    int value = lua_gettop(L);
    while (2 * root <= n) {
        lua_Integer child = 2 * root;
        lua_geti(L, 1, child);
        if (child + 1 <= n) {
            lua_geti(L, 1, child + 1);
            if (luahier_sortless(L, value + 1, value + 2, has_comparator)) {
                child++;
                lua_replace(L, value + 1);
            } else {
                lua_pop(L, 1);
            }
        }
        luahier_work(L, 2);
        if (!luahier_sortless(L, value, value + 1, has_comparator)) {
            lua_pop(L, 1);
            break;
        }
        lua_seti(L, 1, root);
        root = child;
    }
    lua_seti(L, 1, root);
}

/* lua_CFunction table.sort(t [, comp]) for the sandbox: a heap sort (O(n log n) comparisons
 * whatever the input, no recursion) that charges its work and checks the deadline as it goes.
 * Lua's own sorts inside one C call that neither the hook nor the deadline interrupts when the
 * elements compare without Lua code (8e6 numbers: 4.5 s past a 1 s limit). Like Lua's, it is
 * not stable, and reads and writes through metamethods. */
static inline int luahier_sort(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1);
    int has_comparator = !lua_isnoneornil(L, 2);
    if (has_comparator) luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    luaL_checkstack(L, 8, "sorting");
    luahier_work(L, n);
    for (lua_Integer i = n / 2; i >= 1; i--) luahier_siftdown(L, i, n, has_comparator);
    for (lua_Integer end = n; end > 1; end--) {
        lua_geti(L, 1, 1);
        lua_geti(L, 1, end);
        lua_seti(L, 1, 1);
        lua_seti(L, 1, end);
        luahier_siftdown(L, 1, end - 1, has_comparator);
    }
    return 0;
}

/* lua_CFunction string.rep(s, n [, sep]) for the sandbox: Lua's result and errors, made by
 * copying the filled part onto the rest, doubling, with the work charged and the budget
 * checked between copies. Lua's copies s once per repetition in one C call: 250 million
 * one-byte copies took a second that neither a limit nor a signal could cut short. Here
 * the longest copy is half the result (a memcpy, ~30 ms for 125 MB). */
static inline int luahier_rep(lua_State *L) {
    size_t length, separator_length;
    const char *s = luaL_checklstring(L, 1, &length);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *separator = luaL_optlstring(L, 3, "", &separator_length);
    if (n <= 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    if (length + separator_length < length || length + separator_length > (size_t)INT_MAX / (size_t)n)
        return luaL_error(L, "resulting string too large");
    size_t total = (size_t)n * length + (size_t)(n - 1) * separator_length;
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, total);
    if (total > 0) {
        /* One period (s, then sep unless it is the only copy); then the filled part, a whole
         * number of periods, copied onto the rest until it is all filled. */
        memcpy(p, s, length);
        size_t filled = length;
        if (n > 1 && separator_length > 0) {
            memcpy(p + length, separator, separator_length);
            filled += separator_length;
        }
        while (filled < total) {
            size_t chunk = filled < total - filled ? filled : total - filled;
            memcpy(p + filled, p, chunk);
            filled += chunk;
            luahier_work(L, (long long)(chunk / LUAHIER_BYTES_PER_UNIT));
        }
    }
    luaL_pushresultsize(&b, total);
    return 1;
}

/* lua_CFunction (table): makes it the globals of the state (the registry's LUA_RIDX_GLOBALS),
 * so `load` and everything else that reaches for "the globals" gets the sandbox's. */
static inline int luahier_setglobals(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    return 0;
}

/* lua_CFunction (metatable): makes it the metatable of strings. */
static inline int luahier_setstringmetatable(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_pushliteral(L, "");
    lua_insert(L, 1);
    lua_setmetatable(L, 1);
    return 0;
}

/* lua_CFunction (): the string metatable as Lua made it (its arithmetic metamethods). */
static inline int luahier_getstringmetatable(lua_State *L) {
    lua_pushliteral(L, "");
    if (!lua_getmetatable(L, -1)) lua_pushnil(L);
    return 1;
}

/* ---- Host objects ------------------------------------------------------------------ */

/* lua_CFunction: the `__gc` of every host userdata (nodes, handles, plans, trace records),
 * whose block holds a retained Swift object. Forgets the object (a resurrected userdata then
 * reads as finalized) and queues its release for the host; runs no Swift and no Lua, so a
 * collection or lua_close never re-enters the host. Without room to queue it, the object
 * leaks rather than being released inside a collection. */
static inline int luahier_finalize(lua_State *L) {
    void **block = (void **)lua_touserdata(L, 1);
    if (block == NULL || *block == NULL) return 0;
    luahier_Guard *g = luahier_guard(L);
    if (g->released_count == g->released_capacity) {
        size_t capacity = g->released_capacity ? g->released_capacity * 2 : 64;
        void **grown = (void **)realloc(g->released, capacity * sizeof *grown);
        if (grown == NULL) return 0;
        g->released = grown;
        g->released_capacity = capacity;
    }
    g->released[g->released_count++] = *block;
    *block = NULL;
    return 0;
}

/* ---- Libraries ------------------------------------------------------------------------ */

/* lua_CFunction: opens the libraries the sandbox starts from (it trims them after). */
static inline int luahier_opensandboxlibs(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base}, {LUA_LOADLIBNAME, luaopen_package},
        {LUA_COLIBNAME, luaopen_coroutine}, {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_OSLIBNAME, luaopen_os}, {NULL, NULL}};
    for (const luaL_Reg *lib = libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    return 0;
}

/* lua_CFunction: opens every standard library, for trusted scripts. */
static inline int luahier_openalllibs(lua_State *L) {
    luaL_openlibs(L);
    return 0;
}

extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

/* lua_CFunction (s, p [, init]) -> start, end | nil: string.find(s, p, init, true) in linear
 * time (glibc's memmem), where Lua 5.4.4's own plain search is quadratic in the worst case. */
static inline int luahier_plainfind(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    lua_Integer init = luaL_optinteger(L, 3, 1);
    if (init < 0) init = (init < -(lua_Integer)ls) ? 1 : (lua_Integer)ls + init + 1;
    if (init == 0) init = 1;
    if (init > (lua_Integer)ls + 1) {
        lua_pushnil(L);
        return 1;
    }
    const char *start = s + init - 1;
    const char *found = lp == 0 ? start : (const char *)memmem(start, ls - (size_t)(init - 1), p, lp);
    if (found == NULL) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)(found - s) + 1);
    lua_pushinteger(L, (lua_Integer)(found - s) + (lua_Integer)lp);
    return 2;
}

#include "pattern.h"

/* lua_CFunction () -> {find, match, gmatch, gsub}: the step-counting pattern functions. */
static inline int luahier_pushpatternlib(lua_State *L) {
    lua_createtable(L, 0, 4);
    lua_pushcfunction(L, luahier_strfind);
    lua_setfield(L, -2, "find");
    lua_pushcfunction(L, luahier_strmatch);
    lua_setfield(L, -2, "match");
    lua_pushcfunction(L, luahier_gmatch);
    lua_setfield(L, -2, "gmatch");
    lua_pushcfunction(L, luahier_gsub);
    lua_setfield(L, -2, "gsub");
    return 1;
}

/* ---- Locations and the message handler ------------------------------------------------ */

/* [-0, +(0|1), m] Pushes "chunk:line" of the innermost Lua function at `level` or above;
 * returns 0 and pushes nothing when no Lua frame has a line. */
static inline int luahier_pushwhere(lua_State *L, int level) {
    lua_Debug ar;
    if (!luahier_findluaframe(L, level, &ar)) return 0;
    lua_pushfstring(L, "%s:%d", ar.short_src, ar.currentline);
    return 1;
}

/* [-0, +0, -] Length of a leading "chunk:line: " in `msg` (its first line only), or 0.
 * `*where_len` gets the length of "chunk:line". */
static inline size_t luahier_locationprefix(const char *msg, size_t len, size_t *where_len) {
    for (size_t i = 0; i + 1 < len && msg[i] != '\n'; i++) {
        if (msg[i] != ':' || msg[i + 1] < '0' || msg[i + 1] > '9') continue;
        size_t j = i + 1;
        while (j < len && msg[j] >= '0' && msg[j] <= '9') j++;
        if (j + 1 < len && msg[j] == ':' && msg[j + 1] == ' ' && i > 0) {
            *where_len = j;
            return j + 2;
        }
    }
    return 0;
}

/* [-0, +0, m] t[k] = value at top (raw), popping the value. */
static inline void luahier_rawsetfield(lua_State *L, int t, const char *k) {
    t = lua_absindex(L, t);
    lua_pushstring(L, k);
    lua_insert(L, -2);
    lua_rawset(L, t);
}

/* [-0, +0, -] Whether the function running at `ar`'s level is the responder-run loop or the
 * plan walk, frames of the host's own that tracebacks leave out. Each is compared with the
 * one the host registered (a static inline function has one address per compiled file). */
static inline int luahier_isrunframe(lua_State *L, lua_Debug *ar) {
    luahier_Guard *g = luahier_guard(L);
    return luahier_frameruns(L, ar, g->run_ref) || luahier_frameruns(L, ar, g->plan_ref);
}

/* [-0, +1, m] "stack traceback:" and a line per frame from `level` on, as luaL_traceback
 * writes it (the first 10 and the last 11 frames of a deep stack), without the host's
 * responder-run frames. */
static inline void luahier_pushtraceback(lua_State *L, int level) {
    lua_Debug ar;
    /* The first level past the stack, found by doubling then halving: lua_getstack walks
     * from the top, so walking every level of a deep stack would take its square. */
    int low = level, high = level + 1;
    while (lua_getstack(L, high, &ar)) { low = high; high *= 2; }
    while (low < high) {
        int middle = low + (high - low) / 2;
        if (lua_getstack(L, middle, &ar)) low = middle + 1; else high = middle;
    }
    int last = low;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "stack traceback:");
    int shown = 0;
    for (int at = level; at < last; at++) {
        if (!lua_getstack(L, at, &ar) || luahier_isrunframe(L, &ar)) continue;
        /* The host's own Lua code (sandbox wrappers, the hier proxy) is not shown, nor the C
         * functions it calls; a wrapper the script called shows as the C function it stands
         * for, as in stock Lua: "[C]: in field 'move'". */
        lua_Debug caller;
        lua_getinfo(L, "S", &ar);
        int caller_is_host = lua_getstack(L, at + 1, &caller) && lua_getinfo(L, "S", &caller)
            && luahier_ishostcode(&caller);
        int host = luahier_ishostcode(&ar);
        if ((host || *ar.what == 'C') && caller_is_host) continue;
        if (shown == 10 && last - at > 11) {
            lua_pushfstring(L, "\n\t...\t(skipping %d levels)", last - at - 11);
            luaL_addvalue(&b);
            at = last - 11 - 1;
            shown++;
            continue;
        }
        shown++;
        /* A function's name comes from its caller's code; the plan walk is stripped and
         * would name every responder "field '?'". */
        int called_by_walk = lua_getstack(L, at + 1, &caller) && luahier_isrunframe(L, &caller);
        lua_getinfo(L, "Slnt", &ar);
        /* A chunk's name is the script's text (load's second argument): a newline in it
         * must not start a line of its own on the terminal. */
        for (char *c = ar.short_src; *c; c++) if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
        if (host) lua_pushliteral(L, "\n\t[C]: in ");
        else if (ar.currentline <= 0) lua_pushfstring(L, "\n\t%s: in ", ar.short_src);
        else lua_pushfstring(L, "\n\t%s:%d: in ", ar.short_src, ar.currentline);
        luaL_addvalue(&b);
        if (*ar.namewhat != '\0' && !called_by_walk) {
            /* A field's name can be any string a script made: its control characters too. */
            luaL_addstring(&b, ar.namewhat);
            luaL_addstring(&b, " '");
            for (const char *c = ar.name; *c; c++) luaL_addchar(&b, ((unsigned char)*c < 0x20 || *c == 0x7f) ? '?' : *c);
            luaL_addchar(&b, '\'');
        } else {
            if (host) lua_pushliteral(L, "?");
            else if (*ar.what == 'm') lua_pushliteral(L, "main chunk");
            else if (*ar.what != 'C') lua_pushfstring(L, "function <%s:%d>", ar.short_src, ar.linedefined);
            else lua_pushliteral(L, "?");
            luaL_addvalue(&b);
        }
        if (ar.istailcall) luaL_addstring(&b, "\n\t(...tail calls...)");
    }
    luaL_pushresult(&b);
}

/* [-1, +1, e] `__tostring` of the table at `index`, called protected (under the running
 * budget, like any of the script's code); 0 when it has none, fails or returns no string. */
static inline int luahier_pushtostring(lua_State *L, int index) {
    index = lua_absindex(L, index);
    if (luaL_getmetafield(L, index, "__tostring") == LUA_TNIL) return 0;
    lua_pushvalue(L, index);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return 1;
    lua_pop(L, 1);
    return 0;
}

#define LUAHIER_FROZEN_KEY "luahier.frozen"

/* lua_CFunction (set): keeps the sandbox's set of read-only tables (weak keys) where the
 * message handler finds it. */
static inline int luahier_setfrozen(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, LUAHIER_FROZEN_KEY);
    return 0;
}

/* [-0, +0, m] Whether the value at `index` is one of the sandbox's read-only tables. */
static inline int luahier_isfrozen(lua_State *L, int index) {
    index = lua_absindex(L, index);
    if (lua_getfield(L, LUA_REGISTRYINDEX, LUAHIER_FROZEN_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushvalue(L, index);
    int frozen = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return frozen;
}

/* [-0, +0, e] Gives the table at index 1 its `__tostring` as `message` when it has no
 * message, so it reads as what it says it is. The caller has made sure it is not one of the
 * sandbox's read-only tables. */
static inline void luahier_settostringmessage(lua_State *L) {
    lua_pushstring(L, "message");
    if (lua_rawget(L, 1) == LUA_TNIL && luahier_pushtostring(L, 1)) luahier_rawsetfield(L, 1, "message");
    lua_settop(L, 1);
}

/* lua_CFunction (t): luahier_settostringmessage, unless `t` is read-only. */
static inline int luahier_tostringmessage(lua_State *L) {
    lua_settop(L, 1);
    if (!luahier_isfrozen(L, 1)) luahier_settostringmessage(L);
    return 0;
}

/* [-0, +0, -] luahier_tostringmessage for the error at `index` if it is a table, all of it
 * inside a protected call (reading a field can allocate, and so raise): callable from the
 * host's Swift code. Pushing a light C function and a copy allocate nothing. */
static inline void luahier_givetostringmessage(lua_State *L, int index) {
    if (lua_type(L, index) != LUA_TTABLE || !lua_checkstack(L, 2)) return;
    index = lua_absindex(L, index);
    lua_pushcfunction(L, luahier_tostringmessage);
    lua_pushvalue(L, index);
    /* The script's __tostring runs as the script's code: under the memory cap, which the
     * allocator does not apply while the host runs (in_host). */
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host, caller_refused = g->memory_refused;
    g->in_host = 0;
    g->memory_refused = 0;
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
    g->in_host = caller_in_host;
    g->memory_refused = caller_refused;
}

/* [-1, +1, e] The message handler of every protected call into Lua.
 * A table error keeps its identity and gains `where` if it has none, and `message` from its
 * `__tostring` if it has no message (so it reads as what it says it is). The sandbox's
 * read-only views (the standard library's tables, hier) are left as they are.
 * Any other value becomes { type = "LuaError", message, where, traceback }, with the
 * "chunk:line: " prefix Lua put on the message moved into `where` (host chunks are stripped,
 * so no prefix names a line of the host's own code). */
static inline int luahier_msgh(lua_State *L) {
    int t = lua_type(L, 1);
    lua_settop(L, 1);
    if (t == LUA_TTABLE) {
        if (luahier_isfrozen(L, 1)) return 1;
        lua_pushstring(L, "where");
        if (lua_rawget(L, 1) == LUA_TNIL && luahier_pushwhere(L, 1)) luahier_rawsetfield(L, 1, "where");
        lua_settop(L, 1);
        luahier_settostringmessage(L);
        return 1;
    }
    size_t len = 0;
    const char *msg;
    if (t == LUA_TSTRING || t == LUA_TNUMBER) {
        msg = lua_tolstring(L, 1, &len);
    } else if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
        msg = lua_tolstring(L, -1, &len);
    } else {
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        len = strlen(msg);
    }
    lua_createtable(L, 0, 4);
    int table = lua_gettop(L);
    lua_pushstring(L, "LuaError");
    luahier_rawsetfield(L, table, "type");
    size_t where_len = 0;
    size_t skip = luahier_locationprefix(msg, len, &where_len);
    if (skip > 0) {
        lua_pushlstring(L, msg, where_len);
        luahier_rawsetfield(L, table, "where");
    } else if (luahier_pushwhere(L, 1)) {
        luahier_rawsetfield(L, table, "where");
    }
    lua_pushlstring(L, msg + skip, len - skip);
    luahier_rawsetfield(L, table, "message");
    luahier_pushtraceback(L, 1);
    luahier_rawsetfield(L, table, "traceback");
    return 1;
}

/* ---- Node fields --------------------------------------------------------------------- */

/* [-0, +1, e] `__index` of node userdata: a method (upvalue 1, a table), else a getter
 * (upvalue 2: key -> function(node)) called with the node, else nil. In C because every
 * method call on a node looks up here: a Lua `__index` function cost a Lua call from C each
 * time (about 40 ns of a 300 ns dispatch). */
static inline int luahier_nodeindex(lua_State *L) {
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNIL) return 1;
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* lua_CFunction (methods, getters) -> the `__index` function of nodes. */
static inline int luahier_makenodeindex(lua_State *L) {
    lua_settop(L, 2);
    lua_pushcclosure(L, luahier_nodeindex, 2);
    return 1;
}

/* ---- Runs of responders ------------------------------------------------------------ */

/* Consecutive Lua `receive*` responders of one dispatch, called in one protected call instead
 * of one each (LuaResponderRunner.swift). The dispatcher's rules still hold: each is called
 * with the same value, in order; the first answer other than the interned "notHandled" ends
 * the run and goes back to Swift, which applies it; so does any change to the tree's chains
 * (a responder removed meanwhile must not be called). */
typedef struct luahier_Run {
    const int *refs;          /* registry references of the functions, in order */
    int count;
    int reached;              /* the index being called; after the run, how far it got */
    int stopped;              /* 1: refs[reached] answered, its answer is on the stack */
    const void *not_handled;  /* the interned "notHandled" string */
    const long *changes;      /* the tree's chain-change count, and its value at start */
    long changes_at_start;
} luahier_Run;

/* [-1, +(0|1), e] Calls the function on top with the value at `value`. Returns 1 with its
 * answer on the stack unless the answer is the interned "notHandled" (then 0, popped). */
static inline int luahier_callresponder(lua_State *L, int value, const void *not_handled) {
    lua_pushvalue(L, value);
    lua_call(L, 1, 1);
    if (lua_type(L, -1) != LUA_TSTRING || lua_topointer(L, -1) != not_handled) return 1;
    lua_pop(L, 1);
    return 0;
}

/* [-2, +(0|1), e] A lua_CFunction, called protected with (light userdata run, value). On an
 * error, `reached` names the responder that raised it. */
static inline int luahier_runresponders(lua_State *L) {
    /* Only the host makes light userdata; anything else (trusted code reaching this
     * function through the debug library) is refused rather than read as a run. */
    luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
    luahier_Run *run = (luahier_Run *)lua_touserdata(L, 1);
    run->stopped = 0;
    for (int i = 0; i < run->count; i++) {
        run->reached = i;
        lua_rawgeti(L, LUA_REGISTRYINDEX, run->refs[i]);
        if (luahier_callresponder(L, 2, run->not_handled)) {
            run->stopped = 1;
            return 1;
        }
        if (*run->changes != run->changes_at_start) {
            run->reached = i + 1;
            return 0;
        }
    }
    run->reached = run->count;
    return 0;
}

/* ---- The trigger fast path ------------------------------------------------------------ */

/* `node:triggerEvent(event)` at the top level, walked along a plan the host made for the
 * node (ChainPlan.swift, LuaFastPath.swift): no Swift on the way unless something other than
 * "notHandled" or "handled" happens. Anything the plan does not cover goes to the host as it
 * is; anything the walk cannot finish goes to the host to finish, from where the walk was.
 *
 * A plan is a table, all in its array part: */
enum {
    LUAHIER_PLAN_STAMP = 1,    /* the tree's chain-change count when it was made */
    LUAHIER_PLAN_OBJECT = 2,   /* the host's ChainPlan (a userdata) */
    LUAHIER_PLAN_AT = 3,       /* the origin's path */
    LUAHIER_PLAN_END = 4,      /* the status of an event that passes it all: "unhandled" or "detached" */
    LUAHIER_PLAN_HOPS = 5,     /* nodes in the chain, charged to the instruction budget */
    LUAHIER_PLAN_COUNT = 6,    /* event responders in the chain */
    LUAHIER_PLAN_TRACED = 7,   /* true: the host finishes every dispatch (it records the trace) */
    LUAHIER_PLAN_ENTRIES = 8,  /* then per responder, in dispatch order (at most 64): */
    LUAHIER_PLAN_STRIDE = 5    /* function (false: the host calls it), filter (false: any; a type
                                * name; or a set of them), node path, index on its node, where */
};

/* The upvalues of the fast `triggerEvent` closure. */
enum {
    LUAHIER_UP_ENTRY = 1,      /* the host entry (the trampoline's upvalue 1) */
    LUAHIER_UP_INDEX,          /* the host function's index (its upvalue 2) */
    LUAHIER_UP_FAST,           /* the luahier_Fast */
    LUAHIER_UP_PLANS,          /* node userdata -> plan, weak keys */
    LUAHIER_UP_TAGS,           /* the host's domain tags: table -> true (event) / false (error) */
    LUAHIER_UP_TYPE, LUAHIER_UP_STATUS, LUAHIER_UP_KIND, LUAHIER_UP_VALUE, LUAHIER_UP_AT,
    LUAHIER_UP_BY, LUAHIER_UP_RESPONDER, LUAHIER_UP_INDEXKEY, LUAHIER_UP_WHERE,
    LUAHIER_UP_EVENT, LUAHIER_UP_RECEIVEEVENT, LUAHIER_UP_HANDLED,
    LUAHIER_UP_PENDINGTRACES,  /* outcome -> what its trace is made from, weak keys */
    LUAHIER_UP_TRACEDOUTCOME,  /* the metatable that makes `outcome.trace` on first read */
    LUAHIER_UP_OUTCOMEMETA,    /* the locked metatable of an untraced outcome */
    LUAHIER_UP_COUNT = LUAHIER_UP_OUTCOMEMETA
};

/* A traced walk's lazy trace, kept for its outcome until read: */
enum {
    LUAHIER_WALKTRACE_PLAN = 1,    /* the plan */
    LUAHIER_WALKTRACE_CALLED = 2,  /* the entries called, one byte each */
    LUAHIER_WALKTRACE_TYPE = 3,    /* the event's type */
    LUAHIER_WALKTRACE_HANDLED = 4  /* whether the last one called answered "handled" */
};

/* How a walk that the host must finish stopped (the codes above 0 are lua_pcall's). */
enum {
    LUAHIER_STOP_ANSWER = -1,  /* a responder answered something else: the answer is passed */
    LUAHIER_STOP_HOST = -2,    /* a responder the host calls (another kind, a Swift closure) */
    LUAHIER_STOP_CHANGED = -3, /* the tree changed after a responder: go on after it */
    LUAHIER_STOP_END = -4      /* the walk could not start and the plan has no event responder:
                                * the host ends the dispatch */
};

/* What the fast path shares with the host. */
typedef struct luahier_Fast {
    const long *changes;       /* the tree's chain-change count */
    long *depth;               /* the dispatcher's nesting depth */
    const void *not_handled;   /* the interned verdicts */
    const void *handled;
    long long dispatch_charge; /* charged to the instruction budget per dispatch */
    long long dispatch_instructions; /* a dispatch's own budget (0: none) */
    double dispatch_seconds;
    long long walks;           /* dispatches the fast path took, and of those, */
    long long handovers;       /* how many the host finished (for tests and benchmarks) */
} luahier_Fast;

/* How a plan walk ended. The walk returns the first four; the last two are the host's
 * reading of a walk that raised an error. */
enum {
    LUAHIER_WALKED_ALL = 0,      /* every matching responder answered "notHandled" */
    LUAHIER_WALKED_ANSWER = 1,   /* the entry answered something else */
    LUAHIER_WALKED_HOST = 2,     /* the entry is for the host to call */
    LUAHIER_WALKED_CHANGED = 3,  /* the tree changed after the entry */
    LUAHIER_WALKED_RAISED = 4,   /* the entry's call raised an error */
    LUAHIER_WALKED_NOTHING = 5   /* the walk failed before its first call and the plan has no
                                  * event responder */
};

/* The entries a plan walk called, in order, for traces and handovers. */
typedef struct luahier_Called {
    unsigned char entries[64];
    int count;
} luahier_Called;

/* The plan walk: a Lua function, so that each responder is a Lua-to-Lua call (a C-to-Lua
 * lua_call per hop cost about twice as much), called protected with (plan, value, type).
 * It calls each matching responder of the plan in order while it answers "notHandled"
 * (a short string: Lua interns it, so `~=` compares addresses) and returns (how it stopped,
 * a LUAHIER_WALKED_* code; the entry it stopped at, or the count if it called all; the
 * answer).
 * An error leaves the entry whose call raised it in the upvalue `reached`, which is -1 while
 * no responder call is under way (the host resets it after reading it). The walk itself never
 * raises: the count hook holds a tripped limit until the next responder runs (luahier_hook),
 * and it allocates nothing but a responder's call frame, after `reached` is set. Filters are
 * false (any) or a set of type names. The host loads it stripped of debug information, so it
 * never names a `where`, and tracebacks leave its frame out (luahier_isrunframe). */
enum {
    LUAHIER_WALK_STALE = 1,    /* upvalue: set by the trampoline when the tree changed */
    LUAHIER_WALK_REACHED = 2   /* upvalue: the entry being called */
};
static const char luahier_walksource[] =
    "local stale, reached = false, -1\n"
    "return function(plan, value, type)\n"
    "  stale = false\n"
    "  local count, slot = plan[%d], %d\n"
    "  for entry = 0, count - 1 do\n"
    "    local filter = plan[slot + 1]\n"
    "    if not filter or filter[type] then\n"
    "      local responder = plan[slot]\n"
    "      if not responder then return %d, entry end\n"
    "      reached = entry\n"
    "      local answer = responder(value)\n"
    "      if answer ~= 'notHandled' then reached = -1 return %d, entry, answer end\n"
    "      if stale then reached = -1 return %d, entry end\n"
    "    end\n"
    "    slot = slot + %d\n"
    "  end\n"
    "  reached = -1\n"
    "  return %d, count\n"
    "end\n";

/* lua_Writer: appends to a growing malloc'd buffer. */
typedef struct luahier_Dump { char *bytes; size_t size, capacity; } luahier_Dump;
static inline int luahier_dumpwriter(lua_State *L, const void *p, size_t size, void *ud) {
    (void)L;
    luahier_Dump *d = (luahier_Dump *)ud;
    if (d->size + size > d->capacity) {
        size_t capacity = (d->size + size) * 2;
        char *bytes = (char *)realloc(d->bytes, capacity);
        if (bytes == NULL) return 1;
        d->bytes = bytes;
        d->capacity = capacity;
    }
    memcpy(d->bytes + d->size, p, size);
    d->size += size;
    return 0;
}

/* [-1, +1, m] Replaces the function on top with a copy without debug information: Lua then
 * knows no line in it, so no message, `where` or traceback can name a line of the host's
 * own code (luaL_where writes nothing for it). Returns LUA_OK, or an error status with the
 * error pushed in place of the function. */
static inline int luahier_strip(lua_State *L, const char *name) {
    luahier_Dump dump = { NULL, 0, 0 };
    int failed = lua_dump(L, luahier_dumpwriter, &dump, 1);
    lua_pop(L, 1);
    int status = failed ? LUA_ERRMEM : luaL_loadbufferx(L, dump.bytes, dump.size, name, "b");
    if (failed) lua_pushliteral(L, "not enough memory to strip a host chunk");
    free(dump.bytes);
    return status;
}

/* [-0, +1, -] Pushes the plan walk, loaded without debug information; returns LUA_OK, or an
 * error status with the error pushed instead. Made once, when the host starts. */
static inline int luahier_pushplanwalk(lua_State *L) {
    const char *source = lua_pushfstring(L, luahier_walksource, (int)LUAHIER_PLAN_COUNT,
                                         (int)LUAHIER_PLAN_ENTRIES, (int)LUAHIER_WALKED_HOST,
                                         (int)LUAHIER_WALKED_ANSWER, (int)LUAHIER_WALKED_CHANGED,
                                         (int)LUAHIER_PLAN_STRIDE, (int)LUAHIER_WALKED_ALL);
    int status = luaL_loadbuffer(L, source, strlen(source), "=[luahier walk]");
    lua_remove(L, -2);
    if (status == LUA_OK) status = lua_pcall(L, 0, 1, 0);
    if (status != LUA_OK) return status;
    const char *stale = lua_getupvalue(L, -1, LUAHIER_WALK_STALE);
    const char *reached = lua_getupvalue(L, -2, LUAHIER_WALK_REACHED);
    int laid_out = stale && reached && strcmp(stale, "stale") == 0 && strcmp(reached, "reached") == 0;
    lua_pop(L, (stale ? 1 : 0) + (reached ? 1 : 0));
    if (!laid_out) {
        lua_pop(L, 1);
        lua_pushliteral(L, "the plan walk's upvalues are not where the host expects them");
        return LUA_ERRRUN;
    }
    status = luahier_strip(L, "=[luahier walk]");
    if (status != LUA_OK) return status;
    /* lua_load set the first upvalue to the globals: both start afresh. */
    lua_pushboolean(L, 0);
    lua_setupvalue(L, -2, LUAHIER_WALK_STALE);
    lua_pushinteger(L, -1);
    lua_setupvalue(L, -2, LUAHIER_WALK_REACHED);
    return LUA_OK;
}

/* [-0, +0, e] Called by the trampoline after every host function: if a plan walk is under
 * way and the host call moved the chain-change count, the walk is marked stale and stops
 * after the responder that made the call. */
static inline void luahier_notewalkchange(lua_State *L) {
    luahier_Guard *g = luahier_guard(L);
    if (g->walk_changes == NULL || *g->walk_changes == g->walk_changes_at_start) return;
    luaL_checkstack(L, 2, "marking a plan walk stale");
    lua_rawgeti(L, LUA_REGISTRYINDEX, g->plan_ref);
    lua_pushboolean(L, 1);
    lua_setupvalue(L, -2, LUAHIER_WALK_STALE);
    lua_pop(L, 1);
    g->walk_changes = NULL;
}

/* [-0, +0, -] Notes in `called` the entries a walk of the plan at `plan` called for the
 * type at `type`: the matching ones before `reached`, and `reached` itself if it was called. */
static inline void luahier_notecalled(lua_State *L, luahier_Called *called, int plan, int type, int reached, int reached_called) {
    for (int i = 0; i < reached && called->count < (int)sizeof called->entries; i++) {
        int matches = 1;
        if (lua_rawgeti(L, plan, LUAHIER_PLAN_ENTRIES + i * LUAHIER_PLAN_STRIDE + 1) == LUA_TTABLE) {
            lua_pushvalue(L, type);
            matches = lua_rawget(L, -2) != LUA_TNIL;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if (matches) called->entries[called->count++] = (unsigned char)i;
    }
    if (reached_called && called->count < (int)sizeof called->entries) called->entries[called->count++] = (unsigned char)reached;
}

/* [-0, +1, -] Pushes upvalue `n`. */
static inline void luahier_pushup(lua_State *L, int n) { lua_pushvalue(L, lua_upvalueindex(n)); }

/* [-?, +1, e] `node:triggerEvent(event)`. The fast path takes a top-level dispatch of an
 * event table from a node with a current plan; anything else goes to the host unchanged. */
static inline int luahier_trigger(lua_State *L) {
    luahier_Fast *fast = (luahier_Fast *)lua_touserdata(L, lua_upvalueindex(LUAHIER_UP_FAST));
    if (*fast->depth != 0 || lua_gettop(L) != 2 || lua_type(L, 1) != LUA_TUSERDATA || lua_type(L, 2) != LUA_TTABLE)
        return luahier_trampoline(L);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, lua_upvalueindex(LUAHIER_UP_PLANS)) != LUA_TTABLE) {
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* 3: the plan */
    lua_rawgeti(L, 3, LUAHIER_PLAN_STAMP);
    int current = lua_tointegerx(L, -1, NULL) == *fast->changes;
    lua_pop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(LUAHIER_UP_TYPE));
    if (!current || lua_rawget(L, 2) != LUA_TSTRING) {
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    /* 4: the event's type, read once, as the host reads it */
    luahier_Guard *g = luahier_guard(L);
    int caller_in_host = g->in_host;
    lua_pushvalue(L, 2);
    switch (lua_rawget(L, lua_upvalueindex(LUAHIER_UP_TAGS))) {
    case LUA_TNIL:
        /* First travel: tagged as an event, as the host does (host allocations never fail). */
        lua_pop(L, 1);
        g->in_host = 1;
        lua_pushvalue(L, 2);
        lua_pushboolean(L, 1);
        lua_rawset(L, lua_upvalueindex(LUAHIER_UP_TAGS));
        g->in_host = caller_in_host;
        break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, -1)) {
            lua_pop(L, 1);
            break;
        }
        /* fallthrough: an error table, which the host refuses with its message */
    default:
        lua_settop(L, 2);
        return luahier_trampoline(L);
    }
    luahier_charge(L, fast->dispatch_charge);
    fast->walks++;
    /* The dispatch's own budget, kept until it is finished here or by the host. */
    luahier_Budget enclosing;
    luahier_pushbudget(L, &enclosing, fast->dispatch_instructions, fast->dispatch_seconds);

    lua_rawgeti(L, 3, LUAHIER_PLAN_TRACED);
    int traced = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* [5 msgh, 6 walk, plan, value, type] */
    lua_pushcfunction(L, luahier_msgh);
    lua_rawgeti(L, LUA_REGISTRYINDEX, g->plan_ref);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 4);
    int caller_refused = g->memory_refused;
    g->in_host = 0;
    g->memory_refused = 0;
    g->walk_changes = fast->changes;
    g->walk_changes_at_start = *fast->changes;
    *fast->depth = 1;
    int status = lua_pcall(L, 3, 3, 5);
    *fast->depth = 0;
    g->walk_changes = NULL;
    g->in_host = caller_in_host;
    int memory_refused = g->memory_refused;
    g->memory_refused = caller_refused;
    /* 6: how it stopped, 7: the entry, 8: the answer; or 6: the error */
    int stopped, reached;
    /* A limit that tripped and was swallowed inside the walk's responders still ends the
     * dispatch: the host finishes it (and makes the limit error its value). */
    int swallowed = status == LUA_OK && g->budget.exceeded;
    if (status == LUA_OK) {
        stopped = (int)lua_tointegerx(L, 6, NULL);
        reached = (int)lua_tointegerx(L, 7, NULL);
        lua_copy(L, 8, 5);
    } else {
        /* Which entry raised it: the walk's `reached`, read and reset (lua_pcall took the
         * walk off the stack, so it is fetched again: errors only). */
        lua_copy(L, 6, 5);
        lua_rawgeti(L, LUA_REGISTRYINDEX, g->plan_ref);
        lua_getupvalue(L, -1, LUAHIER_WALK_REACHED);
        reached = (int)lua_tointegerx(L, -1, NULL);
        lua_pushinteger(L, -1);
        lua_setupvalue(L, -3, LUAHIER_WALK_REACHED);
        if (reached >= 0) {
            stopped = LUAHIER_WALKED_RAISED;
        } else {
            /* It failed before its first call (no room for its frame): the host walks the
             * plan from the start instead. */
            lua_rawgeti(L, 3, LUAHIER_PLAN_COUNT);
            stopped = lua_tointegerx(L, -1, NULL) > 0 ? LUAHIER_WALKED_HOST : LUAHIER_WALKED_NOTHING;
            reached = 0;
            status = LUA_OK;
        }
    }
    lua_settop(L, 5);
    /* 5: the answer, the error, or nil */

    int handled = stopped == LUAHIER_WALKED_ANSWER && lua_type(L, 5) == LUA_TSTRING
        && lua_topointer(L, 5) == fast->handled;
    int finished = (stopped == LUAHIER_WALKED_ALL || handled) && !swallowed;
    luahier_Called called;
    called.count = 0;
    if (traced || !finished)
        luahier_notecalled(L, &called, 3, 4, reached,
            stopped == LUAHIER_WALKED_ANSWER || stopped == LUAHIER_WALKED_CHANGED || stopped == LUAHIER_WALKED_RAISED);
    if (!finished) {
        /* For the host to finish: (node, event, plan, type, answer or error, fast, entry,
         * how it stopped, whether memory was refused, the entries called). */
        int code = status != LUA_OK ? status
            : stopped == LUAHIER_WALKED_ANSWER ? LUAHIER_STOP_ANSWER
            : stopped == LUAHIER_WALKED_HOST ? LUAHIER_STOP_HOST
            : stopped == LUAHIER_WALKED_CHANGED ? LUAHIER_STOP_CHANGED : LUAHIER_STOP_END;
        fast->handovers++;
        lua_pushlightuserdata(L, fast);
        lua_pushinteger(L, reached);
        lua_pushinteger(L, code);
        lua_pushboolean(L, memory_refused);
        lua_pushlstring(L, (const char *)called.entries, (size_t)called.count);
        /* The host finishes inside the dispatch's budget; then the enclosing one is back. */
        luahier_HostFunction entry = (luahier_HostFunction)lua_touserdata(L, lua_upvalueindex(1));
        int results = entry(L);
        luahier_notewalkchange(L);
        luahier_popbudget(L, &enclosing);
        return luahier_endhostcall(L, results);
    }
    luahier_popbudget(L, &enclosing);

    /* The outcome, made as the host makes it (host allocations never fail). */
    g->in_host = 1;
    lua_createtable(L, 0, handled ? 6 : 4);
    int outcome = lua_gettop(L);
    luahier_pushup(L, LUAHIER_UP_STATUS);
    if (handled) luahier_pushup(L, LUAHIER_UP_HANDLED);
    else lua_rawgeti(L, 3, LUAHIER_PLAN_END);
    lua_rawset(L, outcome);
    luahier_pushup(L, LUAHIER_UP_KIND);
    luahier_pushup(L, LUAHIER_UP_EVENT);
    lua_rawset(L, outcome);
    luahier_pushup(L, LUAHIER_UP_VALUE);
    lua_pushvalue(L, 2);
    lua_rawset(L, outcome);
    luahier_pushup(L, LUAHIER_UP_AT);
    lua_rawgeti(L, 3, LUAHIER_PLAN_AT);
    lua_rawset(L, outcome);
    if (handled) {
        int slot = LUAHIER_PLAN_ENTRIES + reached * LUAHIER_PLAN_STRIDE;
        luahier_pushup(L, LUAHIER_UP_BY);
        lua_rawgeti(L, 3, slot + 2);
        lua_rawset(L, outcome);
        luahier_pushup(L, LUAHIER_UP_RESPONDER);
        lua_createtable(L, 0, 3);
        luahier_pushup(L, LUAHIER_UP_INDEXKEY);
        lua_rawgeti(L, 3, slot + 3);
        lua_rawset(L, outcome + 2);
        luahier_pushup(L, LUAHIER_UP_WHERE);
        lua_rawgeti(L, 3, slot + 4);
        lua_rawset(L, outcome + 2);
        luahier_pushup(L, LUAHIER_UP_KIND);
        luahier_pushup(L, LUAHIER_UP_RECEIVEEVENT);
        lua_rawset(L, outcome + 2);
        lua_rawset(L, outcome);
    }
    if (traced) {
        /* The trace, made on first read from the plan and what was called (LuaFastPath.swift). */
        lua_pushvalue(L, outcome);
        lua_createtable(L, 4, 0);
        lua_pushvalue(L, 3);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_PLAN);
        lua_pushlstring(L, (const char *)called.entries, (size_t)called.count);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_CALLED);
        lua_pushvalue(L, 4);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_TYPE);
        lua_pushboolean(L, handled);
        lua_rawseti(L, -2, LUAHIER_WALKTRACE_HANDLED);
        lua_rawset(L, lua_upvalueindex(LUAHIER_UP_PENDINGTRACES));
        luahier_pushup(L, LUAHIER_UP_TRACEDOUTCOME);
        lua_setmetatable(L, outcome);
    } else {
        luahier_pushup(L, LUAHIER_UP_OUTCOMEMETA);
        lua_setmetatable(L, outcome);
    }
    g->in_host = caller_in_host;
    lua_rawgeti(L, 3, LUAHIER_PLAN_HOPS);
    luahier_charge(L, lua_tointegerx(L, -1, NULL));
    lua_pop(L, 1);
    return 1;
}

#endif
