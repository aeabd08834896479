#include "modes.h"

/* The job's backup root under --backups; NULL after an error (rc says which). */
struct mtc_store *open_backups(const char *job, int missing_ok, int *rc)
{
	struct mtc_store_options opt = { .token_file = token_file,
					 .s3_endpoint = s3_endpoint,
					 .parallel = parallel };
	struct mtc_store *s;
	char err[768];

	*rc = mtc_job_store_open(backups_root, job, 0, &opt, &s, err, sizeof err);
	if (*rc == MTC_EXIT_NOTFOUND && missing_ok)
		mtc_info("%s", err);
	else if (*rc)
		mtc_error("%s", err);
	return s;
}

/* --verify: the deep check of one backup that passed the cheap one; -1 when storage fails. */
static int verify_backup(struct mtc_store *s, struct mtc_backup_info *info)
{
	struct mtc_store_options opt = { .token_file = token_file,
					 .s3_endpoint = s3_endpoint,
					 .parallel = parallel };
	struct mtc_progress *bar = mtc_progress_new(0, 0, mtc_log_level() >= MTC_LOG_WARN);
	struct mtc_verify_stats st;
	char why[sizeof info->reason];
	int v;

	mtc_info("verifying backup %s: every byte against its manifests and names", info->name);
	v = mtc_backup_verify(s, &opt, info, 0, mtc_progress_store, bar, &st, why, sizeof why);
	mtc_progress_end(bar);
	if (v < 0) {
		mtc_error("cannot verify backup '%s': %s", info->name, why);
		return -1;
	}
	if (v) {
		info->state = MTC_BACKUP_DAMAGED;
		snprintf(info->reason, sizeof info->reason, "%s", why);
	}
	mtc_info("backup %s: %lld files, %lld bytes re-hashed: %s", info->name, st.files, st.bytes,
		 v ? "damaged" : "intact");
	return 0;
}

/*
 * A backup that passed the cheap check is "listed": its metas and the sizes
 * of its data agree with its manifests, which a flipped bit does not change;
 * "verified" once --verify re-hashed it.
 */
static const char *state_text(const struct mtc_backup_info *info, int deep)
{
	if (info->state != MTC_BACKUP_VALID)
		return mtc_backup_state_name(info->state);
	return deep ? "verified" : "listed";
}

static void print_backup_line(const struct mtc_backup_info *info, long long bytes, int deep, int newest,
			      int pinned)
{
	char size[32], step[32];

	mtc_size_text(size, sizeof size, (double)bytes);
	snprintf(step, sizeof step, info->step < 0 ? "-" : "%lld", info->step);
	printf("%-1s %-16s  %-10s  %10s  %5d  %10s  %s%s%s\n", newest ? "*" : "", info->name,
	       state_text(info, deep), step, info->nodes, size, pinned ? "restore.version" : "",
	       pinned && *info->reason ? "; " : "", info->reason);
}

/*
 * --backups: every backup newest first, judged by its metas and the sizes
 * of its data (backup_check.h); with --verify the newest that passes is
 * re-hashed too, and the next one after it when it is damaged.
 */
