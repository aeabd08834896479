/*
 * mtc-lkg: the last known good step.
 *   --backups LOCATION --job J list a job's backups newest first with their
 *                              validity (mtc(7) §6.5), the sizes of their data
 *                              against their manifests, step, nodes and size;
 *                              mark the newest valid one and restore.version
 *   --inventory FILE|-         the restore plan (lib/lkg.h) for gathered
 *                              inventories
 *   --dir DIR --peer URL…      the same, gathering the inventories itself from
 *                              the local dir, the peers and the backups: what
 *                              would a restart restore right now?
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "backup_check.h"
#include "backup_location.h"
#include "backups.h"
#include "common/cli.h"
#include "config.h"
#include "exitcode.h"
#include "fsutil.h"
#include "http.h"
#include "inventory.h"
#include "json_out.h"
#include "lkg.h"
#include "lkg_inventory.h"
#include "log.h"
#include "peers.h"
#include "naming.h"
#include "peer/peer_client.h"
#include "progress.h"
#include "store/store.h"
#include "token_file.h"
#include "xalloc.h"

enum mode { MODE_NONE, MODE_BACKUPS, MODE_INVENTORY, MODE_GATHER };

static char *backups_root, *token_file, *s3_endpoint, *inventory_path, *dir, *config_path, *job_opt,
	*peer_template, *peer_token_file, **peer_urls;
static int json_out, parallel, nodes_opt, workers_opt, rank_opt = -1, verify;
static double peer_timeout;

#define INVENTORY_MAX_BYTES (1024L * 1024 * 1024)

static void human_size(long long n, char *out, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* The job's backup root under --backups; NULL after an error (rc says which). */
static struct mtc_store *open_backups(const char *job, int missing_ok, int *rc)
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

static void print_backup_line(const struct mtc_backup_info *info, long long bytes, int newest,
			      int pinned)
{
	char size[32], step[32];

	human_size(bytes, size, sizeof size);
	snprintf(step, sizeof step, info->step < 0 ? "-" : "%lld", info->step);
	printf("%-1s %-16s  %-10s  %10s  %5d  %10s  %s%s%s\n", newest ? "*" : "", info->name,
	       mtc_backup_state_name(info->state), step, info->nodes, size,
	       pinned ? "restore.version" : "", pinned && *info->reason ? "; " : "", info->reason);
}

/*
 * --backups: every backup newest first, judged by its metas and the sizes
 * of its data (backup_check.h); with --verify the newest that passes is
 * re-hashed too, and the next one after it when it is damaged.
 */
static int list_backups(const char *job, int nodes, int workers)
{
	struct mtc_backup_entry *list = NULL;
	struct mtc_store *s;
	size_t n = 0;
	char pinned[256] = "";
	const char *newest_valid = NULL;
	json_t *arr;
	int rc, pin;

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
			json_array_append_new(
				arr, json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:I, s:b, s:b, s:b}",
					       "name", list[i].name, "state",
					       mtc_backup_state_name(info.state), "reason", info.reason,
					       "step", (json_int_t)info.step, "nodes", info.nodes,
					       "workers", info.workers, "bytes", (json_int_t)bytes,
					       "verified", deep, "newest-valid",
					       newest_valid == list[i].name, "pinned", is_pinned));
		else if (rc == MTC_EXIT_OK)
			print_backup_line(&info, bytes, newest_valid == list[i].name, is_pinned);
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
	if (rc == MTC_EXIT_OK && !newest_valid) {
		mtc_error("no valid backup among %zu at '%s'", n, mtc_store_url(s));
		rc = MTC_EXIT_NOTFOUND;
	}
	json_decref(arr);
	mtc_backups_free_list(list, n);
	mtc_store_close(s);
	return rc;
}

static const char *short_hash(const char *h, char *buf, size_t len)
{
	snprintf(buf, len, "%.12s", h ? h : "?");
	return buf;
}

