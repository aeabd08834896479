/*
 * mtc-prune: retention for a job's backups, backup-warden compatible.
 *   1. read the names (a backup root through the store, or --list)
 *   2. decide with the policy (lib/retention.h)
 *   3. protect the newest valid backup, restore.version, backups in progress
 *   4. report, then with --delete delete the rest (lib/backups.h order)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fnmatch.h>
#include <time.h>
#include <sys/stat.h>

#include <jansson.h>

#include "backups.h"
#include "cli.h"
#include "config.h"
#include "exitcode.h"
#include "log.h"
#include "retention.h"
#include "store.h"
#include "timestamp.h"
#include "xalloc.h"

enum state { UNCHECKED = -1 };

struct backup {
	char *name;
	int state; /* enum mtc_backup_state, or UNCHECKED */
	char reason[256];
	int deleted;
};

static char **counts[MTC_FREQ_COUNT]; /* every use of --hourly etc.; the last one counts */
static int prefer_recent, relaxed, do_delete, print_deleted, print_kept, json_out, utc;
static char *location, *path_opt, *list_file, *pattern, *grace_text, *config_file,
	    *token_file;
static char **include, **exclude, **include_list, **exclude_list;
static int parallel, compat_flag;
static struct mtc_retention_policy policy;

static struct mtc_ts_pattern *ts;
static char **globs_in, **globs_out;
static size_t n_in, n_out;

static void add_globs(char ***dst, size_t *n, char **src, int split)
{
	for (; src && *src; src++) {
		char *copy = xstrdup(*src), *save, *tok;
		for (tok = strtok_r(copy, split ? "," : "", &save); tok;
		     tok = strtok_r(NULL, split ? "," : "", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			size_t len = strlen(tok);
			while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
				tok[--len] = '\0';
			if (!len)
				continue;
			*dst = xrealloc(*dst, (*n + 1) * sizeof **dst);
			(*dst)[(*n)++] = xstrdup(tok);
		}
		free(copy);
	}
}

static int matches_any(char **globs, size_t n, const char *name, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], name, FNM_NOESCAPE) == 0 ||
		    (path && fnmatch(globs[i], path, FNM_NOESCAPE) == 0))
			return 1;
	return 0;
}

static int selected(const char *name, const char *path)
{
	if (matches_any(globs_out, n_out, name, path))
		return 0;
	return !n_in || matches_any(globs_in, n_in, name, path);
}

static int parse_duration(const char *s, long long *out)
{
	char *end;
	long long v;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case '\0': case 's': break;
	case 'm': v *= 60; break;
	case 'h': v *= 3600; break;
	case 'd': v *= 86400; break;
	default: return -1;
	}
	if (*end && end[1])
		return -1;
	*out = v;
	return 0;
}

static const char *base_of(const char *s)
{
	const char *slash = strrchr(s, '/');
	return slash && slash[1] ? slash + 1 : s;
}

static void add_item(struct mtc_retention_item **items, struct backup **bs, size_t *n,
		     const char *name, const char *root)
{
	time_t when;
	char *path = root ? xasprintf("%s/%s", root, name) : NULL;

	if (mtc_ts_parse(ts, base_of(name), &when) < 0 || !selected(name, path)) {
		mtc_debug("'%s' is not a backup here", name);
		free(path);
		return;
	}
	free(path);
	*items = xrealloc(*items, (*n + 1) * sizeof **items);
	*bs = xrealloc(*bs, (*n + 1) * sizeof **bs);
	(*bs)[*n] = (struct backup){ .name = xstrdup(name), .state = UNCHECKED };
	(*items)[*n] = (struct mtc_retention_item){ .name = (*bs)[*n].name, .when = when };
	(*n)++;
}

static int read_list(const char *file, struct mtc_retention_item **items, struct backup **bs,
		     size_t *n)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f) {
		mtc_error("cannot open '%s':", file);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len)
			add_item(items, bs, n, line, NULL);
	}
	free(line);
	if (ferror(f)) {
		mtc_error("cannot read '%s':", file);
		if (f != stdin)
			fclose(f);
		return -1;
	}
	if (f != stdin)
		fclose(f);
	return 0;
}

static struct backup *backup_of(struct backup *bs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (bs[i].name == name)
			return &bs[i];
	return NULL;
}

