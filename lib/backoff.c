/* The one retry policy (see backoff.h). */
#include "backoff.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

static const struct mtc_backoff policy[] = {
	[MTC_BACKOFF_STORE] = { 0.1, 10.0 },   [MTC_BACKOFF_PEER] = { 0.2, 6.4 },
	[MTC_BACKOFF_COORD] = { 0.2, 3.2 },    [MTC_BACKOFF_TOKEN] = { 0.2, 1.6 },
	[MTC_BACKOFF_METADATA] = { 0.1, 3.2 }, [MTC_BACKOFF_CONTAINER] = { 0.1, 1.0 },
};

const struct mtc_backoff *mtc_backoff_of(enum mtc_backoff_kind kind) { return &policy[kind]; }

void mtc_retry_init(struct mtc_retry *r, enum mtc_backoff_kind kind, double deadline)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	*r = (struct mtc_retry){ .base = policy[kind].base,
				 .cap = policy[kind].cap,
				 .deadline = deadline,
				 .seed = (unsigned)ts.tv_nsec ^ (unsigned)getpid() ^
					 (unsigned)(size_t)pthread_self() };
}

double mtc_backoff(int attempt, double base, double cap, unsigned *seed)
{
	double bound = base * (double)(1LL << (attempt < 20 ? attempt : 20));

	if (bound > cap)
		bound = cap;
	return bound * ((double)rand_r(seed) / ((double)RAND_MAX + 1.0));
}

static int sleep_before(struct mtc_retry *r, double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	if (mtc_now() + s > r->deadline)
		return -1;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return 0;
}

int mtc_retry_wait(struct mtc_retry *r)
{
	if (sleep_before(r, mtc_backoff(r->attempt, r->base, r->cap, &r->seed)) < 0)
		return -1;
	r->attempt++;
	return 0;
}

#define REFUSED_WAIT_S 0.05

int mtc_retry_wait_refused(struct mtc_retry *r)
{
	if (!r->refused)
		r->refused = mtc_now();
	if (mtc_now() - r->refused >= MTC_RETRY_REFUSED_S)
		return mtc_retry_wait(r);
	return sleep_before(r, mtc_backoff(0, REFUSED_WAIT_S, REFUSED_WAIT_S, &r->seed));
}
