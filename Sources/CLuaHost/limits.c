/* Limits (contract §7): the allocator that counts and caps memory, budgets that nest, the hook
 * that enforces instruction and time limits, and the limit errors. */
#include "luahier_limits.h"
#include "luahier_errors.h"
#include "luahier_tags.h"

#include <lauxlib.h>
#include <lualib.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Set by the interrupt handler (watchdog.c), read by every check (luahier_limits.h). */
volatile sig_atomic_t luahier_interrupt_signal;
volatile sig_atomic_t luahier_interrupt_generation;

double luahier_now(void) {
    /* The coarse clock (a few ms of resolution; ~6 ns a read where CLOCK_MONOTONIC takes
     * ~30): every dispatch reads it once to start its deadline, and deadlines are seconds. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void luahier_noteplace(luahier_Guard *g, const lua_Debug *ar) {
    memcpy(g->last_source, ar->short_src, sizeof g->last_source);
    g->last_line = ar->currentline;
}

/* [-0, +0, -] How many instructions the hook should wait for next: the interval, or fewer
 * when the budget ends sooner (so a budget trips at exactly its count). */
static int luahier_nextcount(const luahier_Guard *g) {
    long long left = g->budget.trip_at - g->spent;
    if (left >= LUAHIER_HOOK_INTERVAL) return LUAHIER_HOOK_INTERVAL;
    return left < 1 ? 1 : (int)left;
}

void luahier_hooknext(lua_State *L) {
    if (lua_gethook(L) == luahier_hook && lua_gethookcount(L) == 1 && (lua_gethookmask(L) & LUA_MASKCOUNT)) return;
    lua_sethook(L, luahier_hook, LUA_MASKCOUNT, 1);
}

/* [-0, +0, -] Tells the watchdog the Lua thread is not stuck in C code. */
static void luahier_progress(luahier_Guard *g) {
    if (g->watch) __atomic_add_fetch(&g->watch->progress, 1, __ATOMIC_RELAXED);
}

/* [-0, +0, -] Sets `L`'s hook as the guard wants it now: at every instruction once tripped,
 * at the next count while a limit is on, else none. */
static void luahier_sethook(lua_State *L, const luahier_Guard *g) {
    if (g->active && g->budget.exceeded) luahier_hooknext(L);
    else if (g->hooked) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, g->active ? luahier_nextcount(g) : LUAHIER_HOOK_INTERVAL);
    else lua_sethook(L, NULL, 0, 0);
}

/* [-0, +0, -] Shows the watchdog the innermost deadline now known. */
static void luahier_publishdeadline(luahier_Guard *g) {
    if (g->watch) __atomic_store(&g->watch->deadline, &g->budget.deadline, __ATOMIC_RELEASE);
}

/* [-0, +0, -] The calling thread's kernel id (cached per thread). */
static long luahier_threadid(void) {
    static __thread long cached;
    if (cached == 0) cached = (long)syscall(SYS_gettid);
    return cached;
}

/* [-0, +0, -] Starts the innermost budget's own clock at `now`: its deadline is `seconds` on,
 * unless the enclosing budget's comes sooner. */
