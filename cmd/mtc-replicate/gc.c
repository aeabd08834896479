#include "verbs.h"

static int parse_steps(const char *list, long long **steps, size_t *n)
{
	char *copy = xstrdup(list), *save = NULL;
	*steps = NULL;
	*n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long long v;
		if (mtc_parse_uint(t, &v) < 0) {
			free(copy);
			free(*steps);
			return -1;
		}
		*steps = xrealloc(*steps, (*n + 1) * sizeof **steps);
		(*steps)[(*n)++] = v;
	}
	free(copy);
	return 0;
}

static void print_would_delete(const char *path, void *arg)
{
	if (arg)
		json_array_append_new(arg, json_string(path));
	else
		printf("would-delete %s\n", path); /* mtc(7) §9.1: the one dry-run line */
}

/* The summary: text, or with json one line; a dry run says what would go. */
static int print_gc(const struct mtc_gc_stats *st, int dry_run, json_t *would, int json)
{
	if (json && dry_run)
		return mtc_json_print(
			json_pack("{s:b, s:O, s:I, s:I, s:I, s:I}", "dry-run", 1, "would-delete-paths",
				  would, "would-delete-meta", (json_int_t)st->deleted_meta,
				  "would-delete-data", (json_int_t)st->deleted_data, "kept-meta",
				  (json_int_t)st->kept_meta, "kept-data", (json_int_t)st->kept_data));
	if (json)
		return mtc_json_print(json_pack("{s:b, s:I, s:I, s:I, s:I}", "dry-run", 0,
						"deleted-meta", (json_int_t)st->deleted_meta,
						"deleted-data", (json_int_t)st->deleted_data,
						"kept-meta", (json_int_t)st->kept_meta, "kept-data",
						(json_int_t)st->kept_data));
	if (dry_run)
		printf("%zu .meta and %zu .data to delete, kept %zu .meta and %zu .data (dry run: "
		       "nothing deleted)\n",
		       st->deleted_meta, st->deleted_data, st->kept_meta, st->kept_data);
	else
		printf("deleted %zu .meta and %zu .data, kept %zu .meta and %zu .data\n",
		       st->deleted_meta, st->deleted_data, st->kept_meta, st->kept_data);
	return fflush(stdout) == 0 ? 0 : -1;
}

int mtc_replicate_gc(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL, *keep = NULL;
	int own_only = 0, dry_run = 0, json = 0;
	double grace = 0;
	struct poptOption opts[] = {
		MTC_POPT_DIR(dir),
		MTC_POPT_CONFIG(config),
		{ "keep", 'k', POPT_ARG_STRING, &keep, 0,
		  "steps whose .meta and .data stay ('' for none)", "STEP[,STEP...]" },
		{ "own-only", '\0', POPT_ARG_NONE, &own_only, 0,
		  "keep only this node's own .meta (data parallelism after a restore)", NULL },
		{ "dry-run", 'n', POPT_ARG_NONE, &dry_run, 0, "print what would go, delete nothing",
		  NULL },
		{ "grace", '\0', POPT_ARG_DOUBLE, &grace, 0,
		  "keep any .data published less than this long ago (default 0)", "SECONDS" },
		MTC_POPT_JSON(json,
			      "print the summary as one JSON line (a dry run lists what would go in it)"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_config cfg;
	long long *steps = NULL;
	size_t nsteps = 0;
	int rc;
	if (mtc_replicate_parse(argc, argv, opts, GC_USAGE, &ctx, &rc) < 0)
		goto out;
	if ((rc = mtc_cli_required("--dir", !!dir, "--keep", !!keep, NULL))) {
		goto out;
	}
	if (parse_steps(keep, &steps, &nsteps) < 0) {
		rc = mtc_usage_error("--keep takes steps like 100,200, not '%s'", keep);
		goto out;
	}
	if (grace < 0) {
		rc = mtc_usage_error("--grace takes seconds, 0 or more");
		goto out;
	}
	if ((rc = mtc_cli_config(config, &cfg)) != MTC_EXIT_OK)
		goto out;
	json_t *would = json ? json_array() : NULL;
	struct mtc_gc_opts g = { dir, &cfg, steps, nsteps, own_only, 0, dry_run, grace };
	struct mtc_gc_stats st;
	if (mtc_gc_dry(&g, &st, print_would_delete, would) < 0)
		rc = MTC_EXIT_FAILURE;
	else
		rc = print_gc(&st, dry_run, would, json) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	json_decref(would);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	free(steps);
	free(dir);
	free(config);
	free(keep);
	return rc;
}
