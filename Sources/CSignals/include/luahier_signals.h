/* Signal handlers, without Lua (signals.c): installing one (the watchdog's interrupts use it
 * too), and the flags of a long-running service (`luahier serve`, `dispatch --watch`): SIGHUP
 * asks for a reload; for `serve`, SIGTERM and SIGINT ask for a graceful shutdown, which running
 * scripts must not see (unlike luahier_interrupt_install's, these handlers stop nothing).
 * Depends on nothing of the project: CLuaHost's watchdog and the Swift ServiceSignals use it. */
#ifndef LUAHIER_SIGNALS_H
#define LUAHIER_SIGNALS_H

/* Installs `handler` for `sig` with sigaction `flags` (SA_RESTART or 0) and unblocks `sig`
 * in the calling thread. With `keep_ignored`, a signal the process started with ignored
 * (nohup, a background job) stays ignored. 0, or -1 on failure. */
int luahier_installhandler(int sig, void (*handler)(int), int flags, int keep_ignored);

/* SIGHUP sets a flag luahier_service_takehangup reads and clears (a reload request); the
 * calling thread unblocks it. 0, or -1 on failure. */
int luahier_service_handlehangup(void);
/* SIGTERM and SIGINT set the stop flag (a graceful shutdown, no script is stopped); a second
 * one ends the process the default way. The calling thread unblocks them. */
int luahier_service_handlestops(void);
/* 1 if SIGHUP came since the last call (and clears it), else 0. */
int luahier_service_takehangup(void);
/* The first SIGTERM or SIGINT since luahier_service_handlestops, 0 while none came. */
int luahier_service_stopsignal(void);
/* With `on`, the second SIGTERM or SIGINT sets the repeated flag (ending a shutdown delay)
 * instead of ending the process, once; with 0 (the default), it ends the process. */
void luahier_service_deferrepeatedstop(int on);
/* 1 once a second SIGTERM or SIGINT came while deferred, else 0. */
int luahier_service_stoprepeated(void);

#endif
