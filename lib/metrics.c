#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xalloc.h"

void mtc_histogram_init(struct mtc_histogram *h, const double *bounds, int n)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->lock, NULL);
	h->n = n > MTC_HIST_MAX_BUCKETS ? MTC_HIST_MAX_BUCKETS : n;
	memcpy(h->bounds, bounds, (size_t)h->n * sizeof *bounds);
}

void mtc_histogram_observe(struct mtc_histogram *h, double v)
{
	int i = 0;
	while (i < h->n && v > h->bounds[i])
		i++;
	pthread_mutex_lock(&h->lock);
	h->counts[i]++;
	h->count++;
	h->sum += v;
	pthread_mutex_unlock(&h->lock);
}

void mtc_text_printf(struct mtc_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n >= 0 && t->buf && (size_t)n < t->cap - t->len)
			break;
		t->cap = (t->cap + (size_t)(n < 0 ? 0 : n) + 1) * 2;
		t->buf = xrealloc(t->buf, t->cap);
	}
	t->len += (size_t)n;
}

void mtc_metric_header(struct mtc_text *t, const char *name, const char *type, const char *help)
{
	mtc_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void mtc_metric_value(struct mtc_text *t, const char *name, const char *labels, double v)
{
	if (labels)
		mtc_text_printf(t, "%s{%s} %.17g\n", name, labels, v);
	else
		mtc_text_printf(t, "%s %.17g\n", name, v);
}

void mtc_metric_histogram(struct mtc_text *t, const char *name, const char *help,
			  struct mtc_histogram *h)
{
	unsigned long long cum = 0;

	mtc_metric_header(t, name, "histogram", help);
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < h->n; i++) {
		cum += h->counts[i];
		mtc_text_printf(t, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], cum);
	}
	mtc_text_printf(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, h->count);
	mtc_text_printf(t, "%s_sum %.17g\n%s_count %llu\n", name, h->sum, name, h->count);
	pthread_mutex_unlock(&h->lock);
}
