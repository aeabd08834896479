#include "restore.h"

/* --from LOCATION --job JOB [--name NAME]: a backup's data onto a workstation, or --verify it. */
int from_backup(const char *job)
{
	struct mtc_backup_info info = { 0 };
	char name[64];
	long long rank = 0;
	int rc;
	struct mtc_store *js = open_job(from, job, &rc);

	if (!js)
		return rc;
	/* a --verify of a named backup reports it whatever its state, missing too */
	if (verify_only && name_opt) {
		snprintf(name, sizeof name, "%s", name_opt);
		rc = MTC_EXIT_OK;
	} else {
		rc = choose_backup(js, name, sizeof name);
	}
	if (rc == MTC_EXIT_OK && verify_only) {
		rc = verify_backup(js, job, name);
	} else if (rc == MTC_EXIT_OK && mtc_backup_inspect(js, name, 0, 0, &info) < 0) {
		mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(js), name,
			  mtc_store_error(js));
		rc = MTC_EXIT_FAILURE;
	} else if (rc == MTC_EXIT_OK && (rc = pick_rank(&info, &rank)) == MTC_EXIT_OK) {
		rc = restore_from(js, job, &info, (int)rank);
	}
	mtc_backup_info_free(&info);
	mtc_store_close(js);
	return rc;
}

int pin(const char *job, const char *name)
{
	struct mtc_backup_info info;
	int rc;
	struct mtc_store *s = open_job(pin_root, job, &rc);

	if (!s)
		return rc;
	if (judge(s, name, &info) < 0) {
		mtc_store_close(s);
		return MTC_EXIT_FAILURE;
	}
	if (info.state != MTC_BACKUP_VALID && !force) {
		mtc_error("refusing to pin '%s/%s': %s%s (--force pins it anyway)", mtc_store_url(s),
			  name, info.state == MTC_BACKUP_EMPTY ? "no such backup" : "not valid: ",
			  info.state == MTC_BACKUP_EMPTY ? "" : info.reason);
		rc = state_exit(info.state);
	} else if (mtc_store_put_buf(s, "restore.version", name, strlen(name), MTC_STORE_REPLACE) < 0) {
		mtc_error("cannot write '%s/restore.version': %s", mtc_store_url(s), mtc_store_error(s));
		rc = MTC_EXIT_FAILURE;
	} else if (info.state != MTC_BACKUP_VALID) {
		mtc_warn("pinned '%s/%s', which %s%s: every restore from '%s' fails until it is pinned "
			 "to a valid backup or unpinned (mtc-restore --unpin)",
			 mtc_store_url(s), name,
			 info.state == MTC_BACKUP_EMPTY ? "does not exist" : "is not valid: ",
			 info.state == MTC_BACKUP_EMPTY ? "" : info.reason, mtc_store_url(s));
	} else {
		mtc_info("pinned '%s/%s'", mtc_store_url(s), name);
	}
	mtc_backup_info_free(&info);
	mtc_store_close(s);
	return rc;
}

int unpin(const char *job)
{
	int rc;
	struct mtc_store *s = open_job(unpin_root, job, &rc);

	if (!s)
		return rc;
	if (mtc_store_delete(s, "restore.version") < 0) {
		if (errno == ENOENT) {
			mtc_info("'%s' has no restore.version", mtc_store_url(s));
		} else {
			mtc_error("cannot delete '%s/restore.version': %s", mtc_store_url(s),
				  mtc_store_error(s));
			rc = MTC_EXIT_FAILURE;
		}
	}
	mtc_store_close(s);
	return rc;
}

int restore_cluster(void)
{
	struct mtc_config cfg;
	struct mtc_cluster_restore_opts o = { 0 };
	char err[512], *token = NULL;
	json_t *summary = NULL;
	int rc;

	if ((rc = mtc_cli_node(dir, config_file, &cfg)) != MTC_EXIT_OK)
		return rc;
	const char *ptf = mtc_peer_token_path(peer_token_file);
	if (ptf && !(token = mtc_read_token_file(ptf, err, sizeof err))) {
		mtc_critical("%s", err);
		mtc_config_free(&cfg);
		return MTC_EXIT_USAGE;
	}
	o.dir = dir;
	o.cfg = &cfg;
	o.backup = backup;
	o.coordinator = standalone ? NULL : mtc_coord_url(coordinator_url);
	o.address = address;
	o.token = token;
	o.store_token_file = token_file;
	o.store_s3_endpoint = s3_endpoint;
	o.slice_threshold = slice_threshold;
	o.slices = slices;
	o.timeout_s = timeout_s;
	o.heartbeat_s = heartbeat_s;
	o.threads = threads;
	if (!o.coordinator && cfg.nodes > 1 && !standalone) {
		mtc_critical("%d nodes need a coordinator: give --coordinator-url or MTC_COORDINATOR "
			     "(or --standalone to decide alone)",
			     cfg.nodes);
		rc = MTC_EXIT_USAGE;
	} else {
		rc = mtc_cluster_restore(&o, &summary);
	}
	if (summary && json_out) {
		mtc_json_print(summary);
	} else if (summary) {
		json_t *st = json_object_get(summary, "step"), *b = json_object_get(summary, "backup");
		if (json_is_integer(st))
			printf("restored step %lld from %s%s%s: %lld files, %lld bytes in %.3f s\n",
			       (long long)json_integer_value(st),
			       json_string_value(json_object_get(summary, "source")) ?: "?",
			       b ? " backup " : "", b ? json_string_value(b) : "",
			       (long long)json_integer_value(json_object_get(summary, "fetched")),
			       (long long)json_integer_value(json_object_get(summary, "bytes")),
			       json_number_value(json_object_get(summary, "seconds")));
		else
			printf("nothing to restore\n");
		fflush(stdout);
		json_decref(summary);
	}
	free(token);
	mtc_config_free(&cfg);
	return rc;
}

/* The job-name of --config, for --from, --pin and --unpin without --job. */
int load_job(char **job)
{
	struct mtc_config cfg;
	int rc = mtc_cli_config(config_file, &cfg);

	if (rc != MTC_EXIT_OK)
		return rc;
	*job = xstrdup(cfg.job_name);
	mtc_config_free(&cfg);
	return MTC_EXIT_OK;
}
