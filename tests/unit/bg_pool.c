/*
 * Background work for threads that stay at normal priority (threads.h): a
 * pool's threads run every call in the pool's class, never the caller's
 * thread, and no more of them than asked; the callers stay as they were;
 * without a pool the call runs on the caller.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tap.h"
#include "threads.h"

#define CALLERS 8
#define CALLS 200

struct probe {
	pid_t tid;
	int policy, nice;
	atomic_int *runs;
};

static void look(void *arg)
{
	struct probe *p = arg;
	p->tid = gettid();
	p->policy = sched_getscheduler(0);
	p->nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	atomic_fetch_add(p->runs, 1);
}

struct caller {
	struct mtc_bg_pool *pool;
	atomic_int *runs;
	int on_caller, wrong_class, caller_moved;
	int want_policy, want_nice;
	pid_t seen[CALLS];
};

static void *call_many(void *arg)
{
	struct caller *c = arg;
	for (int i = 0; i < CALLS; i++) {
		struct probe p = { .runs = c->runs };
		mtc_bg_call(c->pool, look, &p);
		c->seen[i] = p.tid;
		c->on_caller += p.tid == gettid();
		c->wrong_class += p.policy != c->want_policy || p.nice != c->want_nice;
	}
	c->caller_moved = sched_getscheduler(0) != SCHED_OTHER ||
			  getpriority(PRIO_PROCESS, (id_t)gettid()) != 0;
	return NULL;
}

/* CALLERS threads make CALLS calls each at once on a pool of 2 threads in class b. */
static void check_pool(enum mtc_background b, int want_policy, int want_nice, const char *name)
{
	struct mtc_bg_pool *pool = mtc_bg_pool_new(b, 2);
	struct caller c[CALLERS];
	pthread_t t[CALLERS];
	atomic_int runs = 0;
	pid_t threads[CALLERS * CALLS];
	int n = 0, on_caller = 0, wrong = 0, moved = 0;

	for (int i = 0; i < CALLERS; i++) {
		c[i] = (struct caller){
			.pool = pool, .runs = &runs, .want_policy = want_policy, .want_nice = want_nice
		};
		pthread_create(&t[i], NULL, call_many, &c[i]);
	}
	for (int i = 0; i < CALLERS; i++) {
		pthread_join(t[i], NULL);
		on_caller += c[i].on_caller;
		wrong += c[i].wrong_class;
		moved += c[i].caller_moved;
		for (int k = 0; k < CALLS; k++) {
			int j = 0;
			while (j < n && threads[j] != c[i].seen[k])
				j++;
			if (j == n)
				threads[n++] = c[i].seen[k];
		}
	}
	mtc_bg_pool_free(pool);
	is_int(runs, CALLERS * CALLS, "%s: every call ran once", name);
	is_int(on_caller, 0, "%s: none on its caller's thread", name);
	is_int(wrong, 0, "%s: every one in the class", name);
	is_int(moved, 0, "%s: the callers stay at normal priority", name);
	ok(n >= 1 && n <= 2, "%s: on the pool's 2 threads at most (%d)", name, n);
}

int main(void)
{
	atomic_int runs = 0;
	struct probe p = { .runs = &runs };

	ok(mtc_bg_pool_new(MTC_BG_NORMAL, 4) == NULL, "normal: no pool");
	mtc_bg_call(NULL, look, &p);
	ok(p.tid == gettid() && runs == 1, "no pool: the call runs on the caller");
	mtc_bg_pool_free(NULL);

	check_pool(MTC_BG_IDLE, SCHED_IDLE, 0, "idle");
	check_pool(MTC_BG_NICE, SCHED_OTHER, 19, "nice");

	/* a pool no one called starts no thread and is freed as it is */
	mtc_bg_pool_free(mtc_bg_pool_new(MTC_BG_IDLE, 4));
	ok(1, "a pool never called is freed");
	return done();
}