static void print_summary(json_t *plan)
{
	json_t *step = json_object_get(plan, "step"), *v, *r;
	const char *source = json_string_value(json_object_get(plan, "source"));
	const char *backup = json_string_value(json_object_get(plan, "backup"));
	const char *pinned = json_string_value(json_object_get(plan, "restore-version"));
	size_t i, shown = 0, ready = 0, n_rejected;

	if (json_is_integer(step))
		printf("step %lld from %s%s%s (%lld nodes x %lld worker%s)\n",
		       (long long)json_integer_value(step),
		       backup ? "backup " : "the cluster", backup ? backup : "",
		       pinned ? ", forced by restore.version" : "",
		       (long long)json_integer_value(json_object_get(plan, "nodes")),
		       (long long)json_integer_value(json_object_get(plan, "workers-per-node")),
		       json_integer_value(json_object_get(plan, "workers-per-node")) == 1 ? "" : "s");
	else
		printf("nothing to restore: %s\n",
		       json_string_value(json_object_get(plan, "reason")));
	json_array_foreach(json_object_get(plan, "errors"), i, v)
		printf("error: %s\n", json_string_value(v));
	n_rejected = json_array_size(json_object_get(plan, "rejected"));
	json_array_foreach(json_object_get(plan, "rejected"), i, v)
	{
		if (i == 10) {
			printf("(%zu more rejected steps)\n", n_rejected - 10);
			break;
		}
		printf("rejected: step %lld in %s%s: %s\n",
		       (long long)json_integer_value(json_object_get(v, "step")),
		       json_object_get(v, "backup") ? "backup " : "the cluster",
		       json_object_get(v, "backup")
			       ? json_string_value(json_object_get(v, "backup"))
			       : "",
		       json_string_value(json_object_get(v, "reason")));
	}
	if (!json_is_integer(step) || !source)
		return;
	json_array_foreach(json_object_get(plan, "ranks"), i, r)
	{
		json_t *m;
		size_t k;
		json_array_foreach(json_object_get(r, "metas"), k, m)
			if (json_is_integer(json_object_get(m, "substituted-from")))
				printf("rank %lld worker %lld: its own data exists nowhere; it takes "
				       "rank %lld's (assume-data-parallelism)\n",
				       (long long)json_integer_value(json_object_get(r, "node-rank")),
				       (long long)json_integer_value(json_object_get(m, "worker")),
				       (long long)json_integer_value(
					       json_object_get(m, "substituted-from")));
	}
	json_array_foreach(json_object_get(plan, "ranks"), i, r)
	{
		json_t *fetch = json_object_get(r, "fetch"), *f;
		size_t k;
		if (!json_array_size(fetch)) {
			ready++;
			continue;
		}
		if (!shown++)
			printf("%-6s %-8s %s\n", "RANK", "REPORTED", "FETCHES");
		printf("%-6lld %-8s", (long long)json_integer_value(json_object_get(r, "node-rank")),
		       json_is_true(json_object_get(r, "reported")) ? "yes" : "no");
		json_array_foreach(fetch, k, f)
		{
			char h[16];
			json_t *from = json_object_get(f, "from");
			printf(" %s from ", short_hash(json_string_value(json_object_get(f, "hash")), h,
						       sizeof h));
			if (json_array_size(from))
				printf("rank %lld%s",
				       (long long)json_integer_value(json_array_get(from, 0)),
				       json_is_true(json_object_get(f, "backup")) ? " or the backup" : "");
			else
				printf("the backup");
			if (k + 1 < json_array_size(fetch))
				printf(";");
		}
		printf("\n");
	}
	printf("%zu of %zu ranks hold everything they need\n", ready,
	       json_array_size(json_object_get(plan, "ranks")));
}

/* Prints the plan; the exit code: 0 with a step, NOTFOUND without. */
static int show_plan(json_t *plan)
{
	if (json_out) {
		char *text = json_dumps(plan, JSON_COMPACT);
		printf("%s\n", text);
		free(text);
	} else
		print_summary(plan);
	return json_is_integer(json_object_get(plan, "step")) ? MTC_EXIT_OK : MTC_EXIT_NOTFOUND;
}

