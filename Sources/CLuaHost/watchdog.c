/* The watchdog (luahier_watchdog.h): one thread per process, one cell per watched state. */
#define _GNU_SOURCE
#include "luahier_watchdog.h"
#include "luahier_limits.h"
#include "luahier_signals.h"

#include <lua.h>
#include <lauxlib.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Cells live in static memory and are never freed, so the handler and the thread read them
 * without a lock and never touch freed memory; a cell's guard is only dereferenced by the
 * thread its `tid` names, which is inside an entry of that state (so the state is not being
 * closed: one state is used by one thread at a time). */
#define LUAHIER_WATCH_CELLS 4096
#define LUAHIER_WATCH_PERIOD_NS (5 * 1000 * 1000)

static luahier_WatchCell cells[LUAHIER_WATCH_CELLS];
static int cells_used;                       /* high-water mark, under `lock` */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state;                            /* 0: not started, 1: running, -1: unavailable */
static long signals_sent;
static long stuck_spared;

/* On the Lua thread: for each state this thread is running an entry of whose deadline has
 * passed, make its running thread's next instruction run the hook. Host code (Swift) counts as
 * progress: it charges its work and returns to Lua, or waits on I/O an interrupt ends. */
static void luahier_watchhandler(int sig, siginfo_t *info, void *context) {
    (void)sig; (void)info; (void)context;
    int saved_errno = errno;   /* the interrupted code may be about to read it */
    long self = (long)syscall(SYS_gettid);
    int used = __atomic_load_n(&cells_used, __ATOMIC_ACQUIRE);
    for (int i = 0; i < used; i++) {
        luahier_WatchCell *cell = &cells[i];
        if (__atomic_load_n(&cell->tid, __ATOMIC_ACQUIRE) != self) continue;
        luahier_Guard *g = (luahier_Guard *)cell->guard;
        if (g != NULL && g->active) {
            if (g->in_host) __atomic_add_fetch(&cell->progress, 1, __ATOMIC_RELAXED);
            g->prompted = 1;
            luahier_hooknext(g->running ? g->running : g->main);
        }
        __atomic_store_n(&cell->pending, 0, __ATOMIC_RELEASE);
    }
    errno = saved_errno;
}

/* What the watchdog thread alone keeps per cell: the progress it last saw, and since when
 * the state has shown none while its deadline had passed (0: it is not waiting). */
static long seen_progress[LUAHIER_WATCH_CELLS];
static long seen_tid[LUAHIER_WATCH_CELLS];
static double stalled_since[LUAHIER_WATCH_CELLS];
static double stalled_cpu[LUAHIER_WATCH_CELLS];   /* the thread's CPU time then; -1: not known */

int luahier_watchdog_stuck(double wall, double cpu, int runnable) {
    if (wall <= LUAHIER_STUCK_SECONDS) return 0;
    if (runnable == 1 && cpu >= 0) return cpu > LUAHIER_STUCK_SECONDS;
    return 1;
}

long luahier_thread_id(void) { return (long)syscall(SYS_gettid); }

double luahier_thread_cputime(long tid) {
    /* The kernel's CPU clock of one thread (what glibc's pthread_getcpuclockid makes from a
     * tid): a per-thread, scheduler-accounted clock, readable for any thread of the process. */
    clockid_t clock = (clockid_t)((~(unsigned long)tid << 3) | 6);
    struct timespec spent;
    if (clock_gettime(clock, &spent) != 0) return -1;
    return (double)spent.tv_sec + (double)spent.tv_nsec / 1e9;
}

int luahier_thread_runnable(long tid) {
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return -1;
    ssize_t length = read(descriptor, text, sizeof text - 1);
    close(descriptor);
    if (length <= 0) return -1;
    text[length] = 0;
    /* "TID (NAME) STATE ...": NAME may hold spaces and parentheses, so after the last ')'. */
    const char *end = strrchr(text, ')');
    if (end == NULL || end[1] != ' ') return -1;
    return end[2] == 'R' ? 1 : 0;
}

static void (*stuck_action)(const char *message, int signal_number);

/* On the watchdog thread: the state of `cell` has been inside one C call for
 * LUAHIER_STUCK_SECONDS past its deadline (or an interrupt). Nothing can stop it there, and
 * a state left mid-operation cannot be used or closed again: the process ends, saying so. */
