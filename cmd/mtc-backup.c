/*
 * mtc-backup: upload this node's part of step S to LOCATION/<job>/<name>/.
 *   1. read the accepted config and this node's .meta files of S; a name that
 *      holds a .meta of another step is refused (a backup name is bound to one
 *      step), checked again before the .meta files go up
 *   2. check the local data against its name (digest + manifest)
 *   3. claim <hash>.manifest (create-only), then upload the data objects not
 *      already there; with data parallelism one copy of each hash: the last
 *      partition's, or the first claimer's (lib/backup_write.c)
 *   4. wait until the data this node's .meta names is whole in the backup,
 *      then upload the .meta files last: a .meta that exists means its data
 *      is whole
 *   5. print a JSON summary line
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "mtc-backup/backup_write.h"
#include "common/cli.h"
#include "common/interrupt.h"
#include "config.h"
#include "exitcode.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "naming.h"
#include "units.h"
#include "store/store.h"
#include "xalloc.h"

static char *dir, *config_file, *step_text, *location, *name_opt, *token_file, *s3_endpoint;
static int parallel = MTC_CLI_UNSET, threads, no_verify, no_progress, json, stall_s = 300;
static char *slice_threshold_text;
static long long slice_threshold;
static int slices;

static int run(const struct mtc_config *cfg, long long step)
{
	struct mtc_backup_write o = { .cfg = cfg,
				      .dir = dir,
				      .location = location,
				      .name = name_opt,
				      .store = { .token_file = token_file,
						 .s3_endpoint = s3_endpoint,
						 .parallel = parallel,
						 .slice_threshold = slice_threshold,
						 .slices = slices,
						 .threads = threads },
				      .threads = threads,
				      .no_verify = no_verify,
				      .progress = !no_progress && mtc_log_level() >= MTC_LOG_WARN,
				      .stall_s = stall_s };
	struct mtc_backup_written w = { 0 };
	int rc = mtc_backup_write(&o, step, &w);

	if (rc == MTC_EXIT_OK) {
		double rate = mtc_mib_per_s((double)w.bytes, w.seconds);
		if (json) {
			json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:i, s:I, s:I, s:i, s:o, s:f}",
					      "location", w.location, "job", cfg->job_name, "backup",
					      w.name, "step", (json_int_t)step, "rank", cfg->node_rank,
					      "bytes", (json_int_t)w.bytes, "objects",
					      (json_int_t)w.objects, "skipped", (int)w.skipped,
					      "seconds", mtc_json_seconds(w.seconds), "mib-per-s", rate);
			if (mtc_json_print(j) < 0)
				rc = MTC_EXIT_FAILURE;
		} else if (printf("backed up step %lld of rank %d to '%s/%s/%s': %lld bytes, %lld "
				  "objects (%d skipped) in %.3f s, %.1f MiB/s\n",
				  step, cfg->node_rank, w.location, cfg->job_name, w.name,
				  (long long)w.bytes, (long long)w.objects, (int)w.skipped, w.seconds,
				  rate) < 0 ||
			   fflush(stdout) != 0) {
			rc = MTC_EXIT_FAILURE;
		}
	}
	free(w.location);
	return rc;
}

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		MTC_POPT_DIR(dir),
		{ "config", 'c', POPT_ARG_STRING, &config_file, 0, "accepted config (JSON, - for stdin)",
		  "FILE" },
		MTC_POPT_STEP(step_text, "the step to back up"),
		{ "to", '\0', POPT_ARG_STRING, &location, 0,
		  "backup location: DIR, file://DIR, gs://BUCKET[/PREFIX] or s3://BUCKET[/PREFIX]",
		  "LOCATION" },
		MTC_POPT_NAME(name_opt, "backup name (default: now, UTC)"),
		MTC_POPT_STORE_AUTH(token_file, s3_endpoint),
		MTC_POPT_PARALLEL(parallel),
		MTC_POPT_THREADS(threads),
		MTC_POPT_SLICES(
			slice_threshold_text, slices,
			"on gs://: upload a file at least this big as parallel parts composed into one object (default 64M)",
			"parts of one such file (default 16, at most 32; 1: one stream)"),
		{ "no-verify", '\0', POPT_ARG_NONE, &no_verify, 0,
		  "do not check the data against its name, and upload no manifest", NULL },
		MTC_POPT_NO_PROGRESS(no_progress),
		{ "stall-timeout", '\0', POPT_ARG_INT, &stall_s, 0,
		  "give up waiting for data another node uploads after it has not grown this long (default 300)",
		  "SECONDS" },
		MTC_POPT_JSON(json, "the summary line as JSON"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	struct mtc_config cfg;
	poptContext ctx;
	long long step;
	int rc;

	if (mtc_cli_start("mtc-backup", argc, argv, opts,
			  "--dir DIR --config FILE --step S --to LOCATION [OPTIONS]", &ctx, &rc) < 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (mtc_cli_no_args(ctx))
		goto out;
	if (mtc_cli_required("--dir", !!dir, "--config", !!config_file, "--step", !!step_text, "--to",
			     !!location, NULL))
		goto out;
	if (mtc_parse_uint(step_text, &step) < 0) {
		mtc_usage_error("invalid step '%s'", step_text);
		goto out;
	}
	if (name_opt && mtc_parse_backup_name(name_opt, NULL) < 0) {
		mtc_usage_error("invalid backup name '%s': want YYYY-MM-DD_HH-MM", name_opt);
		goto out;
	}
	if (mtc_cli_count("--parallel", &parallel))
		goto out;
	if (threads < 0 || stall_s <= 0) {
		mtc_usage_error("--threads and --stall-timeout take a positive number");
		goto out;
	}
	if (mtc_cli_slices(slice_threshold_text, slices, &slice_threshold))
		goto out;
	if ((rc = mtc_cli_config(config_file, &cfg)) != MTC_EXIT_OK)
		goto out;
	mtc_cli_on_interrupt(name_opt != NULL); /* without --name a second run is a new backup */
	rc = run(&cfg, step);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	return rc;
}