static int inspect(struct mtc_store *s, struct backup *b, int nodes, int workers)
{
	struct mtc_backup_info info;
	if (b->state != UNCHECKED)
		return 0;
	if (mtc_backup_inspect(s, b->name, nodes, workers, &info) < 0) {
		mtc_error("cannot read backup '%s': %s", b->name, mtc_store_error(s));
		mtc_backup_info_free(&info);
		return -1;
	}
	b->state = (int)info.state;
	snprintf(b->reason, sizeof b->reason, "%s", info.reason);
	mtc_backup_info_free(&info);
	return 0;
}

/*
 * Items are sorted oldest first. The newest valid backup, the one in
 * restore.version and every backup younger than the grace period that is
 * not valid (being written) are kept whatever the policy says.
 */
static int protect(struct mtc_store *s, struct mtc_retention_item *items, struct backup *bs,
		   size_t n, const char *restore_version, long long grace, int nodes, int workers)
{
	time_t now = time(NULL);
	int found_valid = 0;

	for (size_t k = n; k-- > 0;) {
		struct backup *b = backup_of(bs, n, items[k].name);
		int young = (long long)(now - items[k].when) < grace;
		if (restore_version && !strcmp(items[k].name, restore_version))
			items[k].protects |= MTC_PROTECT_RESTORE_VERSION;
		if (found_valid && !young)
			continue;
		if (inspect(s, b, nodes, workers) < 0)
			return -1;
		if (b->state == MTC_BACKUP_VALID && !found_valid) {
			items[k].protects |= MTC_PROTECT_NEWEST_VALID;
			found_valid = 1;
		} else if (b->state != MTC_BACKUP_VALID && young) {
			items[k].protects |= MTC_PROTECT_IN_PROGRESS;
		}
	}
	if (!found_valid && n)
		mtc_warn("no valid backup among %zu", n);
	return 0;
}

static void iso_time(time_t t, char out[32])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *action_of(const struct mtc_retention_item *it, const struct backup *b)
{
	if (mtc_retention_kept(it))
		return "keep";
	if (!do_delete)
		return "delete";
	return b->deleted ? "deleted" : "failed";
}

static void report_json(const char *where, struct mtc_retention_item *items, struct backup *bs,
			size_t n)
{
	json_t *root = json_object(), *arr = json_array(), *pol = json_object();
	size_t kept = 0;
	char *text;

	for (int f = 0; f < MTC_FREQ_COUNT; f++) {
		long long c = policy.count[f];
		json_object_set_new(pol, mtc_freq_name((enum mtc_freq)f),
				    c == MTC_KEEP_ALWAYS ? json_string("always") : json_integer(c));
	}
	json_object_set_new(pol, "prefer-recent", json_boolean(policy.prefer_recent));
	json_object_set_new(pol, "relaxed", json_boolean(policy.relaxed));
	for (size_t i = 0; i < n; i++) {
		struct backup *b = backup_of(bs, n, items[i].name);
		json_t *o = json_object(), *why = json_array();
		char when[32];
		iso_time(items[i].when, when);
		json_object_set_new(o, "name", json_string(items[i].name));
		json_object_set_new(o, "time", json_string(when));
		json_object_set_new(o, "action", json_string(action_of(&items[i], b)));
		for (int f = 0; f < MTC_FREQ_COUNT; f++)
			if (items[i].kept_by & (1u << f))
				json_array_append_new(why, json_string(mtc_freq_name((enum mtc_freq)f)));
		if (items[i].protects & MTC_PROTECT_NEWEST_VALID)
			json_array_append_new(why, json_string("newest valid"));
		if (items[i].protects & MTC_PROTECT_RESTORE_VERSION)
			json_array_append_new(why, json_string("restore.version"));
		if (items[i].protects & MTC_PROTECT_IN_PROGRESS)
			json_array_append_new(why, json_string("in progress"));
		json_object_set_new(o, "reasons", why);
		json_object_set_new(o, "state",
				    b->state == UNCHECKED
					    ? json_null()
					    : json_string(mtc_backup_state_name((enum mtc_backup_state)b->state)));
		if (b->reason[0])
			json_object_set_new(o, "why", json_string(b->reason));
		json_array_append_new(arr, o);
		kept += mtc_retention_kept(&items[i]);
	}
	json_object_set_new(root, "location", where ? json_string(where) : json_null());
	json_object_set_new(root, "dry_run", json_boolean(!do_delete));
	json_object_set_new(root, "policy", pol);
	json_object_set_new(root, "backups", arr);
	json_object_set_new(root, "kept", json_integer((json_int_t)kept));
	json_object_set_new(root, "deleted", json_integer((json_int_t)(n - kept)));
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(root);
}

