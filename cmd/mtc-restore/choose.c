#include "restore.h"

/* The job's backup root (lib/backup_location.h); NULL with *rc set after an error. */
struct mtc_store *open_job(const char *location, const char *job, int *rc)
{
	struct mtc_store_options opt = store_options();
	struct mtc_store *s;
	char err[768];

	*rc = mtc_job_store_open(location, job, 0, &opt, &s, err, sizeof err);
	if (*rc)
		mtc_error("%s", err);
	return s;
}

/* Judges a backup by its metas and the sizes of its data; -1 (info freed) when storage fails. */
int judge(struct mtc_store *s, const char *name, struct mtc_backup_info *info)
{
	if (mtc_backup_judge(s, name, 0, 0, info, NULL) == 0)
		return 0;
	mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(s), name, mtc_store_error(s));
	mtc_backup_info_free(info);
	return -1;
}

/* --name, else restore.version, else the newest valid backup: into name. */
int choose_backup(struct mtc_store *s, char *name, size_t len)
{
	struct mtc_backup_entry *list = NULL;
	size_t n = 0;
	int rc = MTC_EXIT_NOTFOUND, pin;

	if (name_opt) {
		if (mtc_backups_list(s, &list, &n) < 0) {
			mtc_error("cannot list '%s': %s", mtc_store_url(s), mtc_store_error(s));
			return MTC_EXIT_FAILURE;
		}
		for (size_t i = 0; i < n && rc == MTC_EXIT_NOTFOUND; i++)
			if (!strcmp(list[i].name, name_opt))
				rc = MTC_EXIT_OK;
		if (rc == MTC_EXIT_NOTFOUND)
			mtc_error("no backup '%s' at '%s' (--name): %s%s", name_opt, mtc_store_url(s),
				  n ? "the newest is " : "it holds none", n ? list[0].name : "");
		mtc_backups_free_list(list, n);
		snprintf(name, len, "%s", name_opt);
		return rc;
	}
	if ((pin = mtc_backups_restore_version(s, name, len)) == 1) {
		mtc_info("restore.version names backup %s", name);
		return MTC_EXIT_OK;
	}
	if (pin < 0 || mtc_backups_list(s, &list, &n) < 0) {
		mtc_error("cannot list '%s': %s", mtc_store_url(s), mtc_store_error(s));
		return MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; i < n && rc == MTC_EXIT_NOTFOUND; i++) {
		struct mtc_backup_info info;
		if (judge(s, list[i].name, &info) < 0) {
			rc = MTC_EXIT_FAILURE;
			break;
		}
		if (info.state == MTC_BACKUP_VALID) {
			snprintf(name, len, "%s", list[i].name);
			mtc_info("the newest valid backup is %s", name);
			rc = MTC_EXIT_OK;
		} else {
			mtc_info("backup %s is %s: %s", list[i].name, mtc_backup_state_name(info.state),
				 info.reason);
		}
		mtc_backup_info_free(&info);
	}
	if (rc == MTC_EXIT_NOTFOUND)
		mtc_error("no valid backup among %zu at '%s'", n, mtc_store_url(s));
	mtc_backups_free_list(list, n);
	return rc;
}

/* The newest backup but skip that reads as valid (its metas, the sizes of its data): 1, 0 none, -1. */
static int next_valid(struct mtc_store *s, const char *skip, char *name, size_t len)
{
	struct mtc_backup_entry *list = NULL;
	size_t n = 0;
	int found = 0;

	if (mtc_backups_list(s, &list, &n) < 0)
		return -1;
	for (size_t i = 0; i < n && !found; i++) {
		struct mtc_backup_info info;
		if (!strcmp(list[i].name, skip))
			continue;
		if (mtc_backup_judge(s, list[i].name, 0, 0, &info, NULL) < 0) {
			found = -1;
			break;
		}
		if (info.state == MTC_BACKUP_VALID) {
			snprintf(name, len, "%s", list[i].name);
			found = 1;
		}
		mtc_backup_info_free(&info);
	}
	mtc_backups_free_list(list, n);
	return found;
}

