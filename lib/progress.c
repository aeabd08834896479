#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"
#include "xalloc.h"

#define FIRST_DRAW_S 1.0
#define REDRAW_S 0.25

struct mtc_progress {
	long long total, already, done;
	double start, last_draw;
	int on, drawn;
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
		fprintf(stderr, "\r%s: %s / %s (%.0f%%)  %s/s  ETA %s\033[K", mtc_prog(), got, total,
			100.0 * (have < p->total ? have : p->total) / p->total, speed, eta);
	} else {
		fprintf(stderr, "\r%s: %s  %s/s\033[K", mtc_prog(), got, speed);
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

void mtc_progress_end(struct mtc_progress *p)
{
	if (!p)
		return;
	if (p->drawn) {
		draw(p, mtc_now());
		fputc('\n', stderr);
		mtc_log_progress_drawn(0);
	}
	free(p);
}
