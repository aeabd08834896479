#include "metrics.h"

#include <stdio.h>
#include <string.h>

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

void mtc_metric_header(struct mtc_buf *t, const char *name, const char *type, const char *help)
{
	mtc_buf_appendf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void mtc_metric_value(struct mtc_buf *t, const char *name, const char *labels, double v)
{
	if (labels)
		mtc_buf_appendf(t, "%s{%s} %.17g\n", name, labels, v);
	else
		mtc_buf_appendf(t, "%s %.17g\n", name, v);
}

void mtc_metric_histogram(struct mtc_buf *t, const char *name, const char *help, struct mtc_histogram *h)
{
	unsigned long long cum = 0;

	mtc_metric_header(t, name, "histogram", help);
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < h->n; i++) {
		cum += h->counts[i];
		mtc_buf_appendf(t, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], cum);
	}
	mtc_buf_appendf(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, h->count);
	mtc_buf_appendf(t, "%s_sum %.17g\n%s_count %llu\n", name, h->sum, name, h->count);
	pthread_mutex_unlock(&h->lock);
}