/* arg as one shell word: itself when it needs no quoting, else in single quotes. */
static void shell_word(struct mtc_buf *b, const char *arg)
{
	if (*arg &&
	    strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") ==
		    strlen(arg)) {
		mtc_buf_append(b, arg, strlen(arg));
		return;
	}
	mtc_buf_append(b, "'", 1);
	for (; *arg; arg++)
		if (*arg == '\'')
			mtc_buf_append(b, "'\\''", 4);
		else
			mtc_buf_append(b, arg, 1);
	mtc_buf_append(b, "'", 1);
}

/* This command line with --name name instead of any it had. */
static char *command_with_name(const char *name)
{
	struct mtc_buf b = MTC_BUF_INIT(1 << 16);

	mtc_buf_append(&b, mtc_prog(), strlen(mtc_prog()));
	for (int i = 1; i < cmd_argc; i++) {
		const char *a = cmd_argv[i];
		if (!strcmp(a, "--name") || !strcmp(a, "-n")) {
			i++;
			continue;
		}
		if (!strncmp(a, "--name=", 7) || (!strncmp(a, "-n", 2) && a[2]))
			continue;
		mtc_buf_append(&b, " ", 1);
		shell_word(&b, a);
	}
	mtc_buf_append(&b, " --name ", 8);
	shell_word(&b, name);
	return mtc_buf_take(&b);
}

/* A restore found backup name damaged (why): says so, and which backup to use instead. */
void report_damaged(struct mtc_store *s, const char *name, const char *why)
{
	char next[64];
	int found = next_valid(s, name, next, sizeof next);

	if (found == 1) {
		char *cmd = command_with_name(next);
		mtc_error("backup %s is damaged (%s); the newest valid one is %s: %s", name, why, next,
			  cmd);
		free(cmd);
	} else {
		mtc_error("backup %s is damaged (%s); %s", name, why,
			  found ? "the other backups cannot be listed" : "no other backup is valid");
	}
}

int state_exit(enum mtc_backup_state st)
{
	return st == MTC_BACKUP_EMPTY ? MTC_EXIT_NOTFOUND : MTC_EXIT_INTEGRITY;
}

struct leftovers {
	long long n, bytes;
	char first[256];
};

static void count_leftover(const char *where, long long bytes, void *arg)
{
	struct leftovers *l = arg;
	if (!l->n++)
		snprintf(l->first, sizeof l->first, "%s", where);
	l->bytes += bytes;
}

/*
 * --verify: every byte of the backup against its manifests and names, and
 * what dead writers left in it; nothing is written.
 */
/* 1 when nothing at all is stored under the backup's name, 0 when something is, -1 on error. */
static int backup_missing(struct mtc_store *s, const char *name)
{
	struct mtc_store_list l = { 0 };
	char *prefix = xasprintf("%s/", name);
	int rc = mtc_store_list(s, prefix, "/", &l);
	if (rc == 0)
		rc = !l.n_objects && !l.n_prefixes;
	mtc_store_list_free(&l);
	free(prefix);
	return rc < 0 ? -1 : rc;
}

/* The state --verify reports: lkg's states, and leftovers (valid, with temporaries) and missing. */
static const char *verify_state(struct mtc_store *s, const char *name, int v,
				const struct mtc_backup_info *info, long long leftovers)
{
	if (!v)
		return leftovers ? "leftovers" : "valid";
	if (info->state == MTC_BACKUP_EMPTY && backup_missing(s, name) == 1)
		return "missing";
	return mtc_backup_state_name(info->state == MTC_BACKUP_VALID ? MTC_BACKUP_DAMAGED : info->state);
}

