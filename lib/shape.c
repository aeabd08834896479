#include "shape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fsutil.h"
#include "local_dir.h"
#include "xalloc.h"

static char *shape_path(const char *dir, const char *job)
{
	return xasprintf("%s/" MTC_SHAPE_PREFIX "%s" MTC_SHAPE_SUFFIX, dir, job);
}

void mtc_shape_of_config(const struct mtc_config *cfg, struct mtc_shape *s)
{
	s->nodes = cfg->nodes;
	s->dp = mtc_config_replicas(cfg);
}

int mtc_shape_parse(const char *text, struct mtc_shape *s)
{
	json_t *j = json_loads(text, 0, NULL), *n, *d;
	int rc = -1;

	n = json_object_get(j, "nodes");
	d = json_object_get(j, "assume-data-parallelism");
	if (json_is_integer(n) && json_is_integer(d) && json_integer_value(n) >= 1 &&
	    json_integer_value(n) <= 1 << 24 && json_integer_value(d) >= 1 &&
	    json_integer_value(n) % json_integer_value(d) == 0) {
		s->nodes = (int)json_integer_value(n);
		s->dp = (int)json_integer_value(d);
		rc = 0;
	}
	json_decref(j);
	return rc;
}

int mtc_shape_read(const char *dir, const char *job, struct mtc_shape *s, char *err, size_t errlen)
{
	char *path = shape_path(dir, job), *text = NULL;
	int rc = -1;

	if (mtc_read_file_nofollow(path, 4096, &text, NULL) < 0) {
		if (errno == ENOENT)
			rc = 0;
		else
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
	} else if (mtc_shape_parse(text, s) < 0) {
		snprintf(err, errlen, "'%s' is not a job's shape", path);
	} else {
		rc = 1;
	}
	free(text);
	free(path);
	return rc;
}

void mtc_shape_text(const struct mtc_config *cfg, char *buf, size_t len)
{
	struct mtc_shape s;

	mtc_shape_of_config(cfg, &s);
	snprintf(buf, len, "{\"nodes\":%d,\"assume-data-parallelism\":%d}\n", s.nodes, s.dp);
}

int mtc_shape_write(const char *dir, const struct mtc_config *cfg, char *err, size_t errlen)
{
	char *path = shape_path(dir, cfg->job_name), text[96];
	int rc;

	mtc_shape_text(cfg, text, sizeof text);
	rc = mtc_write_atomic(path, text, strlen(text));
	if (rc < 0)
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
	free(path);
	return rc;
}

int mtc_shape_check(const struct mtc_shape *saved, const struct mtc_shape *now, const char *where,
		    char *err, size_t errlen)
{
	if (mtc_shape_columns(saved) == mtc_shape_columns(now))
		return 0;
	snprintf(err, errlen,
		 "the job's columns changed: %s holds steps of %d nodes with "
		 "assume-data-parallelism %d (%d columns), this job has %d nodes with %d (%d columns); "
		 "a restart may change the replicas, not the columns: restore a backup through the "
		 "framework's own resharding under a new job name, or restart with %d columns",
		 where, saved->nodes, saved->dp, mtc_shape_columns(saved), now->nodes, now->dp,
		 mtc_shape_columns(now), mtc_shape_columns(saved));
	return -1;
}

int mtc_shape_check_backup(json_t *view, json_t *backups, const struct mtc_shape *now, char *err,
			   size_t errlen)
{
	const char *name = json_string_value(json_object_get(view, "backup"));
	struct mtc_shape saved;
	json_t *b, *sh;
	size_t i;

	if (!name)
		return 0;
	json_array_foreach (backups, i, b) {
		if (!json_is_string(json_object_get(b, "name")) ||
		    strcmp(json_string_value(json_object_get(b, "name")), name))
			continue;
		sh = json_object_get(b, "shape");
		saved.nodes = (int)json_integer_value(json_object_get(sh, "nodes"));
		saved.dp = (int)json_integer_value(json_object_get(sh, "assume-data-parallelism"));
		if (saved.nodes >= 1 && saved.dp >= 1 && saved.nodes % saved.dp == 0) {
			char *where = xasprintf("backup '%s'", name);
			int rc = mtc_shape_check(&saved, now, where, err, errlen);
			free(where);
			return rc;
		}
	}
	return 0;
}