static void luahier_startclock(luahier_Guard *g, double now, double seconds) {
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
static int luahier_check(luahier_Guard *g) {
    luahier_Budget *b = &g->budget;
    luahier_progress(g);
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

void luahier_trip(luahier_Guard *g, int kind) {
    lua_State *running = g->running ? g->running : g->main;
    lua_Debug ar;
    /* The place it tripped, for `where` (the allocator noted a refusal's place already). */
    if (kind != LUAHIER_TRIPPED_MEMORY && luahier_findluaframe(running, 0, &ar)) luahier_noteplace(g, &ar);
    if (!g->budget.exceeded) g->budget.exceeded = kind;
    luahier_hooknext(running);
}

void luahier_chargework(luahier_Guard *g, long long units) {
    g->work_total += units;
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

/* Small blocks. A request of n <= 264 bytes is served as malloc's own bin for it: 16k + 8
 * usable bytes (24, 40, ..., 264), the size malloc_usable_size would report, so the cap counts
 * what it always did. Freed ones go on their class's list, up to LUAHIER_CACHED_BYTES per
 * state, and the next request of the class takes one back: no malloc, no free. Lua passes
 * the exact old size of every block, so a block's class is known without asking malloc. */
#define LUAHIER_SMALL_BLOCK 264
#define LUAHIER_CACHED_BYTES (512 * 1024)

static unsigned luahier_sizeclass(size_t n) {
    return n <= 24 ? 1 : (unsigned)((n + 7) >> 4);
}

static size_t luahier_classbytes(unsigned k) {
    return ((size_t)k << 4) + 8;
}

/* [-0, +0, -] A block of class `k`: a cached one, or a new one from malloc (NULL: none). */
static void *luahier_takeblock(luahier_Guard *g, unsigned k) {
    void *block = g->cached_blocks[k];
    if (block == NULL) return malloc(luahier_classbytes(k));
    g->cached_blocks[k] = *(void **)block;
    g->cached_bytes -= luahier_classbytes(k);
    return block;
}

/* [-0, +0, -] Gives back a block Lua knew as `size` bytes: cached if small and there is room. */
static void luahier_giveblock(luahier_Guard *g, void *block, size_t size) {
    if (size <= LUAHIER_SMALL_BLOCK) {
        unsigned k = luahier_sizeclass(size);
        size_t bytes = luahier_classbytes(k);
        if (g->cached_bytes + bytes <= LUAHIER_CACHED_BYTES) {
            *(void **)block = g->cached_blocks[k];
            g->cached_blocks[k] = block;
            g->cached_bytes += bytes;
            return;
        }
    }
    free(block);
}

void luahier_dropcachedblocks(luahier_Guard *g) {
    for (unsigned k = 1; k <= LUAHIER_SIZE_CLASSES; k++) {
        while (g->cached_blocks[k]) {
            void *block = g->cached_blocks[k];
            g->cached_blocks[k] = *(void **)block;
            free(block);
        }
    }
    g->cached_bytes = 0;
}

/* [-0, +0, -] `ptr` (Lua's block of `osize` bytes) as a block of `nsize`: the same block when
 * it already fits, else a new one with the contents moved. NULL (and `ptr` untouched) when
 * malloc has nothing. */
static void *luahier_resize(luahier_Guard *g, void *ptr, size_t osize, size_t nsize) {
    int was_small = ptr != NULL && osize <= LUAHIER_SMALL_BLOCK;
    void *block;
    if (nsize <= LUAHIER_SMALL_BLOCK) {
        unsigned k = luahier_sizeclass(nsize);
        if (was_small && luahier_sizeclass(osize) == k) return ptr;
        block = luahier_takeblock(g, k);
        /* Lua counts on a shrink never failing: a larger block serves as the smaller one. */
        if (block == NULL) return ptr != NULL && nsize < osize ? ptr : NULL;
    } else if (ptr != NULL && !was_small) {
        return realloc(ptr, nsize);
    } else if ((block = malloc(nsize)) == NULL) {
        return NULL;
    }
    if (ptr != NULL) {
        memcpy(block, ptr, osize < nsize ? osize : nsize);
        luahier_giveblock(g, ptr, osize);
    }
    return block;
}

/* [-0, +0, -] What the cap counts for Lua's block of `size` bytes at `ptr`. */
static size_t luahier_blockbytes(const void *ptr, size_t size) {
    if (ptr == NULL) return 0;
    return size <= LUAHIER_SMALL_BLOCK ? luahier_classbytes(luahier_sizeclass(size)) : malloc_usable_size((void *)ptr);
}

/* Every request but the common ones luahier_alloc answers itself. Apart, so that the common
 * ones do not pay for its frame (a lua_Debug, saved registers). */
static __attribute__((noinline)) void *luahier_allocslow(luahier_Guard *g, void *ptr, size_t osize, size_t nsize) {
    size_t old = luahier_blockbytes(ptr, osize);
    if (nsize == 0) {
        if (ptr) luahier_giveblock(g, ptr, osize);
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
                /* Sticky unless the retry that usually follows succeeds (the collection freed
                 * enough): a refusal Lua does not retry must still trip. */
                g->refusal_pending = 1;
                if (g->active && at) luahier_hooknext(at);
            } else if (g->active && !g->budget.exceeded) {
                g->refusal_pending = 0;
                luahier_trip(g, LUAHIER_TRIPPED_MEMORY);
            }
            return NULL;
        }
        if (retry) g->refusal_pending = 0;
    }
    void *block = luahier_resize(g, ptr, osize, nsize);
    if (block == NULL) return NULL;
    /* A failed shrink kept the larger block: counted as the size Lua now knows it by. */
    g->used = g->used - old + luahier_blockbytes(block, nsize);
    if (nsize > old) g->allocated_total += (long long)(nsize - old);
    if (g->used > g->peak) g->peak = g->used;
    if (nsize > old) luahier_chargework(g, (long long)((nsize - old) / LUAHIER_BYTES_PER_UNIT));
    return block;
}

void *luahier_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    luahier_Guard *g = (luahier_Guard *)ud;
    /* Most requests: a new small block, a cached one at hand, no refusal on record, well
     * under the cap: luahier_allocslow's bookkeeping, with nothing in it that cannot apply. */
    if (ptr == NULL && nsize - 1 < LUAHIER_SMALL_BLOCK && g->refused_size == 0) {
        unsigned k = luahier_sizeclass(nsize);
        void *block = g->cached_blocks[k];
        size_t bytes = luahier_classbytes(k);
        if (block != NULL && (g->limit == 0 || g->in_host || g->used + nsize + 16 <= g->limit)) {
            g->cached_blocks[k] = *(void **)block;
            g->cached_bytes -= bytes;
            g->used += bytes;
            g->allocated_total += (long long)nsize;
            if (g->used > g->peak) g->peak = g->used;
            luahier_chargework(g, (long long)(nsize / LUAHIER_BYTES_PER_UNIT));
            return block;
        }
    }
    if (nsize == 0) {
        /* Nothing asked for nothing: Lua frees (and makes) a table's empty array part so. */
        if (ptr == NULL) return NULL;
        /* A table's tag goes with its block (a block of another kind of the same size is only
         * looked up). */
        if (osize == g->tags.table_bytes && g->tags.count != 0) luahier_tagsfreed(&g->tags, ptr);
        /* A small block freed: cached, or freed when the cache is full. */
        if (osize - 1 < LUAHIER_SMALL_BLOCK) {
            luahier_giveblock(g, ptr, osize);
            g->used -= luahier_classbytes(luahier_sizeclass(osize));
            return NULL;
        }
    }
    return luahier_allocslow(g, ptr, osize, nsize);
}

