/*
 * The watchdog: prompt time limits for LuaHierarchy's Lua states.
 *
 * The count hook reads the clock only every 1,000 instructions, which is too late when single
 * instructions are long (comparing two 100 MB strings takes ~20 ms, so 1,000 of them ran 5 s
 * past a 1 s deadline). One watchdog thread per process looks at the deadline each watched
 * state publishes (its innermost budget's, in its watch cell) every few milliseconds; when one
 * has passed while the state runs an entry, it signals the thread running it. The handler,
 * on that thread, sets the state's hook to fire at the next instruction (lua.c's way of
 * stopping a script; lua_sethook is safe in a signal handler, and it is never called from
 * another thread). The hook then reads the clock itself: a signal that lands late, or after the
 * entry ended, only makes it check once more.
 *
 * Uses limits (luahier_limits.h: the guard's watch cell, the hook, the interrupt flags) and
 * CSignals (luahier_signals.h: installing a handler).
 */
#ifndef LUAHIER_WATCHDOG_H
#define LUAHIER_WATCHDOG_H

#include <stddef.h>
#include <sys/types.h>

/* The signal the watchdog sends: SIGRTMIN + LUAHIER_WATCHDOG_SIGNAL_OFFSET. A process that
 * already handles that signal keeps its handler, and its states run without the watchdog
 * (the count hook alone). */
#define LUAHIER_WATCHDOG_SIGNAL_OFFSET 7

/* Watches the state whose guard (a luahier_Guard) is `guard`: returns its watch cell (a
 * luahier_WatchCell, for the guard's `watch`), or NULL when it cannot be watched (no free
 * cell, the signal is taken, no thread could start). */
void *luahier_watch(void *guard);

/* Stops watching: the cell is free again. Call before the guard is freed. */
void luahier_unwatch(void *cell);

/* Lets the calling thread receive the watchdog's signal (once per thread): worker threads
 * of Dispatch and of Swift concurrency start with every signal blocked. Call before a thread
 * starts an entry of a watched state. */
void luahier_watchdog_prepare_thread(void);

/* A state whose deadline has passed (or that an interrupt asked to stop) and that has shown
 * no progress for this many seconds since is stuck inside one C call: one of Lua's own
 * operations on data built to be slow (a rehash of colliding integer keys, an ephemeron
 * collection), a parse, or a blocking call of the full libraries. No hook reaches it, and a
 * state left in the middle of such a call can neither be used nor closed: the watchdog ends
 * the process, writing `luahier: NAME:LINE: time limit exceeded, but ...` to stderr, exit
 * status 1 (128 + the signal for an interrupt). */
#define LUAHIER_STUCK_SECONDS 5

/* Whether a state stalled for `wall` seconds (past its deadline, with no progress) is stuck,
 * given that its thread ran `cpu` seconds meanwhile (< 0: not known) and is `runnable` (1:
 * running or waiting for a CPU; 0: asleep, as in a blocking call; < 0: not known). A thread
 * waiting for a CPU is not stuck until it has run LUAHIER_STUCK_SECONDS: a thread of a
 * shadow candidate (SCHED_IDLE) on busy CPUs, or any thread of an overloaded machine, would
 * otherwise take a C call of 0.1 s for one stuck for 5 (an attacker's find: a candidate took
 * the live server down). Asleep, or not known, the wall time decides, as before. */
int luahier_watchdog_stuck(double wall, double cpu, int runnable);

/* The calling thread's id (the kernel's tid, as cells and the two readings below name it). */
long luahier_thread_id(void);

/* The CPU time the thread `tid` of this process has run, in seconds; -1 when not known. */
double luahier_thread_cputime(long tid);

/* Whether the thread `tid` of this process is running or waiting for a CPU (1), asleep (0),
 * or not known (-1): read from /proc/self/task/TID/stat. */
int luahier_thread_runnable(long tid);

/* Marks the state watched by `cell` as a shadow candidate's (a background pool's): stuck,
 * it is left inside its call, which may end in the end (a rehash, a collection) or not (a
 * blocking call); the candidate falls behind, and the process, whose live states it holds
 * nothing of, goes on. Ending the process for it ended the live server (an attacker's find). */
void luahier_watchdog_background(void *cell);

/* How many times the watchdog found a background state stuck and let the process go on
 * (for tests). */
long luahier_watchdog_spared(void);

/* Runs `action` (on the watchdog's thread) before the process ends that way, with the message
 * and the interrupting signal (0: a deadline): an embedder's last word. NULL: none. */
void luahier_watchdog_onstuck(void (*action)(const char *message, int signal_number));

/* Names what the entries of the state watched by `cell` run, for that message: `name` (a
 * script, an input; NULL keeps the one set before) and the input line (0: none). */
void luahier_watchdog_name(void *cell, const char *name, long line);

/* How many signals the watchdog has sent (for tests). */
long luahier_watchdog_signals(void);

/* Interrupts: lua.c's way of stopping a script on Ctrl-C, for every state of the process.
 * The first SIGINT or SIGTERM is recorded (luahier_interrupt_signal, luahier_limits.h) and trips every
 * running budget at its next instruction or charge, out to the top-level entry, with the
 * error { type = "Interrupted", message = "interrupted", signal, where, traceback }; new
 * entries stop at their first instruction until it is reset. The handler reaches a running
 * state through the watchdog's signal, so lua_sethook runs on the state's own thread. A
 * second signal ends the process the default way. */

/* Installs the handler for SIGINT and SIGTERM (one the process started with ignored stays
 * ignored) and unblocks them in the calling thread (threads it starts later inherit that);
 * 0 on success. The handler does not restart system calls: a blocked read returns EINTR. */
int luahier_interrupt_install(void);

/* Installs the same handler for SIGHUP: a closed terminal or session stops a command as
 * SIGTERM does, its output kept (`luahier dispatch` lost answers it had logged when SIGHUP
 * ended it the default way: an attacker's find). A service that reloads on SIGHUP installs
 * its own handler after it. 0 on success. */
int luahier_interrupt_install_hangup(void);

/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (one that only waits), so they reach
 * a thread that runs Lua or reads input. */
void luahier_interrupt_block(void);

/* Does what the handler does, for `sig`, from any thread (embedders, tests). */
void luahier_interrupt_request(int sig);

/* The signal that asked to stop, 0 while none did. */
int luahier_interrupt_pending(void);

/* Lets entries run again (the handlers, once they fired, stay the default ones until
 * luahier_interrupt_install runs again). */
void luahier_interrupt_reset(void);

/* How many bytes luahier_unreadstdin keeps: a bundle's magic, and more. */
#define LUAHIER_STDIN_AHEAD 16

/* Gives the first `count` bytes read of fd 0 (at most LUAHIER_STDIN_AHEAD) back to the next
 * luahier_readstdin; `ended`: that read met the end of input. For telling a bundle from a
 * script on stdin without losing what the telling read. Stdin is read by one thread at a
 * time (the command's): these keep no lock. */
void luahier_unreadstdin(const void *bytes, size_t count, int ended);

/* read(2) of fd 0, the bytes given back first: -1 and errno on failure (EINTR for a read a
 * signal cut short), 0 at the end. */
ssize_t luahier_readstdin(void *buffer, size_t size);

/* [-0, +1, -] Loads a chunk from stdin (named "stdin", a '#' first line left out) as
 * luaL_loadfilex(L, NULL, mode) does (the bytes given back first), except that a read an
 * interrupt cuts short ends it:
 * "cannot read stdin: Interrupted system call", LUA_ERRFILE. */
struct lua_State;
int luahier_loadstdin(struct lua_State *L, const char *mode);

#endif
