#include "progress.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "threads.h"
#include "units.h"
#include "xalloc.h"

#define FIRST_DRAW_S 1.0
#define REDRAW_S 0.25

struct mtc_progress {
	long long total, already, done;
	double start, last_draw;
	int on, drawn;
	const char *label;
	/* mtc_progress_follow: the count its thread reads until stop */
	atomic_llong *bytes;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int following, stop;
};

struct mtc_progress *mtc_progress_new(long long total, long long already, int wanted)
{
	struct mtc_progress *p = xcalloc(1, sizeof *p);

	p->total = total;
	p->already = already;
	p->start = mtc_now();
	p->on = wanted && isatty(2);
	return p;
}

static void format_eta(char *out, size_t len, double secs)
{
	long s = (long)(secs + 0.5);

	if (secs < 0 || secs > 360000)
		snprintf(out, len, "--:--");
	else if (s >= 3600)
		snprintf(out, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(out, len, "%ld:%02ld", s / 60, s % 60);
}

static void draw(struct mtc_progress *p, double now)
{
	double secs = now - p->start, rate = secs > 0 ? p->done / secs : 0;
	long long have = p->already + p->done;
	char got[32], total[32], speed[32], eta[32];

	mtc_size_text(got, sizeof got, (double)have);
	mtc_size_text(speed, sizeof speed, rate);
	if (p->total > 0) {
		mtc_size_text(total, sizeof total, (double)p->total);
		format_eta(eta, sizeof eta, rate > 0 ? (p->total - have) / rate : -1);
		fprintf(stderr, "\r%s: %s%s%s / %s (%.0f%%)  %s/s  ETA %s\033[K", mtc_prog(),
			p->label ? p->label : "", p->label ? " " : "", got, total,
			100.0 * (have < p->total ? have : p->total) / p->total, speed, eta);
	} else {
		fprintf(stderr, "\r%s: %s%s%s  %s/s\033[K", mtc_prog(), p->label ? p->label : "",
			p->label ? " " : "", got, speed);
	}
	fflush(stderr);
	mtc_log_progress_drawn(1);
	p->drawn = 1;
	p->last_draw = now;
}

void mtc_progress_update(struct mtc_progress *p, long long done)
{
	double now;

	if (!p)
		return;
	p->done = done;
	if (!p->on)
		return;
	now = mtc_now();
	if (now - p->start < FIRST_DRAW_S || now - p->last_draw < REDRAW_S)
		return;
	draw(p, now);
}

void mtc_progress_store(void *arg, long long done, long long total)
{
	struct mtc_progress *p = arg;

	if (p && p->total <= 0 && total > 0)
		p->total = total;
	mtc_progress_update(p, done);
}

static void *follow(void *arg)
{
	struct mtc_progress *p = arg;
	struct timespec until;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)(REDRAW_S * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->wake, &p->lock, &until);
		if (!p->stop)
			mtc_progress_update(p, atomic_load(p->bytes));
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct mtc_progress *mtc_progress_follow(const char *label, long long total, atomic_llong *bytes,
					 int wanted)
{
	struct mtc_progress *p = mtc_progress_new(total, 0, wanted);

	p->label = label;
	p->bytes = bytes;
	if (!p->on)
		return p;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->following = pthread_create(&p->thread, NULL, follow, p) == 0;
	if (!p->following) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
	}
	return p;
}

void mtc_progress_end(struct mtc_progress *p)
{
	if (!p)
		return;
	if (p->following) {
		mtc_thread_stop(p->thread, &p->lock, &p->wake, &p->stop);
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
	}
	if (p->bytes)
		p->done = atomic_load(p->bytes);
	if (p->on && !p->drawn && mtc_now() - p->start >= FIRST_DRAW_S)
		p->drawn = 1; /* longer than the first second: its last state is shown */
	if (p->drawn) {
		draw(p, mtc_now());
		fputc('\n', stderr);
		mtc_log_progress_drawn(0);
	}
	free(p);
}
