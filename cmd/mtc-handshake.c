/*
 * mtc-handshake: both sides of the replicator.yaml handshake.
 *   accept  the replicator side: wait, validate, clean the local dir, delete the yaml, print the config
 *   watch   return when a new replicator.yaml appears (the training job restarted)
 *   offer   the training side: write the yaml, wait for it to be accepted, read the status files
 *   check   validate a replicator.yaml and print the config it stands for
 *   rank    this node's process id from the rank server, into jax-init-info.txt
 */
#include "mtc-handshake/verbs.h"

enum verb { ACCEPT, WATCH, OFFER, CHECK, RANK, NVERBS };
/* One table of options for every verb: a verb refuses the others' options itself. */
static const struct mtc_verb verbs[NVERBS] = {
	[ACCEPT] = { "accept", NULL, "accept --dir DIR [--timeout SEC] [--json]" },
	[WATCH] = { "watch", NULL, "watch --dir DIR [--timeout SEC] [--json]" },
	[OFFER] = { "offer", NULL, "offer --dir DIR --job-name NAME --node-rank R --nodes N [OPTIONS]" },
	[CHECK] = { "check", NULL, "check [--json] FILE" },
	[RANK] = { "rank", NULL,
		   "rank --dir DIR --coordinator-url URL --index I --host HOST [OPTIONS]" },
};

char *dir;
double timeout_s = -1;
int json;

/* offer: the options of every key, the byte style, and what to wait for. */
char *o_job, *o_framework = "orbax", *o_peers, *o_style = "orbax";
int o_rank = -1, o_nodes = -1, o_ppn = -1, o_dp = -1, o_wpn = -1;
int o_minutes = -1, o_steps = -1;
int o_wait_restore, o_rename, o_replace;
double o_restore_timeout = 300;