static void print_verify(struct mtc_store *s, const char *job, const char *name, int v,
			 const struct mtc_backup_info *info, const struct mtc_verify_stats *st,
			 long long leftovers, long long leftover_bytes, const char *why, double secs)
{
	const char *state = verify_state(s, name, v, info, leftovers);
	if (!json_out) {
		printf("%s/%s/%s: %s%s%s\n", from, job, name, state, why[0] ? ": " : "", why);
		fflush(stdout);
		return;
	}
	mtc_json_print(json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}",
				 "location", from, "job", job, "backup", name, "step",
				 info->step >= 0 ? json_integer(info->step) : json_null(), "state",
				 state, "reason", why, "objects", (json_int_t)st->objects, "files",
				 (json_int_t)st->files, "bytes", (json_int_t)st->bytes, "leftovers",
				 (json_int_t)leftovers, "leftover-bytes", (json_int_t)leftover_bytes,
				 "seconds", mtc_json_seconds(secs)));
}

int verify_backup(struct mtc_store *s, const char *job, const char *name)
{
	struct mtc_store_options opt = store_options();
	struct mtc_backup_info info;
	struct mtc_verify_stats st = { 0 };
	struct mtc_progress *bar;
	struct leftovers left = { 0 };
	double start = mtc_now();
	char why[1024] = "", *prefix = xasprintf("%s/", name);
	int v, rc;
	long found = mtc_store_leftovers(s, prefix, 0, count_leftover, &left);

	free(prefix);
	if (found < 0) {
		mtc_error("cannot look for leftovers in '%s/%s': %s", mtc_store_url(s), name,
			  mtc_store_error(s));
		return MTC_EXIT_FAILURE;
	}
	if (judge(s, name, &info) < 0)
		return MTC_EXIT_FAILURE;
	if (info.state != MTC_BACKUP_VALID) {
		snprintf(why, sizeof why, "%s",
			 info.state == MTC_BACKUP_EMPTY ? "no such backup" : info.reason);
		v = 1;
	} else {
		bar = mtc_progress_new(0, 0, !no_progress && mtc_log_level() >= MTC_LOG_WARN);
		v = mtc_backup_verify(s, &opt, &info, threads, mtc_progress_store, bar, &st, why,
				      sizeof why);
		mtc_progress_end(bar);
	}
	rc = v < 0 ? MTC_EXIT_FAILURE : v ? state_exit(info.state) : MTC_EXIT_OK;
	if (v < 0)
		mtc_error("cannot verify backup '%s/%s': %s", mtc_store_url(s), name, why);
	else if (v)
		mtc_error("backup '%s/%s' is not valid: %s", mtc_store_url(s), name, why);
	if (v == 0 && left.n)
		snprintf(why, sizeof why,
			 "%lld temporar%s of dead writers (%lld bytes), first '%s': mtc-prune --delete "
			 "or the next mtc-backup to it removes them",
			 left.n, left.n == 1 ? "y" : "ies", left.bytes, left.first);
	if (v == 0 && left.n)
		mtc_warn("backup '%s/%s' holds %s", mtc_store_url(s), name, why);
	if (v >= 0)
		print_verify(s, job, name, v, &info, &st, left.n, left.bytes, why, mtc_now() - start);
	mtc_backup_info_free(&info);
	return rc;
}

/* --rank, or 0 when the backup holds one node. */
/* --rank, or 0 when the backup (info) holds one node. */
int pick_rank(const struct mtc_backup_info *info, long long *rank)
{
	*rank = 0;
	if (rank_text) {
		if (mtc_parse_uint(rank_text, rank) == 0 && *rank <= 1 << 30)
			return MTC_EXIT_OK;
		return mtc_usage_error("--rank takes a node rank, not '%s'", rank_text);
	}
	if (info->nodes > 1)
		return mtc_usage_error("backup %s holds %d nodes: say which with --rank R", info->name,
				       info->nodes);
	return MTC_EXIT_OK;
}