static void report(const char *where, struct mtc_retention_item *items, struct backup *bs,
		   size_t n)
{
	size_t kept = 0, width = 0;

	if (json_out) {
		report_json(where, items, bs, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct backup *b = backup_of(bs, n, items[i].name);
		int keep = mtc_retention_kept(&items[i]);
		if (print_kept && keep)
			printf("%s\n", items[i].name);
		if (print_deleted && !keep && (!do_delete || b->deleted))
			printf("%s\n", items[i].name);
		if (strlen(items[i].name) > width)
			width = strlen(items[i].name);
		kept += keep;
	}
	if (print_kept || print_deleted)
		return;
	for (size_t i = 0; i < n; i++) {
		struct backup *b = backup_of(bs, n, items[i].name);
		char why[256];
		mtc_retention_reasons(&items[i], why, sizeof why);
		if (why[0])
			printf("%-8s %-*s  %s\n", action_of(&items[i], b), (int)width, items[i].name, why);
		else
			printf("%-8s %s\n", action_of(&items[i], b), items[i].name);
	}
	printf("%zu backups: %zu kept, %zu %s\n", n, kept, n - kept,
	       do_delete ? "deleted" : "to delete (dry run: nothing deleted without --delete)");
}

static int delete_rest(struct mtc_store *s, struct mtc_retention_item *items, struct backup *bs,
		       size_t n)
{
	int rc = MTC_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		struct backup *b = backup_of(bs, n, items[i].name);
		if (mtc_retention_kept(&items[i]))
			continue;
		if (mtc_backup_delete(s, b->name) < 0) {
			mtc_error("cannot delete backup '%s': %s", b->name, mtc_store_error(s));
			rc = MTC_EXIT_FAILURE;
			continue;
		}
		b->deleted = 1;
		mtc_info("deleted '%s'", b->name);
	}
	return rc;
}

