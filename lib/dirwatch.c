#include "dirwatch.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "xalloc.h"

#define EVENTS (IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY)

int mtc_dirwatch_open(struct mtc_dirwatch *w, const char *dir)
{
	w->dir = xstrdup(dir);
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0 || inotify_add_watch(w->fd, dir, EVENTS | IN_ONLYDIR) < 0) {
		int e = errno;
		mtc_dirwatch_close(w);
		errno = e;
		return -1;
	}
	return 0;
}

void mtc_dirwatch_close(struct mtc_dirwatch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->dir);
	w->dir = NULL;
}

double mtc_deadline(double timeout_s) { return timeout_s < 0 ? -1 : mtc_now() + timeout_s; }

int mtc_dirwatch_wait(struct mtc_dirwatch *w, double deadline, int poll_ms, const char *name,
		      uint32_t *mask)
{
	char buf[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
	int ms = poll_ms, found = 0;

	if (deadline >= 0) {
		double left = deadline - mtc_now();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (left * 1000 < ms)
			ms = (int)(left * 1000) + 1;
	}
	int rc = poll(&pfd, 1, ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -1;
	if (rc == 0)
		return 0;
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof buf);
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (!found && (!name || (ev->len && !strcmp(ev->name, name)))) {
				found = 1;
				if (mask)
					*mask = ev->mask;
			} else if (found && mask && ev->len && name && !strcmp(ev->name, name)) {
				*mask |= ev->mask;
			}
			p += sizeof *ev + ev->len;
		}
	}
	return found;
}
