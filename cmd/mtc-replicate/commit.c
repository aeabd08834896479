#include "verbs.h"

/* A committed step: the JSON line with --json, else the line run logs for it (lib/commit.c). */
static void print_commit(const struct mtc_commit_result *r, void *arg)
{
	if (*(const int *)arg) {
		mtc_json_print(json_pack("{s:I, s:i, s:s, s:I, s:o, s:b}", "step", (json_int_t)r->step,
					 "worker", r->worker, "hash", r->hash, "bytes",
					 (json_int_t)r->bytes, "seconds", mtc_json_seconds(r->seconds),
					 "redundant", r->redundant));
		return;
	}
	printf("committed step %lld worker %d: %s (%lld bytes, %.3f s, %lld of them hashed while it was "
	       "written%s)\n",
	       r->step, r->worker, r->hash, r->bytes, r->seconds, r->known,
	       r->redundant ? "; the same data was already there" : "");
	fflush(stdout);
}

/*
 * The steps a scan left pending: with json one result line
 * {"pending":[S...],"quiet-time":Q}, else a warning for each on stderr.
 */
static void report_pending(const struct mtc_commit_pendings *p, double quiet, int json)
{
	if (!p->n)
		return;
	if (json) {
		json_t *steps = json_array();
		for (size_t i = 0; i < p->n; i++)
			json_array_append_new(steps, json_integer(p->v[i].step));
		mtc_json_print(json_pack("{s:o, s:o}", "pending", steps, "quiet-time",
					 mtc_json_seconds(quiet)));
		return;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].saves < 0)
			mtc_warn("step %lld is pending: it kept changing while it was hashed; not "
				 "committed (--wait SEC waits for it)",
				 p->v[i].step);
		else if (p->v[i].saves < p->v[i].workers)
			mtc_warn("step %lld is pending: %d of %d workers' saves are there", p->v[i].step,
				 p->v[i].saves, p->v[i].workers);
		else
			mtc_warn("step %lld is pending: written to within the last %g s (--quiet-time); "
				 "not committed (--wait SEC waits for it)",
				 p->v[i].step, quiet);
}

/*
 * commit --wait: scans until no step is pending or wait_s has passed, taking
 * each step as it becomes quiet. Exit 3 when some stay pending.
 */
static int commit_wait(const struct mtc_commit_opts *o, struct mtc_commit_pendings *p, double wait_s,
		       int json)
{
	double end = mtc_now() + wait_s;
	for (;;) {
		if (mtc_commit_scan_pending(o, p) < 0)
			return MTC_EXIT_FAILURE;
		if (!p->n)
			return MTC_EXIT_OK;
		if (mtc_now() >= end)
			break;
		double left = end - mtc_now();
		usleep((useconds_t)((left < 0.25 ? left : 0.25) * 1e6));
	}
	if (json)
		report_pending(p, o->quiet_s, json);
	mtc_error("timed out after %g s: step %lld%s still pending", wait_s, p->v[0].step,
		  p->n > 1 ? " and others" : "");
	return MTC_EXIT_TIMEOUT;
}

int mtc_replicate_commit(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL;
	int watch = 0, threads = 0, json = 0;
	double quiet = 5, timeout = -1, wait_s = -1;
	struct poptOption opts[] = {
		MTC_POPT_DIR(dir),
		MTC_POPT_CONFIG(config),
		{ "watch", 'w', POPT_ARG_NONE, &watch, 0, "keep committing steps as they arrive", NULL },
		MTC_POPT_QUIET_TIME(
			quiet,
			"a created step dir or .save file is taken after SEC s without change (default 5)"),
		MTC_POPT_TIMEOUT(timeout, "with --watch, exit 0 after SEC s (default: never)"),
		{ "wait", '\0', POPT_ARG_DOUBLE, &wait_s, 0,
		  "wait up to SEC s for pending steps to become quiet and commit them; exit 3 if "
		  "some are still pending",
		  "SEC" },
		MTC_POPT_THREADS(threads),
		MTC_POPT_JSON(json, "a JSON line per committed step and one for the pending steps"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_config cfg;
	struct mtc_commit_pendings pending = { 0 };
	int rc;
	if (mtc_replicate_parse(argc, argv, opts, COMMIT_USAGE, &ctx, &rc) < 0)
		goto out;
	if (!dir) {
		rc = mtc_usage_error("--dir is required");
		goto out;
	}
	if (quiet < 0 || threads < 0) {
		rc = mtc_usage_error("--quiet-time and --threads take a number >= 0");
		goto out;
	}
	if (watch && wait_s >= 0) {
		rc = mtc_usage_error("--watch and --wait exclude each other");
		goto out;
	}
	if ((rc = mtc_cli_config(config, &cfg)) != MTC_EXIT_OK)
		goto out;
	struct mtc_commit_opts o = { .dir = dir,
				     .cfg = &cfg,
				     .threads = threads,
				     .quiet_s = quiet,
				     .cb = print_commit,
				     .arg = &json };
	if (watch) {
		rc = mtc_commit_watch(&o, timeout) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	} else if (wait_s >= 0) {
		rc = commit_wait(&o, &pending, wait_s, json);
	} else {
		rc = mtc_commit_scan_pending(&o, &pending) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
		report_pending(&pending, quiet, json);
	}
	free(pending.v);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	free(dir);
	free(config);
	return rc;
}