static int plan_and_show(json_t *inv)
{
	char err[512];
	json_t *plan = mtc_lkg_plan(inv, err, sizeof err);
	int rc;

	if (!plan) {
		mtc_error("invalid inventory '%s': %s", inventory_path ? inventory_path : "-", err);
		return MTC_EXIT_FAILURE;
	}
	rc = show_plan(plan);
	json_decref(plan);
	return rc;
}

static int from_inventory(void)
{
	char *text = NULL;
	size_t len;
	json_error_t jerr;
	json_t *inv;
	int rc, r = !strcmp(inventory_path, "-")
			    ? mtc_read_fd(0, INVENTORY_MAX_BYTES, &text, &len)
			    : mtc_read_file(inventory_path, INVENTORY_MAX_BYTES, &text, &len);

	if (r < 0) {
		mtc_error("cannot read '%s':", inventory_path);
		return MTC_EXIT_FAILURE;
	}
	inv = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!inv) {
		mtc_error("invalid inventory '%s': line %d: %s", inventory_path, jerr.line, jerr.text);
		return MTC_EXIT_FAILURE;
	}
	rc = plan_and_show(inv);
	json_decref(inv);
	return rc;
}

struct peer {
	int rank;
	char *url;
};

/* --peer URL (ranks in order, the local rank skipped) or RANK=URL; --peer-url-template T. */
static int peer_list(int local, int nodes, struct peer **out, int *n)
{
	int next = 0, count = 0;
	struct peer *p;

	while (peer_urls && peer_urls[count])
		count++;
	if (peer_template && nodes > 0)
		count += nodes;
	p = xcalloc((size_t)count + 1, sizeof *p);
	*n = 0;
	if (peer_template) {
		if (nodes <= 0)
			return free(p), mtc_usage_error("--peer-url-template needs --nodes or --config");
		for (int r = 0; r < nodes; r++)
			if (r != local)
				p[(*n)++] = (struct peer){ r, mtc_peer_url(peer_template, r) };
	}
	for (int i = 0; peer_urls && peer_urls[i]; i++) {
		const char *u = peer_urls[i], *eq = strchr(u, '='), *colon = strstr(u, "://");
		long long r;
		char *num;
		if (eq && (!colon || eq < colon)) {
			num = xasprintf("%.*s", (int)(eq - u), u);
			if (mtc_parse_uint(num, &r) < 0 || r > 1 << 20) {
				free(num);
				for (int k = 0; k < *n; k++)
					free(p[k].url);
				free(p);
				*n = 0;
				return mtc_usage_error("--peer takes URL or RANK=URL, not '%s'", u);
			}
			free(num);
			u = eq + 1;
		} else {
			if (next == local)
				next++;
			r = next++;
		}
		p[(*n)++] = (struct peer){ (int)r, xstrdup(u) };
	}
	for (int i = 0; i < *n; i++) {
		int dup = p[i].rank == local;
		for (int k = 0; k < i && !dup; k++)
			dup = p[i].rank == p[k].rank;
		if (dup) {
			int rank = p[i].rank;
			for (int q = 0; q < *n; q++)
				free(p[q].url);
			free(p);
			*n = 0;
			return mtc_usage_error("rank %d is given twice (the local dir is rank %d)",
					       rank, local);
		}
	}
	*out = p;
	return MTC_EXIT_OK;
}

static void note_shape(const struct mtc_inventory *inv, const char *job, int *max_node,
		       int *max_worker, char *seen_job, size_t len, int *jobs)
{
	for (size_t i = 0; i < inv->n_metas; i++) {
		const struct mtc_inv_meta *m = &inv->metas[i];
		if (!job && strcmp(seen_job, m->job)) {
			if (*seen_job)
				(*jobs)++;
			else
				*jobs = 1;
			snprintf(seen_job, len, "%s", m->job);
		}
		if (job && strcmp(m->job, job))
			continue;
		if (m->node > *max_node)
			*max_node = m->node;
		if (m->worker > *max_worker)
			*max_worker = m->worker;
	}
}

