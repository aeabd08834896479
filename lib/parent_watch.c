#include "parent_watch.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

static pid_t watched;
static int watched_fd = -1;

static int alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

static void *watch_main(void *arg)
{
	struct pollfd p = { .fd = watched_fd, .events = POLLIN };
	(void)arg;
	if (watched_fd >= 0)
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	else
		while (alive(watched))
			sleep(1);
	kill(getpid(), SIGTERM);
	return NULL;
}

int mtc_parent_watch(long pid, char *err, size_t errlen)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;
	int rc;

	if (pid <= 0 || pid != (pid_t)pid)
		return mtc_fail(err, errlen, "'%ld' is not a process id", pid);
	watched = (pid_t)pid;
#ifdef SYS_pidfd_open
	watched_fd = (int)syscall(SYS_pidfd_open, watched, 0);
	if (watched_fd < 0 && errno == ESRCH) {
		kill(getpid(), SIGTERM);
		return 0;
	}
#endif
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	rc = pthread_create(&t, &a, watch_main, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return mtc_fail(err, errlen, "cannot watch process %ld: %s", pid, strerror(rc));
	return 0;
}
