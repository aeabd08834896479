#ifndef MTC_MHD_LOOP_H
#define MTC_MHD_LOOP_H

#include <stddef.h>
#include <sys/socket.h>

struct MHD_Connection;
struct MHD_Daemon;
struct mtc_mhd_loop;

/*
 * Runs d, started with MHD_USE_EPOLL and without a thread of its own, in a
 * thread that serves everything ready in one pass and then rests pause_ms
 * before it looks again, unless a connection has more to do at once (a long
 * body): requests that arrive within that time are served together, for one
 * wakeup. A loop that started owns d; NULL with err, d left to the caller.
 */
struct mtc_mhd_loop *mtc_mhd_loop_start(struct MHD_Daemon *d, int pause_ms, char *err, size_t errlen);
/* Hands a connection to the daemon, from any thread; it is closed if the daemon cannot take it. */
void mtc_mhd_loop_add(struct mtc_mhd_loop *l, int fd, const struct sockaddr *sa, socklen_t salen);
/*
 * Resumes a suspended connection of the daemon, from any thread, and wakes the
 * loop: libmicrohttpd resumes connections at the start of a pass and may then
 * take its own signal for a resume that came later, which would leave the
 * connection waiting for the next request.
 */
void mtc_mhd_loop_resume(struct mtc_mhd_loop *l, struct MHD_Connection *c);
/* Stops the thread and then the daemon. */
void mtc_mhd_loop_stop(struct mtc_mhd_loop *l);

#endif