int list_backups(const char *job, int nodes, int workers)
{
	struct mtc_backup_entry *list = NULL;
	struct mtc_store *s;
	size_t n = 0;
	char pinned[256] = "";
	const char *newest_valid = NULL;
	char pin_reason[sizeof((struct mtc_backup_info *)0)->reason] = "";
	json_t *arr;
	int rc, pin, pin_state = -1;
	size_t listed = 0;

	if (!(s = open_backups(job, 0, &rc)))
		return rc;
	arr = json_array();
	pin = mtc_backups_restore_version(s, pinned, sizeof pinned);
	if (pin < 0 || mtc_backups_list(s, &list, &n) < 0) {
		mtc_error("cannot list '%s': %s", mtc_store_url(s), mtc_store_error(s));
		mtc_store_close(s);
		json_decref(arr);
		return MTC_EXIT_FAILURE;
	}
	if (!json_out)
		printf("%-1s %-16s  %-10s  %10s  %5s  %10s  %s\n", "", "BACKUP", "STATE", "STEP",
		       "NODES", "SIZE", "NOTE");
	rc = MTC_EXIT_OK;
	for (size_t i = 0; i < n && rc == MTC_EXIT_OK; i++) {
		struct mtc_backup_info info;
		long long bytes = 0;
		int is_pinned = pin == 1 && !strcmp(pinned, list[i].name), deep = 0;
		mtc_info("checking backup %s", list[i].name);
		if (mtc_backup_judge(s, list[i].name, nodes, workers, &info, &bytes) < 0) {
			mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(s), list[i].name,
				  mtc_store_error(s));
			rc = MTC_EXIT_FAILURE;
		} else if (verify && !newest_valid && info.state == MTC_BACKUP_VALID) {
			deep = 1;
			if (verify_backup(s, &info) < 0)
				rc = MTC_EXIT_FAILURE;
		}
		if (rc == MTC_EXIT_OK && info.state == MTC_BACKUP_VALID && !newest_valid)
			newest_valid = list[i].name;
		if (rc == MTC_EXIT_OK && json_out)
			json_array_append_new(arr,
					      json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:b, s:b, s:b}",
							"backup", list[i].name, "state",
							mtc_backup_state_name(info.state), "reason",
							info.reason, "step",
							info.step >= 0 ? json_integer(info.step)
								       : json_null(),
							"nodes", info.nodes, "workers", info.workers,
							"bytes", (json_int_t)bytes, "verified", deep,
							"newest-valid", newest_valid == list[i].name,
							"pinned", is_pinned));
		else if (rc == MTC_EXIT_OK)
			print_backup_line(&info, bytes, deep, newest_valid == list[i].name, is_pinned);
		if (rc == MTC_EXIT_OK && info.state == MTC_BACKUP_VALID && !deep)
			listed++;
		if (rc == MTC_EXIT_OK && is_pinned) {
			pin_state = info.state;
			snprintf(pin_reason, sizeof pin_reason, "%s", info.reason);
		}
		mtc_backup_info_free(&info);
	}
	if (rc == MTC_EXIT_OK && json_out)
		mtc_json_print(json_pack("{s:s, s:s, s:o, s:o, s:O}", "location", backups_root, "job",
					 job, "restore-version",
					 pin == 1 ? json_string(pinned) : json_null(), "newest-valid",
					 newest_valid ? json_string(newest_valid) : json_null(),
					 "backups", arr));
	else if (rc == MTC_EXIT_OK && pin == 1)
		printf("restore.version: %s\n", pinned);
	if (rc == MTC_EXIT_OK && !json_out && listed)
		printf("listed: every .meta there, its data at the sizes its manifest gives; not re-hashed "
		       "(--verify re-hashes the newest)\n");
	if (rc == MTC_EXIT_OK && pin == 1 && pin_state != MTC_BACKUP_VALID)
		mtc_warn("restore.version names backup '%s', which %s%s: every restore from '%s' fails "
			 "until it is pinned to a valid backup or unpinned (mtc-restore --unpin)",
			 pinned,
			 pin_state < 0 || pin_state == MTC_BACKUP_EMPTY ? "does not exist"
									: "is not valid: ",
			 pin_state < 0 || pin_state == MTC_BACKUP_EMPTY ? "" : pin_reason,
			 mtc_store_url(s));
	if (rc == MTC_EXIT_OK && !newest_valid) {
		mtc_error("no valid backup among %zu at '%s'", n, mtc_store_url(s));
		rc = MTC_EXIT_NOTFOUND;
	}
	json_decref(arr);
	mtc_backups_free_list(list, n);
	mtc_store_close(s);
	return rc;
}
