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
#include "mtc-lkg/modes.h"

enum mode { MODE_NONE, MODE_BACKUPS, MODE_INVENTORY, MODE_GATHER };

/* The options, as main parses them (mtc-lkg/modes.h). */
char *backups_root, *token_file, *s3_endpoint, *inventory_path, *dir, *config_path, *job_opt,
	*peer_template, *peer_token_file, **peer_urls;
int json_out, parallel = MTC_CLI_UNSET, nodes_opt, workers_opt, rank_opt = -1, verify;
double peer_timeout;

/* --backups alone: the job and the shape from --job, --config, --nodes and --workers. */
static int backups_mode(void)
{
	struct mtc_config cfg;
	int rc;

	if (!config_path)
		return list_backups(job_opt, nodes_opt, workers_opt);
	if ((rc = mtc_cli_config(config_path, &cfg)) != MTC_EXIT_OK)
		return rc;
	rc = list_backups(job_opt ? job_opt : cfg.job_name, nodes_opt ? nodes_opt : cfg.nodes,
			  workers_opt ? workers_opt : cfg.workers_per_node);
	mtc_config_free(&cfg);
	return rc;
}

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		{ "backups", 'b', POPT_ARG_STRING, &backups_root, 0,
		  "list the backups of the job at this bucket root (with --dir: consider them)",
		  "LOCATION" },
		MTC_POPT_VERIFY(
			verify,
			"with --backups: re-hash the newest valid backup (and older ones while they are damaged)"),
		{ "inventory", 'i', POPT_ARG_STRING, &inventory_path, 0,
		  "plan from gathered inventories (JSON, - for stdin)", "FILE" },
		MTC_POPT_DIR_FOR(dir, "plan from this local dir, the peers and the backups"),
		MTC_POPT_PEER(peer_urls, "a peer's daemon, in rank order or as RANK=URL (repeatable)"),
		MTC_POPT_PEER_URL_TEMPLATE(peer_template),
		MTC_POPT_PEER_TOKEN_FILE(peer_token_file),
		{ "peer-timeout", '\0', POPT_ARG_DOUBLE, &peer_timeout, 0,
		  "seconds per peer, retries included", "SEC" },
		MTC_POPT_CONFIG(config_path),
		{ "rank", 'r', POPT_ARG_INT, &rank_opt, 0,
		  "the local dir's rank (default: the config's, else 0)", "R" },
		MTC_POPT_JOB(job_opt, "the job: its backups, its metas (default: the config's)"),
		MTC_POPT_JSON(json_out, "print JSON"),
		MTC_POPT_NODES(nodes_opt, "judge against N nodes (default: inferred)"),
		{ "workers", '\0', POPT_ARG_INT, &workers_opt, 0,
		  "judge against W workers per node (default: inferred)", "W" },
		MTC_POPT_STORE_AUTH(token_file, s3_endpoint),
		MTC_POPT_PARALLEL_FOR(parallel, "gs:// requests in flight (default 32)"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum mode mode = MODE_NONE;
	poptContext ctx;
	int rc;

	if (mtc_cli_start(
		    "mtc-lkg", argc, argv, opts,
		    "--backups LOCATION (--job NAME | --config CFG) [--verify] | --inventory FILE|- | --dir DIR [--peer URL]... [--backups LOCATION] [--json]",
		    &ctx, &rc) < 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (mtc_cli_no_args(ctx))
		goto out;
	if (inventory_path && (dir || backups_root || peer_urls || peer_template || config_path)) {
		mtc_usage_error(
			"--inventory takes everything from its file: no --dir, --peer, --backups or --config");
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
	if (mtc_cli_count("--parallel", &parallel))
		goto out;
	if (nodes_opt < 0 || workers_opt < 0 || rank_opt < -1) {
		mtc_usage_error("--nodes and --workers take a positive number");
		goto out;
	}
	switch (mode) {
	case MODE_BACKUPS: rc = backups_mode(); break;
	case MODE_INVENTORY: rc = from_inventory(); break;
	case MODE_GATHER: rc = gather(); break;
	case MODE_NONE:
		mtc_usage_error(
			"say what to compute: --inventory FILE, --dir DIR or --backups LOCATION");
		break;
	}
out:
	poptFreeContext(ctx);
	for (int i = 0; peer_urls && peer_urls[i]; i++)
		free(peer_urls[i]);
	free(peer_urls);
	return rc;
}