static int backups_into(json_t *inv, json_t *plan_without, const char *job, int nodes,
			int workers)
{
	struct mtc_backup_entry *list = NULL;
	struct mtc_store *s;
	size_t n = 0;
	char err[512], pinned[256];
	json_t *arr = json_array();
	int pin, rc = 0;

	json_object_set_new(inv, "backups", arr);
	if (!(s = open_backups(job, 1, &rc)))
		return rc == MTC_EXIT_NOTFOUND ? 0 : -1; /* a job with no backups yet */
	pin = mtc_backups_restore_version(s, pinned, sizeof pinned);
	if (pin < 0 || mtc_backups_list(s, &list, &n) < 0) {
		mtc_error("cannot list '%s': %s", mtc_store_url(s), mtc_store_error(s));
		mtc_store_close(s);
		return -1;
	}
	if (pin == 1)
		json_object_set_new(inv, "restore-version", json_string(pinned));
	for (size_t i = 0; i < n; i++) {
		json_t *b, *plan;
		if (pin == 1 ? strcmp(list[i].name, pinned) != 0
			     : json_is_integer(json_object_get(plan_without, "step")))
			continue;
		if (!(b = mtc_lkg_backup_entry(s, list[i].name, nodes, workers, NULL))) {
			mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(s), list[i].name,
				  mtc_store_error(s));
			rc = -1;
			break;
		}
		json_array_append_new(arr, b);
		if (pin == 1)
			break;
		plan = mtc_lkg_plan(inv, err, sizeof err);
		if (plan && json_is_integer(json_object_get(plan, "step")))
			i = n;
		json_decref(plan);
	}
	mtc_backups_free_list(list, n);
	mtc_store_close(s);
	return rc;
}

