/*
 * mtc-prune: retention for a job's backups, backup-warden compatible.
 *   1. find the directories of backups: LOCATION/JOB (--job or --config),
 *      the -p PATH itself, or the sections of a backup-warden INI file
 *   2. read the names (or --list) and decide with the policy (lib/retention.h)
 *   3. protect the newest intact backup (--verify: the newest that verifies),
 *      restore.version, backups in progress
 *   4. report, then with --delete delete the rest (lib/backups.h order)
 */
#include "common/interrupt.h"
#include "mtc-prune/prune.h"

/* The options, as main parses them (mtc-prune/prune.h). */
char **counts[MTC_FREQ_COUNT]; /* every use of --hourly etc.; the last one counts */
int prefer_recent, relaxed, do_delete, dry_run, print_deleted, print_kept, print_not_deleted, json_out,
	utc, debug, silent, show_version, verify;
char *location, *path_opt, *list_file, *pattern, *grace_text, *config_file, *token_file, *s3_endpoint,
	*job;
char **include, **exclude, **include_list, **exclude_list;
int parallel = MTC_CLI_UNSET, compat_flag;
struct mtc_warden_config ini;
struct mtc_store_options store_opt;
long long grace;

/* --hourly N|always and its like: how many backups of the period to keep. */
#define PERIOD_OPTION(freq, name, keep)                                        \
	{                                                                      \
		name, '\0', POPT_ARG_ARGV, &counts[freq], 0,                   \
			name " backups to keep (default " keep ")", "N|always" \
	}

