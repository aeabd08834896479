#include "node_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fsutil.h"
#include "xalloc.h"

int mtc_node_status_write(const char *dir, const struct mtc_node_status *st)
{
	json_t *j = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}", "rank", st->rank, "committed",
			      (json_int_t)st->committed, "replicated", (json_int_t)st->replicated,
			      "backup-step", (json_int_t)st->backup_step, "backup-time",
			      (json_int_t)st->backup_time, "backups-failed",
			      (json_int_t)st->backups_failed);
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
	int rc = mtc_read_file_nofollow(path, 4096, &text, &len);

	free(path);
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
	json_decref(j);
	return 0;
}
