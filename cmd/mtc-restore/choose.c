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
int verify_backup(struct mtc_store *s, const char *name)
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
		mtc_error("backup '%s/%s' is not intact: %s", mtc_store_url(s), name, why);
	if (v == 0 && left.n)
		snprintf(why, sizeof why,
			 "%lld temporar%s of dead writers (%lld bytes), first '%s': mtc-prune --delete "
			 "or the next mtc-backup to it removes them",
			 left.n, left.n == 1 ? "y" : "ies", left.bytes, left.first);
	if (v == 0 && left.n)
		mtc_warn("backup '%s/%s' holds %s", mtc_store_url(s), name, why);
	if (v >= 0)
		mtc_json_print(
			json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "location",
				  mtc_store_url(s), "name", name, "step", (json_int_t)info.step, "state",
				  v	   ? "damaged"
				  : left.n ? "leftovers"
					   : "intact",
				  "reason", why, "objects", (json_int_t)st.objects, "files",
				  (json_int_t)st.files, "bytes", (json_int_t)st.bytes, "leftovers",
				  (json_int_t)left.n, "leftover-bytes", (json_int_t)left.bytes,
				  "seconds", mtc_json_seconds(mtc_now() - start)));
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
