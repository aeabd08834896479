/*
 * mtc-prune: retention for a job's backups, backup-warden compatible.
 *   1. find the directories of backups: LOCATION/JOB (--job or --config),
 *      the -p PATH itself, or the sections of a backup-warden INI file
 *   2. read the names (or --list) and decide with the policy (lib/retention.h)
 *   3. protect the newest intact backup (--verify: the newest that verifies),
 *      restore.version, backups in progress
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

#include "backup_check.h"
#include "backup_location.h"
#include "backups.h"
#include "common/cli.h"
#include "config.h"
#include "exitcode.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "naming.h"
#include "retention.h"
#include "store/store.h"
#include "timestamp.h"
#include "warden_ini.h"
#include "xalloc.h"

enum { UNCHECKED = -1, NAMES_SHOWN = 3, SEARCH_DEPTH = 8 };

/* How the backups of one directory are judged: the command line's, or an INI section's. */
struct rules {
	const struct mtc_warden_section *section; /* NULL: the command line */
	struct mtc_retention_policy policy;
	struct mtc_ts_pattern *ts;
	char **in, **out;
	size_t n_in, n_out;
};

struct backup {
	char *name;
	int state; /* enum mtc_backup_state, or UNCHECKED */
	char reason[256];
	int deleted;
};

/* One directory of backups under one set of rules. */
struct run {
	const char *root; /* NULL for --list */
	const struct rules *r;
	struct mtc_retention_item *items;
	struct backup *bs;
	size_t n;
	size_t ignored;
	char ignored_names[200];
	int location_named; /* mtc_job_store_open already named what is not an mtc backup name */
};

struct totals {
	size_t paths, backups, kept, deleted, failed, ignored;
};

static char **counts[MTC_FREQ_COUNT]; /* every use of --hourly etc.; the last one counts */
static int prefer_recent, relaxed, do_delete, dry_run, print_deleted, print_kept,
	print_not_deleted, json_out, utc, debug, silent, show_version, verify;
static char *location, *path_opt, *list_file, *pattern, *grace_text, *config_file, *token_file, *s3_endpoint,
	*job;
static char **include, **exclude, **include_list, **exclude_list;
static int parallel, compat_flag;
static struct mtc_warden_config ini;
static struct mtc_store_options store_opt;
static long long grace;

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

