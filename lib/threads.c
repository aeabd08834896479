#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu_count.h"
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

int mtc_spare_cpu(const char *loadavg, int cpus)
{
	int running, total;
	/* "0.52 0.58 0.59 3/410 12345": 3 runnable now, the reader among them */
	if (sscanf(loadavg, "%*s %*s %*s %d/%d", &running, &total) != 2 || running < 1)
		return -1;
	return running - 1 < cpus;
}

int mtc_spare_cpu_wait(double max_s, int (*give_up)(void *), void *arg)
{
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	int cpus = mtc_cpu_count(), rc = 1;
	double end = mtc_now() + max_s;
	char text[128];

	while (fd >= 0) {
		ssize_t n = pread(fd, text, sizeof text - 1, 0);
		if (n <= 0)
			break;
		text[n] = 0;
		if (mtc_spare_cpu(text, cpus) != 0)
			break;
		if ((give_up && give_up(arg)) || mtc_now() >= end) {
			rc = 0;
			break;
		}
		nanosleep(&(struct timespec){ 0, (long)(MTC_SPARE_CPU_POLL_S * 1e9) }, NULL);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

struct bg_job {
	void (*fn)(void *);
	void *arg;
	int done;
	pthread_cond_t cv;
	struct bg_job *next;
};

struct mtc_bg_pool {
	enum mtc_background b;
	pthread_mutex_t mu;
	pthread_cond_t work;
	struct bg_job *head, **tail;
	pthread_t *threads;
	int n, started, waiting, queued, stop; /* waiting: started threads without a job */
};

static void *bg_main(void *arg)
{
	struct mtc_bg_pool *p = arg;
	struct bg_job *j;

	pthread_setname_np(pthread_self(), "mtc-bg");
	mtc_background_enter(p->b); /* else it works at normal priority: no worse than without a pool */
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (!p->head)
			break;
		j = p->head;
		if (!(p->head = j->next))
			p->tail = &p->head;
		p->queued--;
		p->waiting--;
		pthread_mutex_unlock(&p->mu);
		j->fn(j->arg);
		pthread_mutex_lock(&p->mu);
		p->waiting++;
		j->done = 1; /* j is the caller's: not touched once the lock is given up */
		pthread_cond_signal(&j->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct mtc_bg_pool *mtc_bg_pool_new(enum mtc_background b, int n)
{
	struct mtc_bg_pool *p;

	if (b == MTC_BG_NORMAL)
		return NULL;
	p = xcalloc(1, sizeof *p);
	p->b = b;
	p->n = n > 0 ? n : 1;
	p->threads = xcalloc((size_t)p->n, sizeof *p->threads);
	p->tail = &p->head;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	return p;
}

void mtc_bg_pool_free(struct mtc_bg_pool *p)
{
	if (!p)
		return;
	mtc_cond_set(&p->mu, &p->work, &p->stop, 1);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
}

void mtc_bg_call(struct mtc_bg_pool *p, void (*fn)(void *), void *arg)
{
	struct bg_job j = { .fn = fn, .arg = arg };

	if (!p) {
		fn(arg);
		return;
	}
	pthread_cond_init(&j.cv, NULL);
	pthread_mutex_lock(&p->mu);
	/* a thread more when none would be free for this job, up to n, started by a normal-priority caller */
	if (p->queued >= p->waiting && p->started < p->n &&
	    !pthread_create(&p->threads[p->started], NULL, bg_main, p)) {
		p->started++;
		p->waiting++;
	}
	if (!p->started) {
		pthread_mutex_unlock(&p->mu);
		pthread_cond_destroy(&j.cv);
		fn(arg);
		return;
	}
	*p->tail = &j;
	p->tail = &j.next;
	p->queued++;
	pthread_cond_signal(&p->work);
	/* unbounded, but so is no CPU class's share: the idle class too gets a few thousandths of a CPU */
	while (!j.done)
		pthread_cond_wait(&j.cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_cond_destroy(&j.cv);
}