static void luahier_stuck(luahier_WatchCell *cell, int interrupted) {
    char place[160] = "";
    long line = __atomic_load_n(&cell->entry_line, __ATOMIC_ACQUIRE);
    char name[sizeof cell->entry_name];
    memcpy(name, cell->entry_name, sizeof name);
    name[sizeof name - 1] = 0;
    if (name[0] && line > 0) snprintf(place, sizeof place, "%s:%ld: ", name, line);
    else if (name[0]) snprintf(place, sizeof place, "%s: ", name);
    char message[512];
    snprintf(message, sizeof message,
             "%s%s, but the script has been inside one C call for %d s since, where no hook can "
             "stop it (a table rehash or a garbage collection of data built to be slow, a parse, "
             "a blocking call of the full libraries); the state cannot be recovered, so the "
             "process stops", place, interrupted ? "interrupted" : "time limit exceeded",
             LUAHIER_STUCK_SECONDS);
    int signal_number = interrupted ? luahier_interrupt_signal : 0;
    if (stuck_action) stuck_action(message, signal_number);
    /* stdio's own buffers (the full libraries' io.write), unless their lock is held. */
    if (ftrylockfile(stdout) == 0) { fflush_unlocked(stdout); funlockfile(stdout); }
    char line_out[600];
    int length = snprintf(line_out, sizeof line_out, "luahier: %s\n", message);
    if (length > 0) {
        ssize_t ignored = write(2, line_out, (size_t)length < sizeof line_out ? (size_t)length : sizeof line_out - 1);
        (void)ignored;
    }
    _exit(signal_number ? 128 + signal_number : 1);
}

