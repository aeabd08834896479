#include "verbs.h"
#include "local_dir.h"

static int build_offer(struct mtc_config *cfg, enum mtc_yaml_style *style)
{
	json_t *o = json_object();
	char err[512];
	int rc;

	if (!strcmp(o_style, "orbax"))
		*style = MTC_STYLE_ORBAX;
	else if (!strcmp(o_style, "nemo"))
		*style = MTC_STYLE_NEMO;
	else
		return mtc_usage_error("--style must be orbax or nemo, not '%s'", o_style);
	if (o_job)
		json_object_set_new(o, "job-name", json_string(o_job));
	json_object_set_new(o, "framework", json_string(o_framework));
#define SET_INT(key, v) \
	if ((v) >= 0)   \
	json_object_set_new(o, key, json_integer(v))
	SET_INT("node-rank", o_rank);
	SET_INT("nodes", o_nodes);
	SET_INT("peers-per-node", o_ppn);
	SET_INT("assume-data-parallelism", o_dp);
	SET_INT("backup-interval-minutes", o_minutes);
	SET_INT("backup-interval-steps", o_steps);
	SET_INT("workers-per-node", o_wpn);
#undef SET_INT
	if (o_peers) {
		json_t *a = json_array();
		char *list = xstrdup(o_peers), *save = NULL;
		for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
			long long v;
			if (mtc_parse_uint(t, &v) < 0) {
				free(list);
				json_decref(a);
				json_decref(o);
				return mtc_usage_error("--peer-ranks takes ranks like 1,2, not '%s'",
						       o_peers);
			}
			json_array_append_new(a, json_integer(v));
		}
		free(list);
		json_object_set_new(o, "peer-ranks", a);
	}
	rc = mtc_config_from_json(o, cfg, err, sizeof err);
	json_decref(o);
	if (rc < 0)
		return mtc_usage_error("cannot offer this config: %s", err);
	/* NeMo writes peers-per-node beside peer-ranks; the accepted config keeps what was given. */
	return MTC_EXIT_OK;
}

static int write_offer(const struct mtc_config *cfg, enum mtc_yaml_style style)
{
	char *yaml = mtc_render_config_yaml(cfg, style);
	char *path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	int rc = 0;

	if (style == MTC_STYLE_ORBAX) {
		rc = mtc_write_atomic(path, yaml, strlen(yaml));
	} else {
		FILE *f = fopen(path, "w");
		if (!f || fputs(yaml, f) < 0)
			rc = -1;
		if (f && fclose(f) != 0)
			rc = -1;
	}
	if (rc < 0)
		mtc_error("cannot write '%s':", path);
	free(path);
	free(yaml);
	return rc;
}

/* Reads and deletes replicator.errors (logged) and replicator.failed (fatal), as NeMo does. */
static int read_status_files(void)
{
	char *path, *text;
	int rc = MTC_EXIT_OK;

	path = xasprintf("%s/%s", dir, MTC_ERRORS_FILE);
	if (mtc_read_file(path, 1 << 20, &text, NULL) == 0) {
		fprintf(stderr, "%s: replicator errors:\n%s", mtc_prog(), text);
		free(text);
		unlink(path);
	}
	free(path);
	path = xasprintf("%s/%s", dir, MTC_FAILED_FILE);
	if (mtc_read_file(path, 1 << 20, &text, NULL) == 0) {
		size_t n = strlen(text);
		while (n && text[n - 1] == '\n')
			text[--n] = '\0';
		mtc_error("replicator failed: %s", text);
		free(text);
		unlink(path);
		rc = MTC_EXIT_FAILURE;
	}
	free(path);
	return rc;
}

static int wait_restore(const struct mtc_config *cfg, enum mtc_yaml_style style)
{
	char *name = NULL, *from, *to = NULL;
	long long step;
	int rc = MTC_EXIT_OK;

	if (mtc_wait_restore_marker(dir, mtc_deadline(o_restore_timeout), &name, &step) < 0) {
		if (errno == ETIMEDOUT) {
			mtc_error("timed out after %g s waiting for a '*.restore' marker in '%s'",
				  o_restore_timeout, dir);
			return MTC_EXIT_TIMEOUT;
		}
		mtc_error("cannot wait for a restore marker in '%s':", dir);
		return MTC_EXIT_FAILURE;
	}
	from = xasprintf("%s/%s", dir, name);
	if (step == 0) {
		rc = MTC_EXIT_NOTFOUND;
	} else if (o_rename) {
		to = style == MTC_STYLE_ORBAX ? xasprintf("%s/%lld", dir, step)
					      : xasprintf("%s/step=%lld", dir, step);
		if (rename(from, to) < 0) {
			mtc_error("cannot rename '%s' to '%s':", from, to);
			rc = MTC_EXIT_FAILURE;
		}
	}
	if (rc != MTC_EXIT_FAILURE) {
		const char *where = to ? to : from;
		if (json ? mtc_json_print(
				   json_pack("{s:I, s:s}", "step", (json_int_t)step, "path", where))
			 : printf("%lld %s\n", step, where) < 0 || fflush(stdout) != 0)
			rc = MTC_EXIT_FAILURE;
	}
	(void)cfg;
	free(from);
	free(to);
	free(name);
	return rc;
}

int do_offer(void)
{
	struct mtc_config cfg;
	enum mtc_yaml_style style = MTC_STYLE_ORBAX;
	char *path;
	int rc;

	if ((rc = build_offer(&cfg, &style)))
		return rc;
	if ((rc = need_dir()))
		goto out;
	path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	if (o_replace && unlink(path) == 0)
		mtc_info("removed a stale '%s'", path);
	if (mtc_wait_gone(dir, MTC_CONFIG_FILE, mtc_deadline(timeout_s)) < 0) {
		char *what = xasprintf("the previous '%s' to disappear", path);
		rc = timed_out(what);
		free(what);
	} else if (write_offer(&cfg, style) < 0) {
		rc = MTC_EXIT_FAILURE;
	} else if (mtc_wait_gone(dir, MTC_CONFIG_FILE, mtc_deadline(timeout_s)) < 0) {
		char *what = xasprintf("'%s' to be accepted", path);
		rc = timed_out(what);
		free(what);
	} else if ((rc = read_status_files()) == MTC_EXIT_OK && o_wait_restore) {
		rc = wait_restore(&cfg, style);
	}
	free(path);
out:
	mtc_config_free(&cfg);
	return rc;
}
