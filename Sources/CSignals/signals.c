/* Signal handlers without Lua (luahier_signals.h): installing one, and the flags of a
 * long-running service (`luahier serve`, `dispatch --watch`). SIGHUP asks for a reload; for `serve`, SIGTERM and SIGINT ask for a graceful shutdown, which running
 * scripts must not see (unlike luahier_interrupt_install's, these handlers stop nothing).
 * The handlers only set flags, which a thread of the host polls; a second SIGTERM or SIGINT
 * while a shutdown is under way ends the process the default way (once deferred, it ends a
 * shutdown delay instead). */
#include "luahier_signals.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

int luahier_installhandler(int sig, void (*handler)(int), int flags, int keep_ignored) {
    if (keep_ignored) {
        struct sigaction existing;
        if (sigaction(sig, NULL, &existing) != 0) return -1;
        if (!(existing.sa_flags & SA_SIGINFO) && existing.sa_handler == SIG_IGN) return 0;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    if (sigaction(sig, &action, NULL) != 0) return -1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    return pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0 ? 0 : -1;
}

/* ---- A service's flags --------------------------------------------------------------------- */

static volatile sig_atomic_t luahier_hangups;
static volatile sig_atomic_t luahier_stop_signal;
/* While set, the second stop signal ends a shutdown delay (and clears this) instead of the
 * process; the next one ends the process. */
static volatile sig_atomic_t luahier_stop_deferred;
static volatile sig_atomic_t luahier_stop_repeated;

static void luahier_onhangup(int sig) {
    (void)sig;
    luahier_hangups = 1;
}

static void luahier_onstop(int sig) {
    if (luahier_stop_signal) {
        if (luahier_stop_deferred) {
            luahier_stop_deferred = 0;
            luahier_stop_repeated = 1;
            return;
        }
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    luahier_stop_signal = sig;
}

/* SA_RESTART: a service's reads and writes go on; only the flag matters. A SIGHUP the
 * process started with ignored (nohup) is handled all the same: for a service it means
 * reload, which is what its operator asks for with it. */
static int luahier_handle(int sig, void (*handler)(int)) {
    return luahier_installhandler(sig, handler, SA_RESTART, 0);
}

int luahier_service_handlehangup(void) {
    return luahier_handle(SIGHUP, luahier_onhangup);
}

int luahier_service_handlestops(void) {
    return luahier_handle(SIGTERM, luahier_onstop) == 0 && luahier_handle(SIGINT, luahier_onstop) == 0 ? 0 : -1;
}

int luahier_service_takehangup(void) {
    if (!luahier_hangups) return 0;
    luahier_hangups = 0;
    return 1;
}

int luahier_service_stopsignal(void) {
    return luahier_stop_signal;
}

void luahier_service_deferrepeatedstop(int on) {
    luahier_stop_deferred = on ? 1 : 0;
}

int luahier_service_stoprepeated(void) {
    return luahier_stop_repeated;
}