static int is_dir(const char *url)
{
	struct stat st;
	const char *path = strncmp(url, "file://", 7) ? url : url + 7;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int parse_policy(struct mtc_retention_policy *p)
{
	static const char *defaults[MTC_FREQ_COUNT] = { "0", "72", "7", "6", "12", "always" };
	mtc_retention_defaults(p);
	p->prefer_recent = prefer_recent;
	p->relaxed = relaxed;
	for (int f = 0; f < MTC_FREQ_COUNT; f++) {
		const char *text = defaults[f];
		for (char **c = counts[f]; c && *c; c++)
			text = *c;
		if (mtc_retention_parse_count(text, &p->count[f]) < 0)
			return mtc_usage_error("--%s: '%s' is not a count, a sum or 'always'",
					       mtc_freq_name((enum mtc_freq)f), text);
	}
	if (mtc_retention_keeps_nothing(p))
		return mtc_usage_error("refusing a policy where every count is 0: it would delete every backup");
	return -1;
}

static int run(long long grace)
{
	struct mtc_retention_item *items = NULL;
	struct backup *bs = NULL;
	struct mtc_store *s = NULL;
	struct mtc_store_options so = { .token_file = token_file, .parallel = parallel };
	struct mtc_config cfg = { 0 };
	char err[512], rv[4096];
	char **dirs = NULL;
	size_t n = 0, ndirs = 0;
	int rc = MTC_EXIT_FAILURE, have_rv = 0, nodes = 0, workers = 0;
	char *root = NULL;

	if (list_file) {
		if (read_list(list_file, &items, &bs, &n) == 0) {
			mtc_retention_apply(&policy, items, n);
			report(NULL, items, bs, n);
			rc = MTC_EXIT_OK;
		}
		goto out;
	}
	if (config_file) {
		if (mtc_config_load(config_file, &cfg, err, sizeof err) < 0) {
			mtc_error("cannot load config '%s': %s", config_file, err);
			goto out;
		}
		nodes = cfg.nodes;
		workers = cfg.workers_per_node;
		root = xasprintf("%s/%s", location, cfg.job_name);
	} else {
		root = xstrdup(location);
	}
	if (mtc_store_open(root, &so, &s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", root, err);
		rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
		goto out;
	}
	if (!mtc_store_is_remote(s) && !is_dir(root)) {
		errno = ENOENT;
		mtc_error("cannot open '%s':", root);
		rc = MTC_EXIT_NOTFOUND;
		goto out;
	}
	if (mtc_backups_list_dirs(s, &dirs, &ndirs) < 0) {
		mtc_error("cannot list '%s': %s", root, mtc_store_error(s));
		rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
		goto out;
	}
	for (size_t i = 0; i < ndirs; i++)
		add_item(&items, &bs, &n, dirs[i], root);
	have_rv = mtc_backups_restore_version(s, rv, sizeof rv);
	if (have_rv < 0) {
		mtc_error("cannot read '%s/restore.version': %s", root, mtc_store_error(s));
		goto out;
	}
	mtc_retention_apply(&policy, items, n);
	if (protect(s, items, bs, n, have_rv ? rv : NULL, grace, nodes, workers) < 0)
		goto out;
	rc = do_delete ? delete_rest(s, items, bs, n) : MTC_EXIT_OK;
	report(root, items, bs, n);
out:
	if (fflush(stdout) != 0 && rc == MTC_EXIT_OK) {
		mtc_error("cannot write the report:");
		rc = MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; i < n; i++)
		free(bs[i].name);
	free(bs);
	free(items);
	mtc_backups_free_names(dirs, ndirs);
	if (s)
		mtc_store_close(s);
	if (config_file && cfg.job_name)
		mtc_config_free(&cfg);
	free(root);
	return rc;
}

static void free_argv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void free_options(void)
{
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		free_argv(counts[f]);
	free(path_opt);
	free(list_file);
	free(pattern);
	free(grace_text);
	free(config_file);
	free(token_file);
	free_argv(include);
	free_argv(exclude);
	free_argv(include_list);
	free_argv(exclude_list);
}

int main(int argc, const char **argv)
{
	struct poptOption policy_opts[] = {
		{ "minutely", '\0', POPT_ARG_ARGV, &counts[MTC_MINUTELY], 0, "minutely backups to keep (default 0)", "N|always" },
		{ "hourly", '\0', POPT_ARG_ARGV, &counts[MTC_HOURLY], 0, "hourly backups to keep (default 72)", "N|always" },
		{ "daily", '\0', POPT_ARG_ARGV, &counts[MTC_DAILY], 0, "daily backups to keep (default 7)", "N|always" },
		{ "weekly", '\0', POPT_ARG_ARGV, &counts[MTC_WEEKLY], 0, "weekly backups to keep (default 6)", "N|always" },
		{ "monthly", '\0', POPT_ARG_ARGV, &counts[MTC_MONTHLY], 0, "monthly backups to keep (default 12)", "N|always" },
		{ "yearly", '\0', POPT_ARG_ARGV, &counts[MTC_YEARLY], 0, "yearly backups to keep (default always)", "N|always" },
		{ "prefer-recent", '\0', POPT_ARG_NONE, &prefer_recent, 0, "keep the newest backup of each period, not the oldest", NULL },
		{ "relaxed", '\0', POPT_ARG_NONE, &relaxed, 0, "do not enforce the time windows", NULL },
		{ "include", '\0', POPT_ARG_ARGV, &include, 0, "only backups matching GLOB (repeatable)", "GLOB" },
		{ "exclude", '\0', POPT_ARG_ARGV, &exclude, 0, "never backups matching GLOB (repeatable)", "GLOB" },
		{ "include-list", 'I', POPT_ARG_ARGV, &include_list, 0, "comma-separated --include globs", "GLOB,..." },
		{ "exclude-list", 'E', POPT_ARG_ARGV, &exclude_list, 0, "comma-separated --exclude globs", "GLOB,..." },
		{ "timestamp-pattern", 't', POPT_ARG_STRING, &pattern, 0, "regex with named groups year, month, day[, hour, minute, second]", "REGEX" },
		{ "utc", '\0', POPT_ARG_NONE, &utc, 0, "accepted; times are always UTC", NULL },
		POPT_TABLEEND
	};
	struct poptOption action_opts[] = {
		{ "path", 'p', POPT_ARG_STRING, &path_opt, 0, "the job's backup root (as backup-warden spells it)", "LOCATION" },
		{ "list", '\0', POPT_ARG_STRING, &list_file, 0, "decide for the names in FILE (- for stdin); deletes nothing", "FILE" },
		{ "config", 'c', POPT_ARG_STRING, &config_file, 0, "accepted config: LOCATION is the bucket root, job-name and nodes come from it", "FILE" },
		{ "delete", '\0', POPT_ARG_NONE, &do_delete, 0, "delete (the default is a dry run)", NULL },
		{ "grace", '\0', POPT_ARG_STRING, &grace_text, 0, "a backup younger than this that is not valid is being written (default 6h)", "DURATION" },
		{ "print-deleted", '\0', POPT_ARG_NONE, &print_deleted, 0, "print only the names deleted, one a line", NULL },
		{ "print-kept", '\0', POPT_ARG_NONE, &print_kept, 0, "print only the names kept, one a line", NULL },
		{ "print-not-deleted", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &print_kept, 0, "same as --print-kept", NULL },
		{ "json", '\0', POPT_ARG_NONE, &json_out, 0, "print the decisions as JSON", NULL },
		{ "gcs-token-file", '\0', POPT_ARG_STRING, &token_file, 0, "gs:// bearer token file (else $MTC_GCS_TOKEN, credentials, metadata server)", "FILE" },
		{ "parallel", '\0', POPT_ARG_INT, &parallel, 0, "transfers in flight: gs:// requests, threads on a directory (default 32)", "N" },
		{ "silent", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0, NULL, NULL },
		{ "no-recency-check", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0, NULL, NULL },
		{ "no-update-check", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0, NULL, NULL },
		POPT_TABLEEND
	};
	struct poptOption opts[] = {
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, action_opts, 0, "Options:", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, policy_opts, 0, "Policy (backup-warden's):", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	long long grace;
	char err[256];
	const char *arg;
	int rc;

	mtc_log_init(argv[0]);
	ctx = mtc_cli_context("mtc-prune", argc, argv, opts, "[OPTIONS] LOCATION | --list FILE");
	if ((rc = mtc_cli_parse(ctx)) >= 0)
		goto out;
	location = path_opt;
	while ((arg = poptGetArg(ctx))) {
		if (location) {
			rc = mtc_usage_error("one LOCATION only ('%s' and '%s')", location, arg);
			goto out;
		}
		location = (char *)arg;
	}
	if (!location == !list_file) {
		rc = mtc_usage_error(list_file ? "--list and a LOCATION do not mix"
					       : "a LOCATION (or --list FILE) is needed");
		goto out;
	}
	if (print_deleted && print_kept) {
		rc = mtc_usage_error("--print-deleted and --print-kept do not mix");
		goto out;
	}
	if (json_out && (print_deleted || print_kept)) {
		rc = mtc_usage_error("--json and --print-* do not mix");
		goto out;
	}
	if (list_file && (do_delete || config_file)) {
		rc = mtc_usage_error("--list decides only: no --delete, no --config");
		goto out;
	}
	if (parse_duration(grace_text ? grace_text : "6h", &grace) < 0) {
		rc = mtc_usage_error("--grace: '%s' is not a duration (like 30m, 6h, 2d)", grace_text);
		goto out;
	}
	if ((rc = parse_policy(&policy)) >= 0)
		goto out;
	if (mtc_ts_compile(pattern, &ts, err, sizeof err) < 0) {
		rc = mtc_usage_error("--timestamp-pattern: %s", err);
		goto out;
	}
	add_globs(&globs_in, &n_in, include, 0);
	add_globs(&globs_in, &n_in, include_list, 1);
	add_globs(&globs_out, &n_out, exclude, 0);
	add_globs(&globs_out, &n_out, exclude_list, 1);
	rc = run(grace);
out:
	mtc_ts_free(ts);
	for (size_t i = 0; i < n_in; i++)
		free(globs_in[i]);
	for (size_t i = 0; i < n_out; i++)
		free(globs_out[i]);
	free(globs_in);
	free(globs_out);
	free_options();
	poptFreeContext(ctx);
	return rc;
}
