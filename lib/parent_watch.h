#ifndef MTC_PARENT_WATCH_H
#define MTC_PARENT_WATCH_H

#include <stddef.h>

/*
 * No orphans (mtc(7) §9.7): a program ends, as on SIGTERM, when the process
 * pid ends; a script's daemon names the script (or what it execs into, which
 * keeps its pid). A thread that blocks every signal waits for pid (pidfd,
 * else a poll every second) and sends SIGTERM to this process, so the
 * program's own SIGTERM path runs. A pid already gone: SIGTERM at once. 0,
 * or -1 with a one-line reason.
 */
int mtc_parent_watch(long pid, char *err, size_t errlen);

#endif
