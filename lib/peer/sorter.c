/*
 * The sorter (sorter.h). Invariant: a connection is either in the pending
 * list and the epoll set, or handed over, or closed; only the sorter's
 * thread touches either.
 */
#include "sorter.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "tls_front.h"
#include "xalloc.h"

#define PREFIX_MAX 64

struct pending {
	TAILQ_ENTRY(pending) link;
	int fd;
	double since;
	struct sockaddr_storage sa;
	socklen_t salen;
};

struct mtc_sorter {
	struct mtc_sorter_opts o;
	char prefix[PREFIX_MAX + 1]; /* o.prefix, copied: the caller's may go */
	size_t prefix_len;
	int ep, stop_fd;
	pthread_t thread;
	TAILQ_HEAD(, pending) pending; /* oldest first */
	int n;
};

/* epoll tags for the two fds that are not pending connections */
static char listen_tag, stop_tag;

static void count(atomic_llong *c)
{
	if (c)
		atomic_fetch_add(c, 1);
}

static void unlink_pending(struct mtc_sorter *f, struct pending *p)
{
	TAILQ_REMOVE(&f->pending, p, link);
	f->n--;
	epoll_ctl(f->ep, EPOLL_CTL_DEL, p->fd, NULL);
}

static void drop(struct mtc_sorter *f, struct pending *p)
{
	unlink_pending(f, p);
	close(p->fd);
	free(p);
}

static void hand(struct mtc_sorter *f, struct pending *p, int matched)
{
	unlink_pending(f, p);
	f->o.hand_over(f->o.cls, matched, p->fd, (struct sockaddr *)&p->sa, p->salen);
	free(p);
}

/* Hands p over once its first bytes say where it goes; closes it at its end. */
static void sort(struct mtc_sorter *f, struct pending *p)
{
	char buf[PREFIX_MAX];
	ssize_t n = recv(p->fd, buf, f->prefix_len, MSG_PEEK | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0)
		drop(f, p);
	else if (memcmp(buf, f->prefix, (size_t)n))
		hand(f, p, 0);
	else if ((size_t)n == f->prefix_len)
		hand(f, p, 1);
	/* else a part of the prefix: the next bytes raise another edge */
}

static void accept_all(struct mtc_sorter *f)
{
	for (;;) {
		struct pending *p = xcalloc(1, sizeof *p);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };

		p->salen = sizeof p->sa;
		p->fd = accept4(f->o.listen_fd, (struct sockaddr *)&p->sa, &p->salen,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			free(p);
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				nanosleep(&(struct timespec){ 0, 10000000L }, NULL); /* let some close */
			return;
		}
		p->since = mtc_now();
		ev.data.ptr = p;
		if (epoll_ctl(f->ep, EPOLL_CTL_ADD, p->fd, &ev) < 0) {
			close(p->fd);
			free(p);
			continue;
		}
		TAILQ_INSERT_TAIL(&f->pending, p, link);
		f->n++;
		struct pending *oldest = TAILQ_FIRST(&f->pending);
		if (f->o.max_pending > 0 && f->n > f->o.max_pending &&
		    mtc_guard_cuts(p->since - oldest->since, f->n, f->o.max_pending)) {
			count(f->o.cut_pending);
			drop(f, oldest);
		}
	}
}

static void *sort_main(void *arg)
{
	struct mtc_sorter *f = arg;
	struct epoll_event evs[64];

	for (;;) {
		double now = mtc_now(), wait = 1.0;
		struct pending *oldest;
		int n;

		while ((oldest = TAILQ_FIRST(&f->pending)) && now - oldest->since >= f->o.timeout_s) {
			count(f->o.cut_timeout);
			drop(f, oldest);
		}
		if (oldest && oldest->since + f->o.timeout_s - now < wait)
			wait = oldest->since + f->o.timeout_s - now;
		n = epoll_wait(f->ep, evs, 64, (int)(wait * 1000) + 1);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &stop_tag)
				return NULL;
			if (evs[i].data.ptr == &listen_tag)
				accept_all(f);
			else
				sort(f, evs[i].data.ptr);
		}
	}
}

struct mtc_sorter *mtc_sorter_start(const struct mtc_sorter_opts *o, char *err, size_t errlen)
{
	struct mtc_sorter *f = xcalloc(1, sizeof *f);
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &listen_tag },
			   sev = { .events = EPOLLIN, .data.ptr = &stop_tag };

	f->o = *o;
	TAILQ_INIT(&f->pending);
	f->prefix_len = strlen(o->prefix);
	if (f->prefix_len <= PREFIX_MAX)
		memcpy(f->prefix, o->prefix, f->prefix_len + 1);
	f->ep = epoll_create1(EPOLL_CLOEXEC);
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fcntl(o->listen_fd, F_SETFL, fcntl(o->listen_fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    f->prefix_len == 0 || f->prefix_len > PREFIX_MAX || f->ep < 0 || f->stop_fd < 0 ||
	    epoll_ctl(f->ep, EPOLL_CTL_ADD, o->listen_fd, &lev) < 0 ||
	    epoll_ctl(f->ep, EPOLL_CTL_ADD, f->stop_fd, &sev) < 0 ||
	    pthread_create(&f->thread, NULL, sort_main, f)) {
		mtc_fail(err, errlen, "cannot start accepting connections: %s",
			 errno ? strerror(errno) : "bad prefix");
		if (f->ep >= 0)
			close(f->ep);
		if (f->stop_fd >= 0)
			close(f->stop_fd);
		free(f);
		return NULL;
	}
	return f;
}

void mtc_sorter_stop(struct mtc_sorter *f)
{
	uint64_t one = 1;

	if (!f)
		return;
	/* an eventfd write fails only when the counter is full: it is signalled then */
	(void)!write(f->stop_fd, &one, sizeof one);
	pthread_join(f->thread, NULL);
	while (!TAILQ_EMPTY(&f->pending))
		drop(f, TAILQ_FIRST(&f->pending));
	close(f->o.listen_fd);
	close(f->stop_fd);
	close(f->ep);
	free(f);
}
