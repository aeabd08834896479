#ifndef MTC_METRICS_H
#define MTC_METRICS_H

#include <pthread.h>
#include <stddef.h>

#include "buf.h"

/* Prometheus text exposition (format 0.0.4): a histogram type and writers into a buffer (buf.h). */

#define MTC_HIST_MAX_BUCKETS 16

struct mtc_histogram {
	pthread_mutex_t lock;
	int n;
	double bounds[MTC_HIST_MAX_BUCKETS];
	unsigned long long counts[MTC_HIST_MAX_BUCKETS + 1];
	unsigned long long count;
	double sum;
};

void mtc_histogram_init(struct mtc_histogram *h, const double *bounds, int n);
void mtc_histogram_observe(struct mtc_histogram *h, double v);

/* What a /metrics page may grow to. */
#define MTC_METRICS_MAX (16u << 20)

void mtc_metric_header(struct mtc_buf *t, const char *name, const char *type, const char *help);
/* labels: NULL or like 'code="200"' */
void mtc_metric_value(struct mtc_buf *t, const char *name, const char *labels, double v);
void mtc_metric_histogram(struct mtc_buf *t, const char *name, const char *help,
			  struct mtc_histogram *h);

#endif
