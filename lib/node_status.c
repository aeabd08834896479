#include "node_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "fsutil.h"
#include "local_dir.h"
#include "xalloc.h"

#define STATUS_MAX 8192

static const double safe_bounds[] = { 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800 };
#define SAFE_BOUNDS ((int)(sizeof safe_bounds / sizeof *safe_bounds))

const char *mtc_safe_stage_name(enum mtc_safe_stage stage)
{
	static const char *names[] = { "commit", "peers", "backup" };
	return names[stage];
}

void mtc_node_status_init(struct mtc_node_status *st, int rank)
{
	memset(st, 0, sizeof *st);
	st->rank = rank;
	st->committed = st->replicated = st->backup_step = st->backup_time = -1;
	for (int k = 0; k < MTC_SAFE_STAGES; k++)
		mtc_histogram_init(&st->safe[k], safe_bounds, SAFE_BOUNDS);
}

int mtc_node_status_changed(const struct mtc_node_status *a, const struct mtc_node_status *b)
{
	int differ = a->rank != b->rank || a->committed != b->committed ||
		     a->replicated != b->replicated || a->backup_step != b->backup_step ||
		     a->backup_time != b->backup_time || a->backups_failed != b->backups_failed;
	for (int k = 0; k < MTC_SAFE_STAGES; k++)
		differ |= a->safe[k].count != b->safe[k].count;
	return differ;
}

static json_t *histogram_json(const struct mtc_histogram *h)
{
	json_t *counts = json_array();
	for (int i = 0; i <= h->n; i++)
		json_array_append_new(counts, json_integer((json_int_t)h->counts[i]));
	return json_pack("{s:o, s:I, s:f}", "counts", counts, "count", (json_int_t)h->count, "sum",
			 h->sum);
}

static void histogram_from_json(json_t *j, struct mtc_histogram *h)
{
	json_t *counts = json_object_get(j, "counts");
	if (json_array_size(counts) != (size_t)h->n + 1)
		return;
	for (int i = 0; i <= h->n; i++)
		h->counts[i] = (unsigned long long)json_integer_value(json_array_get(counts, i));
	h->count = (unsigned long long)json_integer_value(json_object_get(j, "count"));
	h->sum = json_number_value(json_object_get(j, "sum"));
}

int mtc_node_status_write(const char *dir, const struct mtc_node_status *st)
{
	json_t *safe = json_object();
	for (int k = 0; k < MTC_SAFE_STAGES; k++)
		json_object_set_new(safe, mtc_safe_stage_name(k), histogram_json(&st->safe[k]));
	json_t *j = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:o}", "rank", st->rank, "committed",
			      (json_int_t)st->committed, "replicated", (json_int_t)st->replicated,
			      "backup-step", (json_int_t)st->backup_step, "backup-time",
			      (json_int_t)st->backup_time, "backups-failed",
			      (json_int_t)st->backups_failed, "seconds-to-safety", safe);
	char *text = json_dumps(j, JSON_COMPACT), *path = xasprintf("%s/%s", dir, MTC_NODE_STATUS_FILE);
	int rc = mtc_write_atomic(path, text, strlen(text));

	json_decref(j);
	free(text);
	free(path);
	return rc;
}

static long long field(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

int mtc_node_status_read(const char *dir, struct mtc_node_status *st)
{
	char *path = xasprintf("%s/%s", dir, MTC_NODE_STATUS_FILE), *text;
	size_t len;
	json_t *j;
	int rc = mtc_read_file_nofollow(path, STATUS_MAX, &text, &len);

	free(path);
	mtc_node_status_init(st, -1);
	if (rc < 0)
		return -1;
	j = json_loadb(text, len, 0, NULL);
	free(text);
	if (!json_is_object(j)) {
		json_decref(j);
		return -1;
	}
	st->rank = (int)field(j, "rank");
	st->committed = field(j, "committed");
	st->replicated = field(j, "replicated");
	st->backup_step = field(j, "backup-step");
	st->backup_time = field(j, "backup-time");
	st->backups_failed = field(j, "backups-failed");
	for (int k = 0; k < MTC_SAFE_STAGES; k++)
		histogram_from_json(json_object_get(json_object_get(j, "seconds-to-safety"),
						    mtc_safe_stage_name(k)),
				    &st->safe[k]);
	json_decref(j);
	return 0;
}

void mtc_node_status_metrics(struct mtc_node_status *st, struct mtc_buf *t)
{
	static const char *help[] = {
		"seconds from a step's appearance in the local dir to its commit",
		"seconds from a step's appearance to on every replication peer",
		"seconds from a step's appearance to in a backup this node finished",
	};

	mtc_metric_header(t, "mtc_node_committed_step", "gauge", "the newest step this node committed");
	mtc_metric_value(t, "mtc_node_committed_step", NULL, (double)st->committed);
	mtc_metric_header(t, "mtc_node_replicated_step", "gauge",
			  "the newest step this node pushed to every peer");
	mtc_metric_value(t, "mtc_node_replicated_step", NULL, (double)st->replicated);
	mtc_metric_header(t, "mtc_node_backup_step", "gauge",
			  "the step of the last backup this node finished (-1: none)");
	mtc_metric_value(t, "mtc_node_backup_step", NULL, (double)st->backup_step);
	if (st->backup_time >= 0) {
		mtc_metric_header(t, "mtc_node_backup_age_seconds", "gauge",
				  "seconds since the last backup this node finished");
		mtc_metric_value(t, "mtc_node_backup_age_seconds", NULL,
				 (double)(time(NULL) - st->backup_time));
	}
	mtc_metric_header(t, "mtc_node_backups_failed_total", "counter", "backups that failed");
	mtc_metric_value(t, "mtc_node_backups_failed_total", NULL, (double)st->backups_failed);
	for (int k = 0; k < MTC_SAFE_STAGES; k++) {
		char name[64];
		snprintf(name, sizeof name, "mtc_step_seconds_to_%s", mtc_safe_stage_name(k));
		mtc_metric_histogram(t, name, help[k], &st->safe[k]);
	}
}