static int gather(void)
{
	struct mtc_config cfg;
	int have_cfg = 0, local = 0, nodes = nodes_opt, workers = workers_opt, n_peers = 0;
	int max_node = -1, max_worker = 0, jobs = 0, rc = MTC_EXIT_FAILURE, missing = 0;
	struct peer *peers = NULL;
	struct mtc_inventory *invs = NULL;
	int *got = NULL;
	char err[512], seen_job[MTC_JOB_MAX + 1] = "", *token = NULL;
	const char *job = job_opt;
	struct mtc_peer_client pc;
	json_t *inv = NULL, *ranks, *plan = NULL;

	if (config_path) {
		if (mtc_config_load(config_path, &cfg, err, sizeof err) < 0) {
			mtc_error("invalid config '%s': %s", config_path, err);
			return MTC_EXIT_FAILURE;
		}
		have_cfg = 1;
		local = cfg.node_rank;
		if (!nodes)
			nodes = cfg.nodes;
		if (!workers)
			workers = cfg.workers_per_node;
		if (!job)
			job = cfg.job_name;
	}
	if (rank_opt >= 0)
		local = rank_opt;
	if ((rc = peer_list(local, nodes, &peers, &n_peers)) != MTC_EXIT_OK)
		goto out;
	rc = MTC_EXIT_FAILURE;
	invs = xcalloc((size_t)n_peers + 1, sizeof *invs);
	got = xcalloc((size_t)n_peers + 1, sizeof *got);
	if (mtc_inventory_scan(dir, &invs[0]) < 0) {
		mtc_error("cannot read '%s':", dir);
		goto out;
	}
	got[0] = 1;
	mtc_peer_client_defaults(&pc);
	if (peer_timeout > 0)
		pc.deadline_s = peer_timeout;
	if (mtc_peer_token_path(peer_token_file)) {
		if (!(token = mtc_read_token_file(mtc_peer_token_path(peer_token_file), err,
						  sizeof err))) {
			mtc_error("%s", err);
			goto out;
		}
		pc.token = token;
	}
	for (int i = 0; i < n_peers; i++) {
		mtc_info("reading rank %d's inventory at %s", peers[i].rank, peers[i].url);
		json_t *j = mtc_peer_inventory(&pc, peers[i].url, err, sizeof err);
		if (!j || mtc_inventory_from_json(j, &invs[i + 1], err, sizeof err) < 0) {
			mtc_warn("rank %d '%s' is left out: %s", peers[i].rank, peers[i].url, err);
			missing++;
		} else
			got[i + 1] = 1;
		json_decref(j);
	}
	for (int i = 0; i <= n_peers; i++)
		if (got[i])
			note_shape(&invs[i], job, &max_node, &max_worker, seen_job, sizeof seen_job,
				   &jobs);
	if (!job && jobs > 1) {
		mtc_error("the inventories hold several jobs: say which with --job or --config");
		goto out;
	}
	if (!job && jobs == 1)
		job = seen_job;
	if (nodes <= 0) {
		nodes = max_node + 1;
		if (local + 1 > nodes)
			nodes = local + 1;
		for (int i = 0; i < n_peers; i++)
			if (peers[i].rank + 1 > nodes)
				nodes = peers[i].rank + 1;
	}
	if (workers <= 0)
		workers = max_worker + 1;
	if (local >= nodes) {
		rc = mtc_usage_error("the local dir's rank %d is not below %d nodes", local, nodes);
		goto out;
	}
	for (int i = 0; i < n_peers; i++)
		if (peers[i].rank >= nodes) {
			rc = mtc_usage_error("peer '%s' has rank %d, not below %d nodes", peers[i].url,
					     peers[i].rank, nodes);
			goto out;
		}
	inv = mtc_lkg_inventory_head(job, nodes, workers, have_cfg ? cfg.data_parallelism : 0,
				     have_cfg ? cfg.peers_per_node : 0);
	ranks = json_object_get(inv, "ranks");
	json_array_append_new(ranks, mtc_lkg_rank_entry(&invs[0], local, NULL, job));
	if (have_cfg && cfg.peer_ranks) {
		json_t *given = json_array();
		for (int i = 0; i < cfg.n_peer_ranks; i++)
			json_array_append_new(given, json_integer(cfg.peer_ranks[i]));
		json_object_set_new(json_array_get(ranks, 0), "peer-ranks", given);
	}
	for (int i = 0; i < n_peers; i++)
		if (got[i + 1])
			json_array_append_new(ranks, mtc_lkg_rank_entry(&invs[i + 1], peers[i].rank,
									 peers[i].url, job));
	if (backups_root) {
		if (!(plan = mtc_lkg_plan(inv, err, sizeof err))) {
			mtc_error("cannot plan: %s", err);
			goto out;
		}
		if (backups_into(inv, plan, job, nodes, workers) < 0)
			goto out;
	}
	if (missing)
		mtc_warn("%d of %d peers did not answer: the plan leaves out what they hold",
			 missing, n_peers);
	rc = plan_and_show(inv);
out:
	json_decref(plan);
	json_decref(inv);
	for (int i = 0; invs && i <= n_peers; i++)
		if (got[i])
			mtc_inventory_free(&invs[i]);
	free(invs);
	free(got);
	for (int i = 0; i < n_peers; i++)
		free(peers[i].url);
	free(peers);
	free(token);
	if (have_cfg)
		mtc_config_free(&cfg);
	return rc;
}

