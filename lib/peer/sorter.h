#ifndef MTC_SORTER_H
#define MTC_SORTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>

/*
 * One listening port, two HTTP servers (mtc(7) §5.6): the sorter accepts
 * each connection, waits for its first bytes without reading them (a peek)
 * and hands it to one server when they begin with prefix, to the other as
 * soon as they cannot. The coordinator's long polls go to a server that
 * holds a waiting request without a thread; the peers' transfers stay with
 * the one that gives each connection its own.
 *
 * Waiting connections are bounded like unauthenticated ones (peer_server.c):
 * beyond max_pending the oldest is cut (mtc_guard_cuts: not within its first
 * second while there are at most twice as many), and one that sends nothing
 * for timeout_s is closed.
 */
struct mtc_sorter_opts {
	int listen_fd;	    /* bound and listening; the sorter owns it */
	const char *prefix; /* at most 64 bytes; copied */
	int max_pending;    /* 0: no limit */
	double timeout_s;
	/* Takes fd for a client at sa: matched says whether its first bytes are prefix. */
	void (*hand_over)(void *cls, int matched, int fd, const struct sockaddr *sa, socklen_t salen);
	void *cls;
	atomic_llong *cut_pending, *cut_timeout; /* counted here when given */
};

struct mtc_sorter;

/* Starts accepting; NULL with err. */
struct mtc_sorter *mtc_sorter_start(const struct mtc_sorter_opts *o, char *err, size_t errlen);
/* Stops accepting, closes what waits and the listening socket; frees f. */
void mtc_sorter_stop(struct mtc_sorter *f);

#endif