static int selected(const struct rules *r, const char *name, const char *path)
{
	if (matches_any(r->out, r->n_out, name, path))
		return 0;
	return !r->n_in || matches_any(r->in, r->n_in, name, path);
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

static char *join(const char *root, const char *name)
{
	size_t n = strlen(root);
	return xasprintf("%s%s%s", root, n && root[n - 1] == '/' ? "" : "/", name);
}

static void note_ignored(struct run *run, const char *name)
{
	size_t used = strlen(run->ignored_names);
	time_t when;
	if (run->location_named && mtc_parse_backup_name(name, &when) < 0) {
		run->ignored++;
		return;
	}
	if (run->ignored < NAMES_SHOWN)
		snprintf(run->ignored_names + used, sizeof run->ignored_names - used, "%s'%s'",
			 used ? ", " : "", name);
	else if (run->ignored == NAMES_SHOWN)
		snprintf(run->ignored_names + used, sizeof run->ignored_names - used, ", ...");
	run->ignored++;
}

/* A name without a timestamp is ignored and counted; one the globs leave out, or one of another INI section, is skipped. */
static void add_item(struct run *run, const char *name)
{
	time_t when;
	char *path = run->root ? join(run->root, name) : NULL;

	if (run->r->section && path && mtc_warden_section_for(&ini, path) != run->r->section) {
		free(path);
		return;
	}
	if (mtc_ts_parse(run->r->ts, base_of(name), &when) < 0) {
		note_ignored(run, name);
	} else if (!selected(run->r, name, path)) {
		mtc_debug("'%s' is left out by --include/--exclude", name);
	} else {
		run->items = xrealloc(run->items, (run->n + 1) * sizeof *run->items);
		run->bs = xrealloc(run->bs, (run->n + 1) * sizeof *run->bs);
		run->bs[run->n] = (struct backup){ .name = xstrdup(name), .state = UNCHECKED };
		run->items[run->n] = (struct mtc_retention_item){ .name = run->bs[run->n].name,
								  .when = when };
		run->n++;
	}
	free(path);
}

static void report_ignored(const struct run *run)
{
	if (run->ignored_names[0])
		mtc_warn("%s%s%zu name%s without a timestamp ignored (not backups): %s",
			 run->root ? run->root : "", run->root ? ": " : "", run->ignored,
			 run->ignored == 1 ? "" : "s", run->ignored_names);
}

static int read_list(const char *file, struct run *run)
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
			add_item(run, line);
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

static struct backup *backup_of(const struct run *run, const char *name)
{
	for (size_t i = 0; i < run->n; i++)
		if (run->bs[i].name == name)
			return &run->bs[i];
	return NULL;
}

/* The state by the metas and the cheap size check; with --verify a valid one is re-hashed too. */
static int inspect(struct mtc_store *s, struct backup *b, int nodes, int workers, int deep)
{
	struct mtc_backup_info info;
	struct mtc_verify_stats stats;
	char why[512];
	int rc = 0;

	if (b->state != UNCHECKED && !deep)
		return 0;
	if (mtc_backup_judge(s, b->name, nodes, workers, &info, NULL) < 0) {
		mtc_error("cannot read backup '%s': %s", b->name, mtc_store_error(s));
		mtc_backup_info_free(&info);
		return -1;
	}
	if (deep && info.state == MTC_BACKUP_VALID) {
		mtc_info("verifying '%s'", b->name);
		rc = mtc_backup_verify(s, &store_opt, &info, parallel, NULL, NULL, &stats, why,
				       sizeof why);
		if (rc < 0) {
			mtc_error("cannot verify backup '%s': %s", b->name, why);
		} else if (rc == 1) {
			info.state = MTC_BACKUP_DAMAGED;
			snprintf(info.reason, sizeof info.reason, "%.200s", why);
			mtc_warn("backup '%s' is damaged: %s", b->name, why);
		}
	}
	b->state = (int)info.state;
	snprintf(b->reason, sizeof b->reason, "%s", info.reason);
	mtc_backup_info_free(&info);
	return rc < 0 ? -1 : 0;
}

/*
 * Items are sorted oldest first. The newest intact backup (by the sizes its
 * manifests give; with --verify, the newest that re-hashes to its names),
 * the one in restore.version and every backup younger than the grace period
 * that is not valid (being written) are kept whatever the policy says.
 */
static int protect(struct mtc_store *s, struct run *run, const char *restore_version, int nodes,
		   int workers)
{
	struct mtc_retention_item *items = run->items;
	time_t now = time(NULL);
	int found = 0;

	for (size_t k = run->n; k-- > 0;) {
		struct backup *b = backup_of(run, items[k].name);
		int young = (long long)(now - items[k].when) < grace;
		if (restore_version && !strcmp(items[k].name, restore_version))
			items[k].protects |= MTC_PROTECT_RESTORE_VERSION;
		if (found && !young)
			continue;
		if (inspect(s, b, nodes, workers, verify && !found) < 0)
			return -1;
		if (b->state == MTC_BACKUP_VALID && !found) {
			items[k].protects |= MTC_PROTECT_NEWEST_VALID;
			found = 1;
		} else if (b->state != MTC_BACKUP_VALID && b->state != MTC_BACKUP_DAMAGED && young) {
			items[k].protects |= MTC_PROTECT_IN_PROGRESS;
		}
	}
	if (!found && run->n)
		mtc_warn("%s: no %s backup among %zu", run->root, verify ? "verified" : "intact",
			 run->n);
	return 0;
}

static const char *action_of(const struct mtc_retention_item *it, const struct backup *b)
{
	if (mtc_retention_kept(it))
		return "keep";
	if (!do_delete)
		return "would-delete";
	return b->deleted ? "deleted" : "failed";
}

static void reasons_json(const struct mtc_retention_item *it, json_t *why)
{
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (it->kept_by & (1u << f))
			json_array_append_new(why, json_string(mtc_freq_name((enum mtc_freq)f)));
	if (it->protects & MTC_PROTECT_NEWEST_VALID)
		json_array_append_new(why, json_string(verify ? "newest verified" : "newest valid"));
	if (it->protects & MTC_PROTECT_RESTORE_VERSION)
		json_array_append_new(why, json_string("restore.version"));
	if (it->protects & MTC_PROTECT_IN_PROGRESS)
		json_array_append_new(why, json_string("in progress"));
}

static json_t *policy_json(const struct mtc_retention_policy *p)
{
	json_t *pol = json_object();
	for (int f = 0; f < MTC_FREQ_COUNT; f++) {
		long long c = p->count[f];
		json_object_set_new(pol, mtc_freq_name((enum mtc_freq)f),
				    c == MTC_KEEP_ALWAYS ? json_string("always") : json_integer(c));
	}
	json_object_set_new(pol, "prefer-recent", json_boolean(p->prefer_recent));
	json_object_set_new(pol, "relaxed", json_boolean(p->relaxed));
	return pol;
}

/* One JSON line a backup: name, location, time, action, reasons, state. */
static int report_json(const struct run *run)
{
	int rc = 0;
	for (size_t i = 0; i < run->n; i++) {
		const struct mtc_retention_item *it = &run->items[i];
		struct backup *b = backup_of(run, it->name);
		json_t *o = json_object(), *why = json_array();
		json_object_set_new(o, "name", json_string(it->name));
		if (run->root)
			json_object_set_new(o, "location", json_string(run->root));
		if (run->r->section)
			json_object_set_new(o, "section", json_string(run->r->section->path));
		json_object_set_new(o, "time", mtc_json_seconds((double)it->when));
		json_object_set_new(o, "action", json_string(action_of(it, b)));
		reasons_json(it, why);
		json_object_set_new(o, "reasons", why);
		if (b->state != UNCHECKED)
			json_object_set_new(o, "state", json_string(mtc_backup_state_name(
								(enum mtc_backup_state)b->state)));
		if (b->reason[0])
			json_object_set_new(o, "why", json_string(b->reason));
		rc |= mtc_json_print(o);
	}
	return rc;
}

/* The reasons as the table shows them; with --verify the protected one is the newest verified. */
static void reasons_text(const struct mtc_retention_item *it, char *buf, size_t len)
{
	char plain[256], *at;
	mtc_retention_reasons(it, plain, sizeof plain);
	at = verify ? strstr(plain, "newest valid") : NULL;
	if (at)
		snprintf(buf, len, "%.*snewest verified%s", (int)(at - plain), plain, at + 12);
	else
		snprintf(buf, len, "%s", plain);
}

static void row(const struct mtc_retention_item *it, const struct backup *b, int width)
{
	char why[300];
	reasons_text(it, why, sizeof why);
	if (why[0])
		printf("%-12s %-*s  %s\n", action_of(it, b), width, it->name, why);
	else
		printf("%-12s %s\n", action_of(it, b), it->name);
}

static int report(const struct run *run, struct totals *t)
{
	size_t kept = 0, width = 0, failed = 0;

	for (size_t i = 0; i < run->n; i++) {
		const struct mtc_retention_item *it = &run->items[i];
		struct backup *b = backup_of(run, it->name);
		int keep = mtc_retention_kept(it);
		char *path = run->root ? join(run->root, it->name) : xstrdup(it->name);
		if (print_kept && keep)
			printf("%s\n", it->name);
		if (print_not_deleted && keep)
			printf("%s\n", path);
		if (print_deleted && !keep && (!do_delete || b->deleted))
			printf("%s\n", path);
		free(path);
		if (strlen(it->name) > width)
			width = strlen(it->name);
		kept += keep;
		failed += !keep && do_delete && !b->deleted;
	}
	t->paths++;
	t->backups += run->n;
	t->kept += kept;
	t->failed += failed;
	t->deleted += run->n - kept - failed;
	t->ignored += run->ignored;
	if (json_out)
		return report_json(run);
	if (print_kept || print_deleted || print_not_deleted || silent)
		return 0;
	if (run->r->section)
		printf("%s (policy of [%s])\n", run->root, run->r->section->path);
	for (size_t i = 0; i < run->n; i++)
		row(&run->items[i], backup_of(run, run->items[i].name), (int)width);
	if (do_delete)
		printf("%zu backups: %zu kept, %zu deleted%s\n", run->n, kept, run->n - kept - failed,
		       failed ? ", some failed" : "");
	else
		printf("%zu backups: %zu kept, %zu to delete (dry run: nothing deleted without --delete)\n",
		       run->n, kept, run->n - kept);
	if (run->r->section)
		printf("\n");
	return 0;
}

static int report_summary(const struct totals *t, const struct rules *r)
{
	json_t *o;
	if (!json_out)
		return 0;
	o = json_object();
	json_object_set_new(o, "summary", json_true());
	if (ini.n)
		json_object_set_new(o, "paths", json_integer((json_int_t)t->paths));
	json_object_set_new(o, "backups", json_integer((json_int_t)t->backups));
	json_object_set_new(o, "kept", json_integer((json_int_t)t->kept));
	if (do_delete) {
		json_object_set_new(o, "deleted", json_integer((json_int_t)t->deleted));
		json_object_set_new(o, "failed", json_integer((json_int_t)t->failed));
	} else {
		json_object_set_new(o, "would-delete", json_integer((json_int_t)t->deleted));
	}
	json_object_set_new(o, "ignored", json_integer((json_int_t)t->ignored));
	json_object_set_new(o, "dry-run", json_boolean(!do_delete));
	if (r)
		json_object_set_new(o, "policy", policy_json(&r->policy));
	return mtc_json_print(o);
}

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
static int open_dir(const char *root, struct mtc_store **s)
{
	char err[512];
	if (mtc_store_open(root, &store_opt, s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", root, err);
		return errno == EINVAL ? MTC_EXIT_USAGE : MTC_EXIT_FAILURE;
	}
	if (!is_dir(root)) {
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
static int prune_dir(struct mtc_store *s, const char *root, const struct rules *r, int nodes,
		     int workers, int location_named, struct totals *t)
{
	struct run run = { .root = root, .r = r, .location_named = location_named };
	char **dirs = NULL, rv[4096];
	size_t ndirs = 0;
	int rc = MTC_EXIT_FAILURE, have_rv;

	if (mtc_backups_list_dirs(s, &dirs, &ndirs) < 0) {
		mtc_error("cannot list '%s': %s", root, mtc_store_error(s));
		rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
		goto out;
	}
	mtc_debug("%s: %zu names listed", root, ndirs);
	for (size_t i = 0; i < ndirs; i++)
		add_item(&run, dirs[i]);
	if (!run.n) {
		if (run.ignored)
			mtc_error("no backups at '%s' (%zu name%s without a timestamp: %s); for a "
				  "bucket root give it as LOCATION with --job NAME", root, run.ignored,
				  run.ignored == 1 ? "" : "s", run.ignored_names);
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

static int prune_list(const struct rules *r, struct totals *t)
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
static int prune_location(const struct rules *r, struct totals *t)
{
	struct mtc_store *s = NULL;
	struct mtc_config cfg = { 0 };
	char err[1024];
	const char *name = job;
	int rc, nodes = 0, workers = 0;

	if (config_file) {
		if (mtc_config_load(config_file, &cfg, err, sizeof err) < 0) {
			mtc_error("cannot load config '%s': %s", config_file, err);
			return MTC_EXIT_FAILURE;
		}
		if (job && strcmp(job, cfg.job_name)) {
			rc = mtc_usage_error("--job %s and the config's job '%s' differ", job, cfg.job_name);
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

struct found {
	char *dir;
	const struct mtc_warden_section *section;
};

static void found_add(struct found **f, size_t *n, const char *dir,
		      const struct mtc_warden_section *section)
{
	for (size_t i = 0; i < *n; i++)
		if ((*f)[i].section == section && !strcmp((*f)[i].dir, dir))
			return;
	*f = xrealloc(*f, (*n + 1) * sizeof **f);
	(*f)[(*n)++] = (struct found){ .dir = xstrdup(dir), .section = section };
}

static const struct rules *rules_of(const struct rules *all, const struct mtc_warden_section *s)
{
	return &all[s - ini.sections];
}

/*
 * backup-warden's search: a directory whose path falls in a section and whose
 * name holds a timestamp is a backup, in a group (its parent, the section);
 * with [main] path any other directory is searched in turn, SEARCH_DEPTH deep.
 */
static int search(const char *dir, const struct rules *all, int depth, struct found **f,
		  size_t *nf)
{
	struct mtc_store *s = NULL;
	char **names = NULL;
	size_t n = 0;
	int rc = open_dir(dir, &s);

	if (!rc && mtc_backups_list_dirs(s, &names, &n) < 0) {
		mtc_error("cannot list '%s': %s", dir, mtc_store_error(s));
		rc = MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		char *path = join(dir, names[i]);
		const struct mtc_warden_section *sec = mtc_warden_section_for(&ini, path);
		time_t when;
		if (sec && mtc_ts_parse(rules_of(all, sec)->ts, names[i], &when) == 0)
			found_add(f, nf, dir, sec);
		else if (ini.main_path && depth < SEARCH_DEPTH)
			rc = search(path, all, depth + 1, f, nf);
		free(path);
	}
	mtc_backups_free_names(names, n);
	if (s)
		mtc_store_close(s);
	return rc;
}

static int prune_ini(const struct rules *all, struct totals *t)
{
	struct found *f = NULL;
	size_t nf = 0;
	int rc = MTC_EXIT_OK;

	if (ini.main_path) {
		rc = search(ini.main_path, all, 0, &f, &nf);
	} else {
		for (size_t i = 0; i < ini.n; i++) {
			int one = search(ini.sections[i].path, all, 0, &f, &nf);
			rc = rc ? rc : one;
		}
	}
	if (!nf && !rc) {
		mtc_error("no backups under '%s' in the sections of '%s'",
			  ini.main_path ? ini.main_path : ini.sections[0].path, config_file);
		rc = MTC_EXIT_NOTFOUND;
	}
	for (size_t i = 0; i < nf; i++) {
		struct mtc_store *s = NULL;
		int one = open_dir(f[i].dir, &s);
		if (!one)
			one = prune_dir(s, f[i].dir, rules_of(all, f[i].section), 0, 0, 0, t);
		if (s)
			mtc_store_close(s);
		rc = rc ? rc : one;
		free(f[i].dir);
	}
	free(f);
	return rc;
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
	return MTC_EXIT_OK;
}

static int rules_init(struct rules *r, const char *pat, char **inc, char **exc, char **inc_list,
		      char **exc_list)
{
	char err[256];
	if (mtc_ts_compile(pat, &r->ts, err, sizeof err) < 0)
		return r->section ? mtc_usage_error("'%s': [%s] timestamp_pattern: %s", config_file,
						    r->section->path, err)
				  : mtc_usage_error("--timestamp-pattern: %s", err);
	add_globs(&r->in, &r->n_in, inc, 0);
	add_globs(&r->in, &r->n_in, inc_list, 1);
	add_globs(&r->out, &r->n_out, exc, 0);
	add_globs(&r->out, &r->n_out, exc_list, 1);
	return MTC_EXIT_OK;
}

static void rules_free(struct rules *r)
{
	mtc_ts_free(r->ts);
	for (size_t i = 0; i < r->n_in; i++)
		free(r->in[i]);
	for (size_t i = 0; i < r->n_out; i++)
		free(r->out[i]);
	free(r->in);
	free(r->out);
}

/*
 * backup-warden takes only these beside its config file: the policy is the
 * file's. MTC_EXIT_OK, or the usage error's code.
 */
static int refuse_beside_ini(void)
{
	static const char *freq_flags[MTC_FREQ_COUNT] = { "--minutely", "--hourly", "--daily",
							  "--weekly", "--monthly", "--yearly" };
	const char *given = NULL;
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (counts[f])
			given = freq_flags[f];
	given = prefer_recent ? "--prefer-recent" : relaxed ? "--relaxed" : utc ? "--utc"
		: include ? "--include" : exclude ? "--exclude" : include_list ? "--include-list"
		: exclude_list ? "--exclude-list" : pattern ? "--timestamp-pattern" : path_opt ? "--path"
		: list_file ? "--list" : job ? "--job" : location ? "a LOCATION" : given;
	if (given)
		return mtc_usage_error("%s cannot be given with the backup-warden config '%s': "
				       "the file's sections say where and how to prune",
				       given, config_file);
	return MTC_EXIT_OK;
}

static int load_ini(struct rules **all)
{
	char err[512];
	if (mtc_warden_ini_load(config_file, &ini, err, sizeof err) < 0) {
		int rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_USAGE;
		mtc_error("cannot read backup-warden config '%s': %s", config_file, err);
		return rc;
	}
	for (size_t i = 0; i < ini.n_ignored; i++)
		mtc_info("'%s': [main] %s is ignored", config_file, ini.ignored[i]);
	*all = xcalloc(ini.n, sizeof **all);
	for (size_t i = 0; i < ini.n; i++) {
		const struct mtc_warden_section *sec = &ini.sections[i];
		char *inc[] = { sec->include_list, NULL }, *exc[] = { sec->exclude_list, NULL };
		int rc;
		(*all)[i].section = sec;
		(*all)[i].policy = sec->policy;
		rc = rules_init(&(*all)[i], sec->timestamp_pattern, NULL, NULL, inc, exc);
		if (rc != MTC_EXIT_OK)
			return rc;
		if (!ini.main_path && strpbrk(sec->path, "*?["))
			return mtc_usage_error("'%s': [%s] is a glob: globs need a [main] path to search below",
					       config_file, sec->path);
	}
	return MTC_EXIT_OK;
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
	free(s3_endpoint);
	free(job);
	free_argv(include);
	free_argv(exclude);
	free_argv(include_list);
	free_argv(exclude_list);
}

/* The mixtures refused before anything is read: MTC_EXIT_OK, or the usage error's code. */
static int check_modes(int ini_mode)
{
	if (ini_mode)
		return refuse_beside_ini();
	if (path_opt && location)
		return mtc_usage_error("one location only: -p '%s' or '%s'", path_opt, location);
	if (list_file && (path_opt || location))
		return mtc_usage_error("--list and a location do not mix");
	if (!list_file && !path_opt && !location)
		return mtc_usage_error("a LOCATION with --job (or --config), -p PATH or --list FILE is needed");
	if (path_opt && (job || config_file))
		return mtc_usage_error("-p names the directory of the backups itself: give the bucket "
				       "root as LOCATION with %s", job ? "--job" : "--config");
	if (list_file && (do_delete || config_file || job))
		return mtc_usage_error("--list decides only: no --delete, --config or --job");
	return MTC_EXIT_OK;
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
		{ "job", '\0', POPT_ARG_STRING, &job, 0, "the job whose backups are at LOCATION/NAME (LOCATION is the bucket root)", "NAME" },
		{ "path", 'p', POPT_ARG_STRING, &path_opt, 0, "the directory that holds the backups (backup-warden's -p)", "PATH" },
		{ "list", '\0', POPT_ARG_STRING, &list_file, 0, "decide for the names in FILE (- for stdin); deletes nothing", "FILE" },
		{ "config", 'c', POPT_ARG_STRING, &config_file, 0, "a backup-warden INI file, or the accepted config (JSON: the job's name and nodes)", "FILE" },
		{ "delete", '\0', POPT_ARG_NONE, &do_delete, 0, "delete (the default is a dry run)", NULL },
		{ "dry-run", 'n', POPT_ARG_NONE, &dry_run, 0, "delete nothing (the default)", NULL },
		{ "verify", '\0', POPT_ARG_NONE, &verify, 0, "protect the newest backup that re-hashes to its names, not only the newest intact by size", NULL },
		{ "grace", '\0', POPT_ARG_STRING, &grace_text, 0, "a backup younger than this that is not valid is being written (default 6h)", "DURATION" },
		{ "print-deleted", '\0', POPT_ARG_NONE, &print_deleted, 0, "print only the paths deleted (in a dry run: to delete), one a line", NULL },
		{ "print-not-deleted", '\0', POPT_ARG_NONE, &print_not_deleted, 0, "print only the paths kept, one a line", NULL },
		{ "print-kept", '\0', POPT_ARG_NONE, &print_kept, 0, "print only the names kept, one a line", NULL },
		{ "json", '\0', POPT_ARG_NONE, &json_out, 0, "print one JSON line a backup, then a summary line", NULL },
		{ "silent", '\0', POPT_ARG_NONE, &silent, 0, "errors only, and no table", NULL },
		{ "debug", '\0', POPT_ARG_NONE, &debug, 0, "debug log output (as -vv)", NULL },
		MTC_POPT_STORE_AUTH(token_file, s3_endpoint),
		{ "parallel", '\0', POPT_ARG_INT, &parallel, 0, "transfers in flight: gs:// requests, threads on a directory (default 32)", "N" },
		{ NULL, 'V', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &show_version, 0, NULL, NULL },
		{ "no-recency-check", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0, NULL, NULL },
		{ "no-update-check", '\0', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, &compat_flag, 0, NULL, NULL },
		POPT_TABLEEND
	};
	struct poptOption opts[] = {
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, action_opts, 0, "Options:", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, policy_opts, 0, "Policy (backup-warden's):", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	struct rules cli = { 0 }, *all = NULL;
	struct totals t = { 0 };
	poptContext ctx;
	const char *arg;
	int rc, ini_mode = 0, n_prints;

	mtc_log_init(argv[0]);
	mtc_http_init();
	ctx = mtc_cli_context("mtc-prune", argc, argv, opts,
			      "[OPTIONS] LOCATION --job NAME | -p PATH | --list FILE | -c FILE.ini");
	if (mtc_cli_parse(ctx, &rc) < 0)
		goto out;
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
		rc = mtc_usage_error("--print-deleted, --print-not-deleted, --print-kept and --json do not mix");
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
			mtc_error("cannot read config '%s':", config_file);
			rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
			goto out;
		}
		ini_mode = !is_json;
	}
	if ((rc = check_modes(ini_mode)) != MTC_EXIT_OK)
		goto out;
	if (parse_duration(grace_text ? grace_text : "6h", &grace) < 0) {
		rc = mtc_usage_error("--grace: '%s' is not a duration (like 30m, 6h, 2d)", grace_text);
		goto out;
	}
	store_opt = (struct mtc_store_options){ .token_file = token_file,
						.s3_endpoint = s3_endpoint,
						.parallel = parallel };
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
