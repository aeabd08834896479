#include "prune.h"

#include <unistd.h>

static void removed_leftover(const char *where, long long bytes, void *arg)
{
	mtc_info("removed '%s' (%lld bytes): a dead writer's temporary", where, bytes);
}

/* Deletes the backups not kept, and what dead writers left in those kept. */
static void delete_rest(struct mtc_store *s, struct run *run, int *rc)
{
	for (size_t i = 0; i < run->n; i++) {
		struct backup *b = backup_of(run, run->items[i].name);
		if (mtc_retention_kept(&run->items[i])) {
			char *prefix = xasprintf("%s/", b->name);
			if (mtc_store_leftovers(s, prefix, 1, removed_leftover, NULL) < 0) {
				mtc_error("cannot remove leftovers in '%s': %s", b->name,
					  mtc_store_error(s));
				*rc = MTC_EXIT_FAILURE;
			}
			free(prefix);
			continue;
		}
		mtc_fault_stall("prune-delete", b->name);
		if (mtc_backup_delete(s, b->name) < 0) {
			mtc_error("cannot delete backup '%s': %s", b->name, mtc_store_error(s));
			*rc = MTC_EXIT_FAILURE;
			continue;
		}
		b->deleted = 1;
		mtc_info("deleted '%s'", b->name);
	}
}

static int is_dir(const char *url)
{
	struct stat st;
	const char *path = strncmp(url, "file://", 7) ? url : url + 7;
	return !strncmp(url, "gs://", 5) || !strncmp(url, "s3://", 5) ||
	       (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
}

/* A directory named as the backups' own (-p, an INI section): judged by the rules' pattern, not mtc's names. */
int open_dir(const char *root, struct mtc_store **s)
{
	char err[512];
	if (mtc_store_open(root, &store_opt, s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", root, err);
		return mtc_store_result(errno);
	}
	if (!is_dir(root)) {
		const char *path = strncmp(root, "file://", 7) ? root : root + 7;
		if (access(path, F_OK) == 0) {
			mtc_error("'%s' is a file, not a backup location: give the directory that "
				  "holds the backups",
				  root);
			return MTC_EXIT_USAGE;
		}
		mtc_error("no such location: '%s'", root);
		return MTC_EXIT_NOTFOUND;
	}
	return MTC_EXIT_OK;
}

static void run_free(struct run *run)
{
	for (size_t i = 0; i < run->n; i++)
		free(run->bs[i].name);
	free(run->bs);
	free(run->items);
}

/* Judges (and with --delete prunes) the backups of the directory s is opened at. */
int prune_dir(struct mtc_store *s, const char *root, const struct rules *r, int nodes, int workers,
	      int location_named, struct totals *t)
{
	struct run run = { .root = root, .r = r, .location_named = location_named };
	char **dirs = NULL, rv[4096];
	size_t ndirs = 0;
	int rc = MTC_EXIT_FAILURE, have_rv;

	if (mtc_backups_list_dirs(s, &dirs, &ndirs) < 0) {
		mtc_error("cannot list '%s': %s", root, mtc_store_error(s));
		rc = mtc_store_result(errno);
		goto out;
	}
	mtc_debug("%s: %zu names listed", root, ndirs);
	for (size_t i = 0; i < ndirs; i++)
		add_item(&run, dirs[i]);
	if (!run.n) {
		if (run.ignored)
			mtc_error("no backups at '%s' (%zu name%s without a timestamp: %s); for a "
				  "bucket root give it as LOCATION with --job NAME",
				  root, run.ignored, run.ignored == 1 ? "" : "s", run.ignored_names);
		else
			mtc_error("no backups at '%s'", root);
		rc = MTC_EXIT_NOTFOUND;
		goto out;
	}
	report_ignored(&run);
	have_rv = mtc_backups_restore_version(s, rv, sizeof rv);
	if (have_rv < 0) {
		mtc_error("cannot read '%s/restore.version': %s", root, mtc_store_error(s));
		goto out;
	}
	mtc_retention_apply(&r->policy, run.items, run.n);
	if (protect(s, &run, have_rv ? rv : NULL, nodes, workers) < 0)
		goto out;
	rc = MTC_EXIT_OK;
	if (do_delete)
		delete_rest(s, &run, &rc);
	if (report(&run, t) < 0 && rc == MTC_EXIT_OK)
		rc = MTC_EXIT_FAILURE;
out:
	mtc_backups_free_names(dirs, ndirs);
	run_free(&run);
	return rc;
}

int prune_list(const struct rules *r, struct totals *t)
{
	struct run run = { .r = r };
	int rc = MTC_EXIT_FAILURE;
	if (read_list(list_file, &run) == 0) {
		report_ignored(&run);
		mtc_retention_apply(&r->policy, run.items, run.n);
		rc = report(&run, t) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	}
	run_free(&run);
	return rc;
}

/* LOCATION --job NAME or --config (the bucket root), or -p PATH (the backups' own directory). */
int prune_location(const struct rules *r, struct totals *t)
{
	struct mtc_store *s = NULL;
	struct mtc_config cfg = { 0 };
	char err[1024];
	const char *name = job;
	int rc, nodes = 0, workers = 0;

	if (config_file) {
		if ((rc = mtc_cli_config(config_file, &cfg)) != MTC_EXIT_OK)
			return rc;
		if (job && strcmp(job, cfg.job_name)) {
			rc = mtc_usage_error("--job %s and the config's job '%s' differ", job,
					     cfg.job_name);
			goto out;
		}
		name = cfg.job_name;
		nodes = cfg.nodes;
		workers = cfg.workers_per_node;
	}
	if (path_opt) {
		rc = open_dir(path_opt, &s);
		if (!rc)
			rc = prune_dir(s, path_opt, r, 0, 0, 0, t);
		goto out;
	}
	rc = mtc_job_store_open(location, name, 0, &store_opt, &s, err, sizeof err);
	if (rc) {
		mtc_error("%s", err);
		goto out;
	}
	rc = prune_dir(s, mtc_store_url(s), r, nodes, workers, 1, t);
out:
	if (s)
		mtc_store_close(s);
	if (cfg.job_name)
		mtc_config_free(&cfg);
	return rc;
}
