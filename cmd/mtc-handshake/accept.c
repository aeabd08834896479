#include "verbs.h"
#include "local_dir.h"
#include "walk.h"

/* The accepted config: one JSON line, with or without --json. */
static int print_config(const struct mtc_config *cfg)
{
	return mtc_json_print(mtc_config_to_json(cfg)) == 0 ? MTC_EXIT_OK : MTC_EXIT_FAILURE;
}

/* Every verb with --dir waits or writes there: the dir is created when missing. */
int need_dir(void)
{
	if (!dir)
		return mtc_usage_error("--dir is required");
	return mtc_cli_local_dir(dir);
}

int timed_out(const char *what)
{
	if (errno == ETIMEDOUT) {
		mtc_error("timed out after %g s waiting for %s", timeout_s, what);
		return MTC_EXIT_TIMEOUT;
	}
	mtc_error("cannot wait for %s:", what);
	return MTC_EXIT_FAILURE;
}

/* local: the local dir's replicator.yaml, never read through a symlink. */
static int read_config_file(const char *path, int local, struct mtc_config *cfg, char *err,
			    size_t errlen)
{
	char *text;
	size_t len;

	if (!strcmp(path, "-") ? mtc_read_fd(0, MTC_CONFIG_MAX_BYTES, &text, &len)
	    : local	       ? mtc_read_file_nofollow(path, MTC_CONFIG_MAX_BYTES, &text, &len)
			       : mtc_read_file(path, MTC_CONFIG_MAX_BYTES, &text, &len)) {
		if (errno == EFBIG)
			snprintf(err, errlen, "file is larger than %d bytes", MTC_CONFIG_MAX_BYTES);
		else if (errno == ELOOP || errno == EISDIR)
			snprintf(err, errlen, "not a regular file");
		else
			snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	int rc = mtc_config_parse_yaml(text, len, cfg, err, errlen);
	free(text);
	return rc;
}

/* What the reference accepts but an operator should hear about: error lines, not failures. */
static void warn_inconsistent(const struct mtc_config *cfg)
{
	if (cfg->data_parallelism > 1 && mtc_config_replicas(cfg) == 1)
		mtc_error("'assume-data-parallelism' %d does not divide 'nodes' %d: data-parallel "
			  "deduplication is off",
			  cfg->data_parallelism, cfg->nodes);
	if (cfg->peers_per_node_ignored >= 0)
		mtc_error("'peers-per-node' %d does not match the %d entries of 'peer-ranks': "
			  "'peer-ranks' is used",
			  cfg->peers_per_node_ignored, cfg->n_peer_ranks);
}

int do_accept(void)
{
	struct mtc_config cfg;
	char err[512], *path;
	int rc;

	if ((rc = need_dir()))
		return rc;
	mtc_log_status_dir(dir, "init");
	path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	mtc_info("waiting for '%s'", path);
	if ((rc = mtc_wait_config(dir, mtc_deadline(timeout_s))) < 0) {
		char *what = xasprintf("'%s'", path);
		rc = timed_out(what);
		free(what);
		free(path);
		return rc;
	}
	if (rc == 1 ? (snprintf(err, sizeof err, "not a regular file"), -1)
		    : read_config_file(path, 1, &cfg, err, sizeof err)) {
		/* replicator.failed first: the training job reads it once the yaml is gone. */
		mtc_critical("invalid config '%s': %s", path, err);
		if (mtc_remove_tree(path) < 0)
			mtc_error("cannot delete '%s':", path);
		mtc_fsync_dir(dir);
		free(path);
		return MTC_EXIT_USAGE;
	}
	mtc_cli_status_node(dir, &cfg);

	if (mtc_clean_local_dir(dir) < 0) {
		mtc_critical("cannot clean the local dir '%s'", dir);
		unlink(path);
		rc = MTC_EXIT_FAILURE;
	} else if ((warn_inconsistent(&cfg), unlink(path) < 0) || mtc_fsync_dir(dir) < 0) {
		mtc_error("cannot delete '%s':", path);
		rc = MTC_EXIT_FAILURE;
	} else {
		mtc_info("accepted '%s'", path);
		rc = print_config(&cfg);
	}
	mtc_config_free(&cfg);
	free(path);
	return rc;
}

int do_watch(void)
{
	int rc;
	if ((rc = need_dir()))
		return rc;
	if (mtc_wait_config(dir, mtc_deadline(timeout_s)) < 0) {
		char *what = xasprintf("a new '%s/%s'", dir, MTC_CONFIG_FILE);
		rc = timed_out(what);
		free(what);
		return rc;
	}
	char *path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	rc = json ? mtc_json_print(json_pack("{s:s}", "config", path)) : printf("%s\n", path);
	free(path);
	return rc < 0 || fflush(stdout) != 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
}

int do_check(const char *file)
{
	struct mtc_config cfg;
	char err[512];

	if (!file)
		return mtc_usage_error("check needs a FILE (or - for stdin)");
	if (strcmp(file, "-") && access(file, F_OK) < 0) {
		int e = errno;
		mtc_error("cannot read '%s': %s", file, strerror(e));
		return e == ENOENT || e == ENOTDIR ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
	}
	if (read_config_file(file, 0, &cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", file, err);
		return MTC_EXIT_USAGE;
	}
	int rc = print_config(&cfg);
	mtc_config_free(&cfg);
	return rc;
}
