#include "modes.h"

#include <sys/stat.h>

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
			return mtc_usage_error("rank %d is given twice (the local dir is rank %d)", rank,
					       local);
		}
	}
	*out = p;
	return MTC_EXIT_OK;
}

static void note_shape(const struct mtc_inventory *inv, const char *job, int *max_node, int *max_worker,
		       char *seen_job, size_t len, int *jobs)
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

static int backups_into(json_t *inv, json_t *plan_without, const char *job, int nodes, int workers)
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

int gather(void)
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
	struct stat st;
	int e = stat(dir, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

	if (e) {
		mtc_error("cannot read the local dir '%s' (--dir): %s", dir, strerror(e));
		return e == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_USAGE;
	}

	if (config_path) {
		if ((rc = mtc_cli_config(config_path, &cfg)) != MTC_EXIT_OK)
			return rc;
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
		mtc_warn("%d of %d peers did not answer: the plan leaves out what they hold", missing,
			 n_peers);
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
