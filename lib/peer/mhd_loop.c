#include "mhd_loop.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xalloc.h"

/* A connection handed over by another thread, for the loop's thread to add. */
struct handed {
	struct handed *next;
	int fd;
	socklen_t salen;
	struct sockaddr_storage sa;
};

struct mtc_mhd_loop {
	struct MHD_Daemon *d;
	int pause_ms;
	int ep;	  /* waits on the daemon's epoll descriptor and on wake */
	int wake; /* an eventfd: something was handed over, or stop */
	pthread_t thread;
	pthread_mutex_t mu; /* guards the rest */
	struct handed *handed;
	int stop;
};

static int wait_ms(struct MHD_Daemon *d)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (MHD_get_timeout(d, &ms) != MHD_YES)
		return -1;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Takes what was handed over; 1 when the loop is to stop. */
static int take_handed(struct mtc_mhd_loop *l, struct handed **out)
{
	uint64_t n;
	int stop;

	if (read(l->wake, &n, sizeof n) < 0)
		mtc_debug("mhd loop: reading its eventfd: %s", strerror(errno));
	pthread_mutex_lock(&l->mu);
	*out = l->handed;
	l->handed = NULL;
	stop = l->stop;
	pthread_mutex_unlock(&l->mu);
	return stop;
}

static void *loop_main(void *arg)
{
	struct mtc_mhd_loop *l = arg;
	const struct timespec pause = { l->pause_ms / 1000, (l->pause_ms % 1000) * 1000000L };

	for (;;) {
		struct epoll_event ev[2];
		struct handed *h = NULL;
		int n = epoll_wait(l->ep, ev, 2, wait_ms(l->d)), stop = 0;

		if (n < 0 && errno != EINTR)
			mtc_debug("mhd loop: epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == l->wake)
				stop = take_handed(l, &h);
		while (h) {
			struct handed *next = h->next;
			if (stop)
				close(h->fd);
			else
				MHD_add_connection(l->d, h->fd, (struct sockaddr *)&h->sa, h->salen);
			free(h);
			h = next;
		}
		if (stop)
			return NULL;
		MHD_run(l->d);
		if (wait_ms(l->d) != 0) /* else a connection has more to do at once (a long body) */
			nanosleep(&pause, NULL);
	}
}

struct mtc_mhd_loop *mtc_mhd_loop_start(struct MHD_Daemon *d, int pause_ms, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
	struct epoll_event daemon_ev = { .events = EPOLLIN }, wake_ev = { .events = EPOLLIN };
	struct mtc_mhd_loop *l;

	if (!info) {
		mtc_fail(err, errlen, "cannot start a server loop: the daemon has no epoll descriptor");
		return NULL;
	}
	l = xcalloc(1, sizeof *l);
	l->d = d;
	l->pause_ms = pause_ms;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	l->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	daemon_ev.data.fd = info->epoll_fd;
	wake_ev.data.fd = l->wake;
	pthread_mutex_init(&l->mu, NULL);
	if (l->ep < 0 || l->wake < 0 || epoll_ctl(l->ep, EPOLL_CTL_ADD, info->epoll_fd, &daemon_ev) ||
	    epoll_ctl(l->ep, EPOLL_CTL_ADD, l->wake, &wake_ev) ||
	    (errno = pthread_create(&l->thread, NULL, loop_main, l))) {
		mtc_fail(err, errlen, "cannot start a server loop: %s", strerror(errno));
		if (l->ep >= 0)
			close(l->ep);
		if (l->wake >= 0)
			close(l->wake);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return NULL;
	}
	return l;
}

static void wake(struct mtc_mhd_loop *l)
{
	uint64_t one = 1;

	if (write(l->wake, &one, sizeof one) < 0)
		mtc_debug("mhd loop: writing its eventfd: %s", strerror(errno));
}

void mtc_mhd_loop_add(struct mtc_mhd_loop *l, int fd, const struct sockaddr *sa, socklen_t salen)
{
	struct handed *h;

	if (salen > sizeof h->sa) {
		close(fd);
		return;
	}
	h = xcalloc(1, sizeof *h);
	h->fd = fd;
	h->salen = salen;
	memcpy(&h->sa, sa, salen);
	pthread_mutex_lock(&l->mu);
	h->next = l->handed;
	l->handed = h;
	pthread_mutex_unlock(&l->mu);
	wake(l);
}

void mtc_mhd_loop_resume(struct mtc_mhd_loop *l, struct MHD_Connection *c)
{
	MHD_resume_connection(c);
	wake(l);
}

void mtc_mhd_loop_stop(struct mtc_mhd_loop *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_mutex_unlock(&l->mu);
	wake(l);
	pthread_join(l->thread, NULL);
	MHD_stop_daemon(l->d);
	close(l->ep);
	close(l->wake);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
