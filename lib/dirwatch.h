#ifndef MTC_DIRWATCH_H
#define MTC_DIRWATCH_H

#include <stdint.h>

/*
 * Waiting on one directory: inotify events wake the waiter at once, and a
 * slow poll is the safety net for filesystems that send none (NFS, FUSE).
 * Every wait takes a deadline (mtc_now() based; < 0 means none).
 */
struct mtc_dirwatch {
	int fd;
	char *dir;
};

int mtc_dirwatch_open(struct mtc_dirwatch *w, const char *dir);
void mtc_dirwatch_close(struct mtc_dirwatch *w);

/*
 * Waits until an event arrives or poll_ms pass. Returns 1 when an event named
 * name (any name if NULL) arrived, with its inotify mask in *mask; 0 when the
 * wait ended without one (poll tick or other events); -1 with errno ETIMEDOUT
 * after the deadline, or another errno on failure.
 */
int mtc_dirwatch_wait(struct mtc_dirwatch *w, double deadline, int poll_ms, const char *name,
		      uint32_t *mask);

/* A deadline timeout_s seconds from now, or -1 for none when timeout_s < 0. */
double mtc_deadline(double timeout_s);

#endif
