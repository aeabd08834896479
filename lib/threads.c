#include "threads.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "xalloc.h"

void mtc_run_threads(size_t n, void *(*fn)(void *), void *arg)
{
	pthread_t *t = xcalloc(n ? n : 1, sizeof *t);
	size_t started = 0;

	for (size_t i = 1; i < n; i++)
		if (pthread_create(&t[started], NULL, fn, arg) == 0)
			started++;
	fn(arg);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
}

void mtc_cond_set(pthread_mutex_t *lock, pthread_cond_t *cond, int *flag, int value)
{
	pthread_mutex_lock(lock);
	*flag = value;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(lock);
}

void mtc_thread_stop(pthread_t t, pthread_mutex_t *lock, pthread_cond_t *wake, int *stop)
{
	mtc_cond_set(lock, wake, stop, 1);
	pthread_join(t, NULL);
}

int mtc_background_parse(const char *name, enum mtc_background *out)
{
	static const char *const names[] = { "idle", "nice", "normal" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum mtc_background)i;
			return 0;
		}
	return -1;
}

int mtc_background_enter(enum mtc_background b)
{
	struct sched_param sp = { 0 };
	int e;

	switch (b) {
	case MTC_BG_IDLE:
		if ((e = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)) != 0) {
			errno = e;
			return -1;
		}
		return 0;
	case MTC_BG_NICE:
		/* PRIO_PROCESS with a thread id: that thread alone (Linux) */
		return setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
	case MTC_BG_NORMAL: break;
	}
	return 0;
}