static void *luahier_watchloop(void *unused) {
    (void)unused;
    struct timespec period = { 0, LUAHIER_WATCH_PERIOD_NS };
    int signal_number = SIGRTMIN + LUAHIER_WATCHDOG_SIGNAL_OFFSET;
    pid_t pid = getpid();
    for (;;) {
        nanosleep(&period, NULL);
        double now = luahier_now();
        int interrupted = luahier_interrupt_signal != 0;
        int used = __atomic_load_n(&cells_used, __ATOMIC_ACQUIRE);
        for (int i = 0; i < used; i++) {
            luahier_WatchCell *cell = &cells[i];
            long tid = __atomic_load_n(&cell->tid, __ATOMIC_ACQUIRE);
            double deadline;
            __atomic_load(&cell->deadline, &deadline, __ATOMIC_ACQUIRE);
            if (tid == 0 || (!interrupted && (deadline <= 0 || now <= deadline))) {
                stalled_since[i] = 0;
                continue;
            }
            long progress = __atomic_load_n(&cell->progress, __ATOMIC_ACQUIRE);
            if (stalled_since[i] == 0 || progress != seen_progress[i] || tid != seen_tid[i]) {
                stalled_since[i] = now;
                stalled_cpu[i] = luahier_thread_cputime(tid);
                seen_progress[i] = progress;
                seen_tid[i] = tid;
            } else if (now - stalled_since[i] > LUAHIER_STUCK_SECONDS) {
                /* Only past the wall-time bound are the thread's CPU time and state read. */
                double cpu = luahier_thread_cputime(tid);
                double ran = stalled_cpu[i] >= 0 && cpu >= 0 ? cpu - stalled_cpu[i] : -1;
                if (luahier_watchdog_stuck(now - stalled_since[i], ran, luahier_thread_runnable(tid))) {
                    if (__atomic_load_n(&cell->background, __ATOMIC_ACQUIRE)) __atomic_add_fetch(&stuck_spared, 1, __ATOMIC_RELAXED);
                    else luahier_stuck(cell, interrupted);
                }
            }
            /* One signal at a time: a handler slower than the period (lua_sethook walks every
             * frame of a deep stack) must not find the next ones queued behind it. A stale tid
             * is refused (ESRCH) or reaches a thread that runs no entry of this state, whose
             * handler then only clears the flag. */
            if (__atomic_exchange_n(&cell->pending, 1, __ATOMIC_ACQ_REL)) continue;
            if (syscall(SYS_tgkill, pid, tid, signal_number) == 0) __atomic_add_fetch(&signals_sent, 1, __ATOMIC_RELAXED);
            else __atomic_store_n(&cell->pending, 0, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

/* Under `lock`: installs the handler (unless the signal is taken) and starts the thread. */
static int luahier_startwatchdog(void) {
    if (state != 0) return state;
    int signal_number = SIGRTMIN + LUAHIER_WATCHDOG_SIGNAL_OFFSET;
    struct sigaction existing;
    if (sigaction(signal_number, NULL, &existing) != 0
        || ((existing.sa_flags & SA_SIGINFO) ? existing.sa_sigaction != NULL
                                              : (existing.sa_handler != SIG_DFL && existing.sa_handler != SIG_IGN))) {
        return state = -1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = luahier_watchhandler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal_number, &action, NULL) != 0) return state = -1;
    __atomic_store_n(&state, 1, __ATOMIC_RELEASE);
    /* The watchdog thread itself never takes the signal, nor SIGINT or SIGTERM (they go to
     * a thread that runs Lua or reads input, whose wait they cut short). */
    sigset_t blocked, previous;
    sigemptyset(&blocked);
    sigaddset(&blocked, signal_number);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &blocked, &previous);
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    int failed = pthread_create(&thread, &attributes, luahier_watchloop, NULL);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (failed) state = -1;
    return state;
}

void *luahier_watch(void *guard) {
    luahier_WatchCell *found = NULL;
    pthread_mutex_lock(&lock);
    if (luahier_startwatchdog() == 1) {
        for (int i = 0; i < LUAHIER_WATCH_CELLS && found == NULL; i++) {
            if (cells[i].guard != NULL) continue;
            found = &cells[i];
            found->tid = 0;
            found->deadline = 0;
            found->pending = 0;
            found->entry_line = 0;
            found->entry_name[0] = 0;
            found->background = 0;
            found->guard = guard;
            if (i >= cells_used) __atomic_store_n(&cells_used, i + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void luahier_watchdog_background(void *cell) {
    if (cell != NULL) __atomic_store_n(&((luahier_WatchCell *)cell)->background, 1, __ATOMIC_RELEASE);
}

long luahier_watchdog_spared(void) { return __atomic_load_n(&stuck_spared, __ATOMIC_RELAXED); }

void luahier_unwatch(void *cell) {
    luahier_WatchCell *watched = (luahier_WatchCell *)cell;
    if (watched == NULL) return;
    pthread_mutex_lock(&lock);
    __atomic_store_n(&watched->tid, 0, __ATOMIC_RELEASE);
    watched->deadline = 0;
    watched->guard = NULL;
    pthread_mutex_unlock(&lock);
}

void luahier_watchdog_prepare_thread(void) {
    static __thread int ready;
    if (ready || __atomic_load_n(&state, __ATOMIC_ACQUIRE) != 1) return;
    sigset_t watched;
    sigemptyset(&watched);
    sigaddset(&watched, SIGRTMIN + LUAHIER_WATCHDOG_SIGNAL_OFFSET);
    pthread_sigmask(SIG_UNBLOCK, &watched, NULL);
    ready = 1;
}

void luahier_watchdog_onstuck(void (*action)(const char *message, int signal_number)) {
    stuck_action = action;
}

void luahier_watchdog_name(void *cell, const char *name, long line) {
    luahier_WatchCell *watched = (luahier_WatchCell *)cell;
    if (watched == NULL) return;
    if (name) {
        size_t length = strlen(name);
        if (length >= sizeof watched->entry_name) length = sizeof watched->entry_name - 1;
        memcpy(watched->entry_name, name, length);
        watched->entry_name[length] = 0;
    }
    __atomic_store_n(&watched->entry_line, line, __ATOMIC_RELEASE);
}

long luahier_watchdog_signals(void) {
    return __atomic_load_n(&signals_sent, __ATOMIC_RELAXED);
}

/* ---- Interrupts (SIGINT, SIGTERM) ---------------------------------------------------- */

/* [-0, +0, -] Async-signal-safe: records `sig` (the first one wins) and sends the watchdog's
 * signal to every thread running an entry of a watched state (every state is watched), whose
 * handler then makes its next instruction run the hook, which raises the interrupt. */
static void luahier_stopall(int sig) {
    if (!luahier_interrupt_signal) {
        luahier_interrupt_generation++;
        luahier_interrupt_signal = sig;
    }
    /* Pairs with luahier_beginentry's fence: an entry published after this scan sees the flag. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 1) return;
    int signal_number = SIGRTMIN + LUAHIER_WATCHDOG_SIGNAL_OFFSET;
    pid_t pid = getpid();
    int used = __atomic_load_n(&cells_used, __ATOMIC_ACQUIRE);
    for (int i = 0; i < used; i++) {
        long tid = __atomic_load_n(&cells[i].tid, __ATOMIC_ACQUIRE);
        if (tid == 0 || __atomic_exchange_n(&cells[i].pending, 1, __ATOMIC_ACQ_REL)) continue;
        if (syscall(SYS_tgkill, pid, tid, signal_number) != 0) __atomic_store_n(&cells[i].pending, 0, __ATOMIC_RELEASE);
    }
}

static void luahier_interrupthandler(int sig) {
    int saved_errno = errno;
    /* A second signal ends the process the default way (lua.c does the same): the way out
     * when something other than Lua code is stuck. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (sig == SIGHUP) signal(SIGHUP, SIG_DFL);
    luahier_stopall(sig);
    errno = saved_errno;
}

/* Installs the handler for `sig` unless the process was started with it ignored (a
 * background job, nohup): that choice is kept. Unblocks it in the calling thread: a process
 * can start with it blocked (a parent's worker thread spawned it, and exec keeps the mask);
 * threads started from now on inherit that. No SA_RESTART: a read that waits (a script on
 * stdin, the input of `dispatch`) returns EINTR, so the signal is seen at once. */
static int luahier_installstop(int sig) {
    return luahier_installhandler(sig, luahier_interrupthandler, 0, 1);
}

int luahier_interrupt_install(void) {
    return luahier_installstop(SIGINT) == 0 && luahier_installstop(SIGTERM) == 0 ? 0 : -1;
}

int luahier_interrupt_install_hangup(void) {
    return luahier_installstop(SIGHUP);
}

void luahier_interrupt_block(void) {
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stops, NULL);
}

void luahier_interrupt_request(int sig) {
    luahier_stopall(sig);
}

int luahier_interrupt_pending(void) {
    return luahier_interrupt_signal;
}

void luahier_interrupt_reset(void) {
    luahier_interrupt_signal = 0;
}

/* ---- A script on stdin, read until an interrupt ---------------------------------------- */

/* The first bytes of fd 0, read to tell a bundle from a script and given back
 * (luahier_unreadstdin): the next read of stdin here hands them out first. */
static struct {
    char bytes[LUAHIER_STDIN_AHEAD];
    size_t count;
    int ended;   /* the read met the end of input: no read of fd 0 follows them */
} luahier_stdinahead;

void luahier_unreadstdin(const void *bytes, size_t count, int ended) {
    if (count > sizeof luahier_stdinahead.bytes) count = sizeof luahier_stdinahead.bytes;
    memcpy(luahier_stdinahead.bytes, bytes, count);
    luahier_stdinahead.count = count;
    luahier_stdinahead.ended = ended;
}

ssize_t luahier_readstdin(void *buffer, size_t size) {
    if (luahier_stdinahead.count > 0 && size > 0) {
        size_t count = luahier_stdinahead.count < size ? luahier_stdinahead.count : size;
        memcpy(buffer, luahier_stdinahead.bytes, count);
        memmove(luahier_stdinahead.bytes, luahier_stdinahead.bytes + count, luahier_stdinahead.count - count);
        luahier_stdinahead.count -= count;
        return (ssize_t)count;
    }
    if (luahier_stdinahead.ended) {
        luahier_stdinahead.ended = 0;
        return 0;
    }
    return read(0, buffer, size);
}

typedef struct luahier_StdinReader {
    char buffer[4096];
    int started;
    int inshebang;   /* within a first line that starts with '#' */
    int failed;      /* errno of a failed read (EINTR: an interrupt) */
} luahier_StdinReader;

/* lua_Reader over fd 0. lua.c's loader (stdio's fread) retries a read an interrupt cut
 * short and waits on; this one stops there. A first line starting with '#' (a shebang) is
 * left out, its newline kept, as luaL_loadfilex does, however many reads it takes. */
static const char *luahier_stdinchunk(lua_State *L, void *data, size_t *size) {
    (void)L;
    luahier_StdinReader *reader = (luahier_StdinReader *)data;
    for (;;) {
        ssize_t count = luahier_readstdin(reader->buffer, sizeof reader->buffer);
        if (count < 0 && errno == EINTR && !luahier_interrupt_signal) continue;
        if (count <= 0) {
            if (count < 0) reader->failed = errno;
            *size = 0;
            return NULL;
        }
        const char *start = reader->buffer;
        if (!reader->started) {
            reader->started = 1;
            reader->inshebang = reader->buffer[0] == '#';
        }
        if (reader->inshebang) {
            const char *newline = memchr(reader->buffer, '\n', (size_t)count);
            if (newline == NULL) continue;
            reader->inshebang = 0;
            start = newline;
        }
        *size = (size_t)(reader->buffer + count - start);
        return start;
    }
}

int luahier_loadstdin(lua_State *L, const char *mode) {
    luahier_StdinReader reader;
    reader.started = 0;
    reader.inshebang = 0;
    reader.failed = 0;
    int status = lua_load(L, luahier_stdinchunk, &reader, "=stdin", mode);
    /* A signal and the end of input can race (a parent that signals, then closes the pipe):
     * a read the signal ended, or not, what was read is not the whole script. */
    if (!reader.failed && luahier_interrupt_signal) reader.failed = EINTR;
    if (reader.failed) {
        lua_pop(L, 1);   /* the chunk of what was read, or the error it gave */
        lua_pushfstring(L, "cannot read stdin: %s", strerror(reader.failed));
        return LUA_ERRFILE;
    }
    return status;
}