/* --backups alone: the job and the shape from --job, --config, --nodes and --workers. */
static int backups_mode(void)
{
	struct mtc_config cfg;
	char err[512];
	int rc;

	if (!config_path)
		return list_backups(job_opt, nodes_opt, workers_opt);
	if (mtc_config_load(config_path, &cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", config_path, err);
		return MTC_EXIT_USAGE;
	}
	rc = list_backups(job_opt ? job_opt : cfg.job_name, nodes_opt ? nodes_opt : cfg.nodes,
			  workers_opt ? workers_opt : cfg.workers_per_node);
	mtc_config_free(&cfg);
	return rc;
}

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		{ "backups", 'b', POPT_ARG_STRING, &backups_root, 0, "list the backups of the job at this bucket root (with --dir: consider them)", "LOCATION" },
		{ "verify", '\0', POPT_ARG_NONE, &verify, 0, "with --backups: re-hash the newest valid backup (and older ones while they are damaged)", NULL },
		{ "inventory", 'i', POPT_ARG_STRING, &inventory_path, 0, "plan from gathered inventories (JSON, - for stdin)", "FILE" },
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "plan from this local dir, the peers and the backups", "DIR" },
		{ "peer", 'p', POPT_ARG_ARGV, &peer_urls, 0, "a peer's daemon, in rank order or as RANK=URL (repeatable)", "URL" },
		{ "peer-url-template", '\0', POPT_ARG_STRING, &peer_template, 0, "every other rank's URL, e.g. http://job-0-{rank}.job:7070", "T" },
		MTC_POPT_PEER_TOKEN_FILE(peer_token_file),
		{ "peer-timeout", '\0', POPT_ARG_DOUBLE, &peer_timeout, 0, "seconds per peer, retries included", "SEC" },
		{ "config", 'c', POPT_ARG_STRING, &config_path, 0, "the accepted config (JSON, - for stdin)", "CFG" },
		{ "rank", 'r', POPT_ARG_INT, &rank_opt, 0, "the local dir's rank (default: the config's, else 0)", "R" },
		{ "job", '\0', POPT_ARG_STRING, &job_opt, 0, "the job: its backups, its metas (default: the config's)", "NAME" },
		{ "json", '\0', POPT_ARG_NONE, &json_out, 0, "print JSON", NULL },
		{ "nodes", '\0', POPT_ARG_INT, &nodes_opt, 0, "judge against N nodes (default: inferred)", "N" },
		{ "workers", '\0', POPT_ARG_INT, &workers_opt, 0, "judge against W workers per node (default: inferred)", "W" },
		MTC_POPT_STORE_AUTH(token_file, s3_endpoint),
		{ "parallel", 'j', POPT_ARG_INT, &parallel, 0, "gs:// requests in flight (default 32)", "N" },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum mode mode = MODE_NONE;
	poptContext ctx;
	int rc;

	mtc_log_init(argv[0]);
	mtc_http_init();
	ctx = mtc_cli_context("mtc-lkg", argc, argv, opts, "--backups LOCATION (--job NAME | --config CFG) [--verify] | --inventory FILE|- | --dir DIR [--peer URL]... [--backups LOCATION] [--json]");
	if (mtc_cli_parse(ctx, &rc) < 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (poptPeekArg(ctx)) {
		mtc_usage_error("unexpected argument '%s'", poptPeekArg(ctx));
		goto out;
	}
	if (inventory_path && (dir || backups_root || peer_urls || peer_template || config_path)) {
		mtc_usage_error("--inventory takes everything from its file: no --dir, --peer, --backups or --config");
		goto out;
	}
	if (!dir && (peer_urls || peer_template || rank_opt >= 0)) {
		mtc_usage_error("--peer, --peer-url-template and --rank go with --dir");
		goto out;
	}
	if (!dir && !backups_root && (config_path || job_opt)) {
		mtc_usage_error("--config and --job go with --dir or --backups");
		goto out;
	}
	if (verify && (dir || !backups_root)) {
		mtc_usage_error("--verify goes with --backups alone");
		goto out;
	}
	if (dir)
		mode = MODE_GATHER;
	else if (inventory_path)
		mode = MODE_INVENTORY;
	else if (backups_root)
		mode = MODE_BACKUPS;
	if (nodes_opt < 0 || workers_opt < 0 || parallel < 0 || rank_opt < -1) {
		mtc_usage_error("--nodes, --workers and --parallel take a positive number");
		goto out;
	}
	switch (mode) {
	case MODE_BACKUPS:
		rc = backups_mode();
		break;
	case MODE_INVENTORY:
		rc = from_inventory();
		break;
	case MODE_GATHER:
		rc = gather();
		break;
	case MODE_NONE:
		mtc_usage_error("say what to compute: --inventory FILE, --dir DIR or --backups LOCATION");
		break;
	}
out:
	poptFreeContext(ctx);
	for (int i = 0; peer_urls && peer_urls[i]; i++)
		free(peer_urls[i]);
	free(peer_urls);
	return rc;
}