void luahier_fixmmapthreshold(void) {
    static int fixed;
    if (__atomic_exchange_n(&fixed, 1, __ATOMIC_ACQ_REL)) return;
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

/* [-0, +1, -] The error of an interrupt: { type = "Interrupted", message = "interrupted",
 * signal, where, traceback }, made where it first tripped (with the traceback from there,
 * as lua.c shows it), then the same table each time it is raised again on the way out, so
 * the entry ends naming the place the script was stopped at. Called by
 * luahier_pushlimiterror, in host mode. */
static void luahier_pushinterrupterror(lua_State *L, luahier_Guard *g) {
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

void luahier_pushlimiterror(lua_State *L, luahier_Guard *g) {
    int caller_in_host = g->in_host;
    g->in_host = 1;
    const luahier_Budget *b = &g->budget;
    if (b->exceeded == LUAHIER_TRIPPED_INTERRUPTED) {
        luahier_pushinterrupterror(L, g);
        g->in_host = caller_in_host;
        return;
    }
    lua_createtable(L, 0, 4);
    g->failures |= b->exceeded == LUAHIER_TRIPPED_INSTRUCTIONS ? LUAHIER_FAILED_INSTRUCTIONS
                 : b->exceeded == LUAHIER_TRIPPED_TIME       ? LUAHIER_FAILED_TIME
                                                              : LUAHIER_FAILED_MEMORY;
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

int luahier_raiselimit(lua_State *L, luahier_Guard *g) {
    luahier_hooknext(L);
    luahier_pushlimiterror(L, g);
    return lua_error(L);
}

/* [-0, +0, -] Whether the function running at `ar`'s level is the dispatch engine's walk. A
 * tripped limit is not raised there but at the first instruction of the next responder it
 * calls (the walk is short and bounded), so a limit error always names a responder's line;
 * a walk that ends first leaves the trip to its driver. */
static int luahier_inplanwalk(lua_State *L, lua_Debug *ar) {
    luahier_Guard *g = luahier_guard(L);
    return luahier_frameruns(L, ar, g->walk_ref) || luahier_frameruns(L, ar, g->traced_walk_ref);
}

/* [-0, +0, -] A refusal no retry took back trips the cap (luahier_Guard.refusal_pending). */
static void luahier_settlerefusal(luahier_Guard *g) {
    if (!g->refusal_pending) return;
    g->refusal_pending = 0;
    if (g->active && !g->budget.exceeded) g->budget.exceeded = LUAHIER_TRIPPED_MEMORY;
}

void luahier_hook(lua_State *L, lua_Debug *ar) {
    luahier_Guard *g = luahier_guard(L);
    luahier_progress(g);
    luahier_settlerefusal(g);
    if (g->active && !g->budget.exceeded && luahier_interrupt_signal) {
        /* Stopped by a signal (the handler set this hook on a state with no limits too). */
        lua_Debug place;
        if (luahier_findluaframe(L, 0, &place)) luahier_noteplace(g, &place);
        g->budget.exceeded = LUAHIER_TRIPPED_INTERRUPTED;
    }
    if (!g->active) {
        /* Left over from a trip that ended, or a prompt that came late. */
        luahier_sethook(L, g);
        return;
    }
    if (!g->budget.exceeded && !g->hooked) {
        /* No count hook: the watchdog's prompt (a deadline passed), or one left over. The
         * clock decides; until a trip, Lua runs without a hook again. */
        g->work = 0;
        if (!luahier_check(g)) {
            lua_sethook(L, NULL, 0, 0);
            return;
        }
        lua_Debug place;
        if (luahier_findluaframe(L, 0, &place)) luahier_noteplace(g, &place);
    } else if (!g->budget.exceeded) {
        /* The place, for `where`: the running function's line, or (in the plan walk, which has
         * none) its caller's. */
        lua_Debug place;
        if (luahier_findluaframe(L, 0, &place)) luahier_noteplace(g, &place);
        g->spent += lua_gethookcount(L);
        g->work_total += lua_gethookcount(L);
        g->work = 0;
        if (!luahier_check(g)) {
            int next = luahier_nextcount(g);
            if (lua_gethookcount(L) != next) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, next);
            return;
        }
    }
    luahier_hooknext(L);
    if (luahier_inplanwalk(L, ar)) return;
    luahier_raiselimit(L, g);
}

void luahier_installhook(lua_State *L) {
    lua_sethook(L, luahier_hook, LUA_MASKCOUNT, LUAHIER_HOOK_INTERVAL);
}

void luahier_beginentry(lua_State *L, long long instructions, double seconds, int scope) {
    luahier_Guard *g = luahier_guard(L);
    luahier_Budget *b = &g->budget;
    g->active = 1;
    g->spent = 0;
    g->work = 0;
    g->last_line = 0;
    g->refused_block = NULL;
    g->refused_size = 0;
    g->refusal_pending = 0;
    b->trip_at = instructions > 0 ? instructions : LLONG_MAX;
    b->instruction_limit = instructions;
    b->instruction_scope = scope;
    b->deadline = seconds > 0 ? luahier_now() + seconds : 0;
    b->time_limit = seconds;
    b->time_scope = scope;
    b->own_time = 0;
    b->exceeded = 0;
    g->failures = 0;
    if (g->watch) {
        luahier_publishdeadline(g);
        luahier_progress(g);
        __atomic_store_n(&g->watch->tid, luahier_threadid(), __ATOMIC_RELEASE);
    }
    /* The thread is published before the flag is read, and the handler sets the flag before
     * it reads the threads: one of the two sees the other, so no interrupt falls between. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (luahier_interrupt_signal) luahier_hooknext(L);
    else if (g->hooked) lua_sethook(L, luahier_hook, LUA_MASKCOUNT, luahier_nextcount(g));
}

int luahier_endentry(lua_State *L) {
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

void luahier_pushbudget(lua_State *L, luahier_Budget *saved, long long instructions, double seconds) {
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

int luahier_popbudget(lua_State *L, const luahier_Budget *saved) {
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

void luahier_charge(lua_State *L, long long units) {
    luahier_chargework(luahier_guard(L), units);
}

void luahier_work(lua_State *L, long long units) {
    luahier_Guard *g = luahier_guard(L);
    luahier_charge(L, units);
    if (g->active && g->budget.exceeded) luahier_raiselimit(L, g);
}

int luahier_guardtripped(luahier_Guard *g) {
    luahier_settlerefusal(g);
    return g->active ? g->budget.exceeded : 0;
}

int luahier_tripped(lua_State *L) {
    return luahier_guardtripped(luahier_guard(L));
}