int main(int argc, const char **argv)
{
	struct poptOption dir_opts[] = {
		MTC_POPT_DIR_FOR(dir, "the local dir (a RAM disk)"),
		MTC_POPT_TIMEOUT(
			timeout_s,
			"give up after SEC seconds with exit 3 (default: wait forever; offer: 300)"),
		MTC_POPT_JSON(json,
			      "result lines as JSON: watch's path, offer's restore marker, rank's answer (accept "
			      "and check print the config as JSON either way)"),
		POPT_TABLEEND
	};
	struct poptOption offer_opts[] = {
		{ "job-name", '\0', POPT_ARG_STRING, &o_job, 0, "job-name", "NAME" },
		{ "framework", '\0', POPT_ARG_STRING, &o_framework, 0,
		  "orbax, pytorch.distributed or pytorch (default orbax)", "NAME" },
		{ "node-rank", '\0', POPT_ARG_INT, &o_rank, 0, "node-rank", "R" },
		MTC_POPT_NODES(o_nodes, "nodes"),
		{ "peer-ranks", '\0', POPT_ARG_STRING, &o_peers, 0,
		  "peer-ranks, comma separated ('' for [])", "R,R" },
		{ "peers-per-node", '\0', POPT_ARG_INT, &o_ppn, 0, "peers-per-node", "K" },
		{ "assume-data-parallelism", '\0', POPT_ARG_INT, &o_dp, 0, "assume-data-parallelism",
		  "D" },
		{ "backup-interval-minutes", '\0', POPT_ARG_INT, &o_minutes, 0,
		  "backup-interval-minutes", "M" },
		{ "backup-interval-steps", '\0', POPT_ARG_INT, &o_steps, 0, "backup-interval-steps",
		  "S" },
		{ "workers-per-node", '\0', POPT_ARG_INT, &o_wpn, 0, "workers-per-node", "W" },
		{ "style", '\0', POPT_ARG_STRING, &o_style, 0,
		  "write the bytes as orbax (tmp+rename) or nemo (yaml.dump in place)", "orbax|nemo" },
		{ "replace-stale", '\0', POPT_ARG_NONE, &o_replace, 0,
		  "delete a leftover replicator.yaml instead of waiting for it to go", NULL },
		{ "wait-restore", '\0', POPT_ARG_NONE, &o_wait_restore, 0,
		  "then wait for a *.restore marker; print its step and path (exit 4 for step 0)",
		  NULL },
		{ "restore-timeout", '\0', POPT_ARG_DOUBLE, &o_restore_timeout, 0,
		  "seconds to wait for the marker (default 300)", "SEC" },
		{ "rename", '\0', POPT_ARG_NONE, &o_rename, 0,
		  "consume the marker as the framework does (orbax: <step>, nemo: step=<step>)", NULL },
		POPT_TABLEEND
	};
	struct rank_opts ro = { .index = -1, .jax_port = 8482 };
	char *r_coord = NULL, *r_host = NULL, *r_token = NULL;
	struct poptOption rank_opts[] = {
		{ "coordinator-url", '\0', POPT_ARG_STRING, &r_coord, 0,
		  "the rank server: the coordinator (default $MTC_COORDINATOR)", "URL" },
		{ "index", '\0', POPT_ARG_INT, &ro.index, 0, "this node's pod index, 0 <= I < nodes",
		  "I" },
		{ "host", '\0', POPT_ARG_STRING, &r_host, 0,
		  "where JAX reaches this node, should it be process 0", "HOST" },
		{ "jax-port", '\0', POPT_ARG_INT, &ro.jax_port, 0,
		  "the JAX coordinator's port on process 0's host (default 8482)", "PORT" },
		MTC_POPT_PEER_TOKEN_FILE(r_token),
		POPT_TABLEEND
	};
	struct poptOption opts[] = {
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, dir_opts, 0, "Options:", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, offer_opts, 0, "offer:", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, rank_opts, 0, "rank:", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum verb verb;
	poptContext ctx;
	int rc;

	mtc_log_init(argv[0]);
	mtc_http_init();
	verb = (enum verb)mtc_cli_verb(argc, argv, verbs, NVERBS);
	ctx = verb == NVERBS ? mtc_cli_context("mtc-handshake", argc, argv, opts,
					       "accept|watch|offer|check|rank [OPTIONS] [FILE]")
			     : mtc_cli_verb_context(argc - 1, argv + 1, opts, verbs[verb].usage);
	if (mtc_cli_parse(ctx, &rc) < 0)
		goto out;
	if (verb == NVERBS) {
		rc = argc > 1 && argv[1][0] != '-'
			     ? mtc_usage_error("unknown command '%s'", argv[1])
			     : mtc_usage_error(
				       "a command is needed: accept, watch, offer, check or rank");
		goto out;
	}
	if (verb == OFFER && timeout_s < 0)
		timeout_s = 300;
	if (verb == RANK && timeout_s < 0)
		timeout_s = 900;
	if (verb != RANK && (r_coord || r_host || r_token || ro.index >= 0)) {
		rc = mtc_usage_error(
			"--coordinator-url, --index, --host and --peer-token-file belong to 'rank'");
		goto out;
	}
	const char *arg = poptGetArg(ctx);
	if (arg && verb != CHECK) {
		rc = mtc_usage_error("unexpected argument '%s'", arg);
		goto out;
	}
	if (verb != OFFER && (o_job || o_peers || o_rank >= 0 || o_nodes >= 0 || o_wait_restore)) {
		rc = mtc_usage_error("the key options belong to 'offer'");
		goto out;
	}
	switch (verb) {
	case ACCEPT: rc = do_accept(); break;
	case WATCH: rc = do_watch(); break;
	case OFFER: rc = do_offer(); break;
	case CHECK: rc = do_check(arg); break;
	case RANK:
		ro.dir = dir;
		ro.coordinator = mtc_coord_url(r_coord);
		ro.host = r_host;
		ro.token_file = mtc_peer_token_path(r_token);
		ro.timeout_s = timeout_s;
		ro.json = json;
		if (!ro.coordinator || !r_host || ro.index < 0)
			rc = mtc_usage_error("rank needs --coordinator-url, --host and --index");
		else if (ro.jax_port <= 0 || ro.jax_port > 65535)
			rc = mtc_usage_error("--jax-port must be in [1, 65535]");
		else if (!(rc = need_dir()))
			rc = do_rank(&ro);
		break;
	default: break;
	}
out:
	free(r_coord);
	free(r_host);
	free(r_token);
	poptFreeContext(ctx);
	return rc;
}
