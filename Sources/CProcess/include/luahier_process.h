/* Process-wide settings without Lua (process.c), made once by an executable at its start,
 * before it starts a thread: the library itself never changes them (they are the process's,
 * not an embedded engine's). */
#ifndef LUAHIER_PROCESS_H
#define LUAHIER_PROCESS_H

/* Has glibc's malloc keep up to 4 MiB freed at the top of a heap and grow a heap 1 MiB past
 * what is asked, rather than give freed memory back to the kernel at 128 KiB. 1 if the C
 * library took the settings, 0 if it has no such settings (not glibc) or refused them. */
int luahier_process_keepfreedmemory(void);

#endif
