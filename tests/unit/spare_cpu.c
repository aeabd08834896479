/*
 * The wait for a spare CPU (threads.h): the rule read from /proc/loadavg's
 * text, and the wait beside threads that keep every CPU wanted, which ends
 * only when the time passes or the caller gives up.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
#include "cpu_count.h"
#include "tap.h"
#include "threads.h"

static atomic_int spin_stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load(&spin_stop))
		;
	return NULL;
}

static int calls;
static int third_call(void *arg)
{
	(void)arg;
	return ++calls >= 3;
}

int main(void)
{
	is_int(mtc_spare_cpu("0.00 0.01 0.05 1/100 4242\n", 2), 1, "the reader alone runs: spare");
	is_int(mtc_spare_cpu("0.00 0.01 0.05 2/100 4242\n", 2), 1,
	       "one other thread of two CPUs: spare");
	is_int(mtc_spare_cpu("1.90 1.80 1.70 3/100 4242\n", 2), 0, "two others of two CPUs: none");
	is_int(mtc_spare_cpu("7.00 7.00 7.00 9/100 4242\n", 8), 0, "eight others of eight: none");
	is_int(mtc_spare_cpu("0.00 0.01 0.05 0/100 4242\n", 2), -1, "no runnable thread is no count");
	is_int(mtc_spare_cpu("", 2), -1, "an empty text is no count");
	is_int(mtc_spare_cpu("0.00 0.01 0.05 x/100 4242\n", 2), -1, "nor is a word");

	/* more spinning threads than CPUs: never a spare one while they run */
	int n = 2 * mtc_cpu_count() + 1;
	pthread_t t[2 * 1024 + 1];
	int started = 0;
	for (int i = 0; i < n; i++)
		started += pthread_create(&t[started], NULL, spin, NULL) == 0;
	ok(started == n, "%d spinning threads", started);
	double s = mtc_now();
	is_int(mtc_spare_cpu_wait(0.3, NULL, NULL), 0, "with every CPU wanted, the wait gives up...");
	double took = mtc_now() - s;
	ok(took >= 0.3 && took < 30, "...when its time has passed (%.3f s)", took);
	s = mtc_now();
	is_int(mtc_spare_cpu_wait(60, third_call, NULL), 0, "a caller that gives up ends the wait");
	took = mtc_now() - s;
	ok(calls == 3 && took < 30, "asked between polls: %d times, %.3f s", calls, took);
	atomic_store(&spin_stop, 1);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return done();
}
