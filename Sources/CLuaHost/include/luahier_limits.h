/* Limits: memory, instructions, time (limits.c). contract §7; docs/limits.md.
 * Uses the guard (luahier_guard.h), errors (luahier_errors.h: frames, tracebacks) and the
 * domain tags (luahier_tags.h: a freed table's tag goes). */
#ifndef LUAHIER_LIMITS_H
#define LUAHIER_LIMITS_H

#include "luahier_guard.h"

#include <lua.h>
#include <signal.h>
#include <stddef.h>

/* The signal that asked the process to stop (SIGINT, SIGTERM), 0 while none did. Set by the
 * interrupt handler (Sources/CLuaHost/watchdog.c); every check reads it. */
extern volatile sig_atomic_t luahier_interrupt_signal;
/* How many times an interrupt was asked for (an error kept from an earlier one is not
 * raised again for a later one, after a reset). */
extern volatile sig_atomic_t luahier_interrupt_generation;

/* The count hook runs every this many instructions; once tripped, at every instruction. Host
 * work is charged in the same units, and the clock is read every this many of them. */
#define LUAHIER_HOOK_INTERVAL 1000
/* Bytes allocated that count as one unit of work (a copy, a concatenation, a table grown). */
#define LUAHIER_BYTES_PER_UNIT 64
/* Room the error machinery gets past the memory cap once it has tripped (message handler,
 * traceback, the error table): the script itself can run no instruction by then. */
#define LUAHIER_MEMORY_GRACE (1 << 20)

/* [-0, +0, -] */
double luahier_now(void);

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

/* [-0, +0, -] Frees the small blocks the allocator keeps for reuse: after lua_close. */
void luahier_dropcachedblocks(luahier_Guard *g);

/* [-0, +0, -] Fixes glibc's mmap threshold at 256 KiB (once per process). The memory cap
 * counts live bytes; with the dynamic threshold, once a large block (a 1 MB string, an input
 * line) is freed, later ones come from the heap, where freed memory stays resident, and the
 * process drifts far above what the cap counts. Mapped, they are given back when freed. */
void luahier_fixmmapthreshold(void);

/* [-0, +1, m] The error of the limit the budget tripped on (or of the cap's refusal, when none
 * tripped), naming where; a limit's is noted in the guard's failures (LUAHIER_FAILED_*). */
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

#endif