int main(int argc, const char **argv)
{
	struct poptOption policy_opts[] = {
		PERIOD_OPTION(MTC_MINUTELY, "minutely", "0"),
		PERIOD_OPTION(MTC_HOURLY, "hourly", "72"),
		PERIOD_OPTION(MTC_DAILY, "daily", "7"),
		PERIOD_OPTION(MTC_WEEKLY, "weekly", "6"),
		PERIOD_OPTION(MTC_MONTHLY, "monthly", "12"),
		PERIOD_OPTION(MTC_YEARLY, "yearly", "always"),
		{ "prefer-recent", '\0', POPT_ARG_NONE, &prefer_recent, 0,
		  "keep the newest backup of each period, not the oldest", NULL },
		{ "relaxed", '\0', POPT_ARG_NONE, &relaxed, 0, "do not enforce the time windows", NULL },
		{ "include", '\0', POPT_ARG_ARGV, &include, 0, "only backups matching GLOB (repeatable)",
		  "GLOB" },
		{ "exclude", '\0', POPT_ARG_ARGV, &exclude, 0,
		  "never backups matching GLOB (repeatable)", "GLOB" },
		{ "include-list", 'I', POPT_ARG_ARGV, &include_list, 0,
		  "comma-separated --include globs", "GLOB,..." },
		{ "exclude-list", 'E', POPT_ARG_ARGV, &exclude_list, 0,
		  "comma-separated --exclude globs", "GLOB,..." },
		{ "timestamp-pattern", 't', POPT_ARG_STRING, &pattern, 0,
		  "regex with named groups year, month, day[, hour, minute, second]", "REGEX" },
		{ "utc", '\0', POPT_ARG_NONE, &utc, 0, "accepted; times are always UTC", NULL },
		POPT_TABLEEND
	};
	struct poptOption action_opts[] = {
		MTC_POPT_JOB(job,
			     "the job whose backups are at LOCATION/NAME (LOCATION is the bucket root)"),
		{ "path", 'p', POPT_ARG_STRING, &path_opt, 0,
		  "the directory that holds the backups (backup-warden's -p)", "PATH" },
		{ "list", '\0', POPT_ARG_STRING, &list_file, 0,
		  "decide for the names in FILE (- for stdin); deletes nothing", "FILE" },
		{ "config", 'c', POPT_ARG_STRING, &config_file, 0,
		  "a backup-warden INI file, or the accepted config (JSON: the job's name and nodes)",
		  "FILE" },
		{ "delete", '\0', POPT_ARG_NONE, &do_delete, 0, "delete (the default is a dry run)",
		  NULL },
		{ "dry-run", 'n', POPT_ARG_NONE, &dry_run, 0, "delete nothing (the default)", NULL },
		MTC_POPT_VERIFY(
			verify,
			"protect the newest backup that re-hashes to its names, not only the newest intact by size"),
		{ "grace", '\0', POPT_ARG_STRING, &grace_text, 0,
		  "a backup younger than this that is not valid is being written (default 6h)",
		  "DURATION" },
		{ "print-deleted", '\0', POPT_ARG_NONE, &print_deleted, 0,
		  "print only the paths deleted (in a dry run: to delete), one a line", NULL },
		{ "print-not-deleted", '\0', POPT_ARG_NONE, &print_not_deleted, 0,
		  "print only the paths kept, one a line", NULL },
		{ "print-kept", '\0', POPT_ARG_NONE, &print_kept, 0,
		  "print only the names kept, one a line", NULL },
		MTC_POPT_JSON(json_out, "print one JSON line a backup, then a summary line"),
		{ "silent", '\0', POPT_ARG_NONE, &silent, 0, "errors only, and no table", NULL },
		{ "debug", '\0', POPT_ARG_NONE, &debug, 0, "debug log output (as -vv)", NULL },
		MTC_POPT_STORE_AUTH(token_file, s3_endpoint),
		MTC_POPT_PARALLEL_FOR(
			parallel,
			"transfers in flight: gs:// requests, threads on a directory (default 32)"),
		{ NULL, 'V', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &show_version, 0, NULL, NULL },
		{ "no-recency-check", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0,
		  NULL, NULL },
		{ "no-update-check", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0,
		  NULL, NULL },
		POPT_TABLEEND
	};
	struct poptOption opts[] = { { NULL, '\0', POPT_ARG_INCLUDE_TABLE, action_opts, 0,
				       "Options:", NULL },
				     { NULL, '\0', POPT_ARG_INCLUDE_TABLE, policy_opts, 0,
				       "Policy (backup-warden's):", NULL },
				     MTC_POPT_COMMON POPT_TABLEEND };
	struct rules cli = { 0 }, *all = NULL;
	struct totals t = { 0 };
	poptContext ctx;
	const char *arg;
	int rc, ini_mode = 0, n_prints;

	if (mtc_cli_start("mtc-prune", argc, argv, opts,
			  "[OPTIONS] LOCATION --job NAME | -p PATH | --list FILE | -c FILE.ini", &ctx,
			  &rc) < 0)
		goto out;
	if (mtc_log_level() == MTC_LOG_ERROR)
		silent = 1; /* -q: errors only, as --silent */
	if (show_version) {
		printf("%s (mtc) %s\n", mtc_prog(), MTC_VERSION);
		rc = MTC_EXIT_OK;
		goto out;
	}
	if (debug)
		mtc_log_set_level(MTC_LOG_DEBUG);
	if (silent)
		mtc_log_set_level(MTC_LOG_ERROR);
	while ((arg = poptGetArg(ctx))) {
		if (location) {
			rc = mtc_usage_error("one LOCATION only ('%s' and '%s')", location, arg);
			goto out;
		}
		location = (char *)arg;
	}
	n_prints = !!print_deleted + !!print_kept + !!print_not_deleted;
	if (n_prints > 1 || (json_out && n_prints)) {
		rc = mtc_usage_error(
			"--print-deleted, --print-not-deleted, --print-kept and --json do not mix");
		goto out;
	}
	if (dry_run && do_delete) {
		rc = mtc_usage_error("--dry-run and --delete do not mix");
		goto out;
	}
	if (debug && silent) {
		rc = mtc_usage_error("--debug and --silent do not mix");
		goto out;
	}
	if (config_file && strcmp(config_file, "-")) {
		int is_json = mtc_warden_ini_is_json(config_file);
		if (is_json < 0) {
			int e = errno;
			mtc_error("cannot read config '%s': %s", config_file, strerror(e));
			rc = e == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_USAGE;
			goto out;
		}
		ini_mode = !is_json;
	}
	if ((rc = mtc_cli_count("--parallel", &parallel)) != MTC_EXIT_OK)
		goto out;
	if ((rc = check_modes(ini_mode)) != MTC_EXIT_OK)
		goto out;
	if (parse_duration(grace_text ? grace_text : "6h", &grace) < 0) {
		rc = mtc_usage_error("--grace: '%s' is not a duration (like 30m, 6h, 2d)", grace_text);
		goto out;
	}
	store_opt = (struct mtc_store_options){ .token_file = token_file,
						.s3_endpoint = s3_endpoint,
						.parallel = parallel };
	mtc_cli_on_interrupt(do_delete);
	if (ini_mode) {
		if ((rc = load_ini(&all)) != MTC_EXIT_OK)
			goto out;
		rc = prune_ini(all, &t);
	} else {
		if ((rc = parse_policy(&cli.policy)) != MTC_EXIT_OK)
			goto out;
		rc = rules_init(&cli, pattern, include, exclude, include_list, exclude_list);
		if (rc != MTC_EXIT_OK)
			goto out;
		rc = list_file ? prune_list(&cli, &t) : prune_location(&cli, &t);
	}
	if (t.paths && report_summary(&t, ini_mode ? NULL : &cli) < 0 && rc == MTC_EXIT_OK)
		rc = MTC_EXIT_FAILURE;
	if (fflush(stdout) != 0 && rc == MTC_EXIT_OK) {
		mtc_error("cannot write the report:");
		rc = MTC_EXIT_FAILURE;
	}
out:
	rules_free(&cli);
	for (size_t i = 0; all && i < ini.n; i++)
		rules_free(&all[i]);
	free(all);
	mtc_warden_ini_free(&ini);
	free_options();
	poptFreeContext(ctx);
	return rc;
}
