#include "shape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fsutil.h"
#include "xalloc.h"

static char *shape_path(const char *dir, const char *job)
{
	return xasprintf("%s/.mtc-shape-%s.json", dir, job);
}

void mtc_shape_of_config(const struct mtc_config *cfg, struct mtc_shape *s)
{
	s->nodes = cfg->nodes;
	s->dp = mtc_config_replicas(cfg);
}

int mtc_shape_read(const char *dir, const char *job, struct mtc_shape *s, char *err, size_t errlen)
{
	char *path = shape_path(dir, job), *text = NULL;
	json_t *j = NULL, *n, *d;
	int rc = -1;

	if (mtc_read_file_nofollow(path, 4096, &text, NULL) < 0) {
		if (errno == ENOENT)
			rc = 0;
		else
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	j = json_loads(text, 0, NULL);
	n = json_object_get(j, "nodes");
	d = json_object_get(j, "assume-data-parallelism");
	if (!json_is_integer(n) || !json_is_integer(d) || json_integer_value(n) < 1 ||
	    json_integer_value(d) < 1 || json_integer_value(n) % json_integer_value(d) ||
	    json_integer_value(n) > 1 << 24) {
		snprintf(err, errlen, "'%s' is not a job's shape", path);
		goto out;
	}
	s->nodes = (int)json_integer_value(n);
	s->dp = (int)json_integer_value(d);
	rc = 1;
out:
	json_decref(j);
	free(text);
	free(path);
	return rc;
}

int mtc_shape_write(const char *dir, const struct mtc_config *cfg, char *err, size_t errlen)
{
	struct mtc_shape s;
	char *path = shape_path(dir, cfg->job_name), text[96];
	int rc;

	mtc_shape_of_config(cfg, &s);
	snprintf(text, sizeof text, "{\"nodes\":%d,\"assume-data-parallelism\":%d}\n", s.nodes, s.dp);
	rc = mtc_write_atomic(path, text, strlen(text));
	if (rc < 0)
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
	free(path);
	return rc;
}

int mtc_shape_check(const struct mtc_shape *saved, const struct mtc_shape *now, int rank, char *err,
		    size_t errlen)
{
	if (mtc_shape_columns(saved) == mtc_shape_columns(now))
		return 0;
	snprintf(err, errlen,
		 "the job's columns changed: node %d holds steps of %d nodes with "
		 "assume-data-parallelism %d (%d columns), this job has %d nodes with %d (%d columns); "
		 "a restart may change the replicas, not the columns: restore a backup through the "
		 "framework's own resharding under a new job name, or restart with %d columns",
		 rank, saved->nodes, saved->dp, mtc_shape_columns(saved), now->nodes, now->dp,
		 mtc_shape_columns(now), mtc_shape_columns(saved));
	return -1;
}
