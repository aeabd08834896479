#include "peer_cmd.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <popt.h>

#include "../common/cli.h"
#include "clock.h"
#include "config.h"
#include "coord/coord.h"
#include "exitcode.h"
#include "fsutil.h"
#include "json_out.h"
#include "log.h"
#include "naming.h"
#include "peer/peer_auth.h"
#include "peer/peer_client.h"
#include "peer/peer_server.h"
#include "peers.h"
#include "peer/tls.h"
#include "peer/tls_relay.h"
#include "token_file.h"
#include "xalloc.h"

#define SERVE_USAGE                                                                                  \
	"serve --dir DIR --listen HOST:PORT [--peer-token-file FILE [--strict-ranks]] [--insecure] " \
	"[--tls-dir DIR] [--coordinator --nodes N] [--json]"
#define PUSH_USAGE                                                                      \
	"push --dir DIR --config CFG --step S [--peer URL]... [--peer-url-template T] " \
	"[--peer-token-file FILE] [--tls-dir DIR] [--streams N] [--json]"
#define FETCH_USAGE                                                                           \
	"fetch --dir DIR --from URL [--hash H]... [--meta NAME]... [--peer-token-file FILE] " \
	"[--tls-dir DIR] [--streams N] [--json]"

int mtc_replicate_parse(int argc, const char **argv, struct poptOption *opts, const char *usage,
			poptContext *ctx, int *code)
{
	*ctx = mtc_cli_verb_context(argc, argv, opts, usage);
	return mtc_cli_parse(*ctx, code);
}

/*
 * serve's one result line, once listening: "serving 'DIR' on URL", with " as the
 * coordinator of N nodes", or with json the object of mtc-replicate(1).
 */
static int print_serving(const char *dir, const char *address, int tls, int coord_nodes, int json)
{
	const char *scheme = tls ? "https" : "http";
	json_t *o;

	mtc_info("serving '%s' on %s://%s", dir, scheme, address);
	if (!json) {
		if (coord_nodes)
			printf("serving '%s' on %s://%s as the coordinator of %d nodes\n", dir, scheme,
			       address, coord_nodes);
		else
			printf("serving '%s' on %s://%s\n", dir, scheme, address);
		return fflush(stdout) == 0 ? 0 : -1;
	}
	o = json_pack("{s:s, s:s, s:s, s:b}", "listen", address, "scheme", scheme, "dir", dir,
		      "coordinator", coord_nodes > 0);
	if (tls)
		json_object_set_new(o, "kernel-tls", json_boolean(mtc_tls_kernel_available()));
	return mtc_json_print(o);
}

int mtc_replicate_serve(int argc, const char **argv)
{
	struct mtc_peer_server_opts o;
	char *dir = NULL, *listen = NULL, *token = NULL, *ready_file = NULL, *tls_dir = NULL,
	     *job = NULL, *bg_name = NULL, err[512];
	long long max_body = -1, max_files = -1, min_rate = -1;
	int insecure = 0, strict_ranks = 0, json = 0, max_depth = -1, max_conn = -1, timeout = -1,
	    session_timeout = -1, sig, rc;
	int coordinator = 0, nodes = 0, per_ip = -1, max_unauth = -1, head_timeout = -1;
	double round_s = 0, heartbeat_s = 0, poll_s = 0;
	struct mtc_coord *coord = NULL;
	struct poptOption opts[] = {
		MTC_POPT_DIR_FOR(dir, "the local dir to serve"),
		{ "listen", 'l', POPT_ARG_STRING, &listen, 0,
		  "address to listen on (default 127.0.0.1:7070; port 0 picks a free one)",
		  "HOST:PORT" },
		MTC_POPT_PEER_TOKEN_FILE(token),
		{ "strict-ranks", '\0', POPT_ARG_NONE, &strict_ranks, 0,
		  "a write or a coordinator report that speaks for a rank needs that rank's "
		  "credential: the token file's plain secret may only read",
		  NULL },
		{ "insecure", '\0', POPT_ARG_NONE, &insecure, 0,
		  "allow a non-loopback address without a token", NULL },
		{ "tls-dir", '\0', POPT_ARG_STRING, &tls_dir, 0,
		  "serve HTTPS only, with DIR/tls.crt and tls.key; the data needs a client "
		  "certificate signed by DIR/ca.crt (else $MTC_TLS_DIR)",
		  "DIR" },
		{ "ready-file", '\0', POPT_ARG_STRING, &ready_file, 0,
		  "GET /readyz answers 200 while FILE exists, else 503 (the node's service creates "
		  "it once the handshake and the restore are done)",
		  "FILE" },
		{ "max-body", '\0', POPT_ARG_LONGLONG, &max_body, 0,
		  "bytes per upload (default: the local dir's free space when the upload starts, "
		  "which also caps any BYTES)",
		  "BYTES" },
		{ "max-files", '\0', POPT_ARG_LONGLONG, &max_files, 0,
		  "entries per uploaded tree (default 1000000)", "N" },
		{ "max-depth", '\0', POPT_ARG_INT, &max_depth, 0, "path depth in a tree (default 64)",
		  "N" },
		{ "max-connections", '\0', POPT_ARG_INT, &max_conn, 0,
		  "concurrent connections (default 256; with --coordinator 3 * nodes + 64 if more)",
		  "N" },
		{ "max-conns-per-ip", '\0', POPT_ARG_INT, &per_ip, 0,
		  "concurrent connections from one client address (default 64; 0: no limit)", "N" },
		{ "max-unauth", '\0', POPT_ARG_INT, &max_unauth, 0,
		  "connections that have not shown a valid token yet; one more cuts the oldest "
		  "(default 64; with --coordinator 64 + nodes)",
		  "N" },
		{ "head-timeout", '\0', POPT_ARG_INT, &head_timeout, 0,
		  "seconds an unauthenticated connection has to send a whole request head "
		  "(default 10; 0: no deadline)",
		  "SEC" },
		{ "timeout", '\0', POPT_ARG_INT, &timeout, 0,
		  "seconds a connection may stay idle (default 120)", "SEC" },
		{ "min-rate", '\0', POPT_ARG_LONGLONG, &min_rate, 0,
		  "a request body slower than this on average is cut, after the idle timeout (at most "
		  "30 s) (default 65536; 0: never)",
		  "BYTES/S" },
		{ "session-timeout", '\0', POPT_ARG_INT, &session_timeout, 0,
		  "seconds an upload session may stay idle before it is discarded (default 600)",
		  "SEC" },
		MTC_POPT_BACKGROUND(bg_name, "CPU class of writing and hashing the peers' pushes: "
					     "idle (default), nice or normal; connections, reads and "
					     "the coordinator stay at normal priority"),
		{ "coordinator", '\0', POPT_ARG_NONE, &coordinator, 0,
		  "also be the coordinator (rank 0): POST /v1/coord/{restore,restore-done,sync}", NULL },
		MTC_POPT_NODES(nodes, "ranks the coordinator waits for"),
		MTC_POPT_JOB(job,
			     "the job the coordinator serves: a report of another job is refused (default: the "
			     "first job a report names)"),
		{ "round-timeout", '\0', POPT_ARG_DOUBLE, &round_s, 0,
		  "seconds before an incomplete round fails (default 300)", "SEC" },
		{ "heartbeat-timeout", '\0', POPT_ARG_DOUBLE, &heartbeat_s, 0,
		  "seconds of silence after which a rank has vanished (default 30)", "SEC" },
		{ "poll-timeout", '\0', POPT_ARG_DOUBLE, &poll_s, 0,
		  "longest wait of one coordinator request (default 20)", "SEC" },
		MTC_POPT_JSON(json, "the one result line, once listening, is JSON"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_peer_server *s;
	sigset_t set;

	if (mtc_replicate_parse(argc, argv, opts, SERVE_USAGE, &ctx, &rc) < 0)
		goto out;
	mtc_peer_server_defaults(&o);
	if (!dir) {
		rc = mtc_usage_error("--dir is required");
		goto out;
	}
	if ((rc = mtc_cli_local_dir(dir)) != MTC_EXIT_OK)
		goto out;
	if ((rc = mtc_cli_background(bg_name, &o.upload_class)))
		goto out;
	o.dir = dir;
	if (listen)
		o.listen = listen;
	o.token_file = mtc_peer_token_path(token);
	if (strict_ranks && !o.token_file) {
		rc = mtc_usage_error("--strict-ranks needs --peer-token-file (or $MTC_PEER_TOKEN_FILE)");
		goto out;
	}
	o.strict_ranks = strict_ranks;
	o.insecure = insecure;
	o.tls_dir = mtc_tls_dir_path(tls_dir);
	o.ready_file = ready_file;
	if (max_body >= 0)
		o.max_body = max_body;
	if (min_rate >= 0)
		o.min_rate = min_rate;
	if (max_files >= 0)
		o.max_files = max_files;
	if (max_depth >= 0)
		o.max_depth = max_depth;
	if (max_conn > 0)
		o.max_connections = max_conn;
	if (per_ip >= 0)
		o.max_conns_per_ip = per_ip;
	if (max_unauth > 0)
		o.max_unauth = max_unauth;
	if (head_timeout >= 0)
		o.head_timeout_s = head_timeout;
	if (timeout > 0)
		o.timeout_s = timeout;
	if (session_timeout > 0)
		o.session_timeout_s = session_timeout;
	if (coordinator) {
		struct mtc_coord_opts co;
		if (nodes <= 0) {
			rc = mtc_usage_error("--coordinator needs --nodes N (N > 0)");
			goto out;
		}
		/*
		 * Report bodies and plans of megabytes come and go: a fixed threshold
		 * keeps each in its own mapping, given back when freed, where glibc's
		 * moving one would leave them in the heap to raise the next peak.
		 */
		mallopt(M_MMAP_THRESHOLD, 256 << 10);
		mtc_coord_defaults(&co);
		co.nodes = nodes;
		co.strict_ranks = strict_ranks;
		if (job && !mtc_valid_job_name(job)) {
			rc = mtc_usage_error("--job: '%s' is not a job name", job);
			goto out;
		}
		co.job = job;
		if (round_s > 0)
			co.round_s = round_s;
		if (heartbeat_s > 0)
			co.heartbeat_s = heartbeat_s;
		if (poll_s > 0)
			co.poll_s = poll_s;
		coord = mtc_coord_new(&co);
		o.route_prefix = MTC_COORD_PREFIX;
		o.route_admit = mtc_coord_admit;
		o.route = mtc_coord_route;
		o.route_start = mtc_coord_start;
		o.route_collect = mtc_coord_collect;
		o.metrics = mtc_coord_metrics;
		o.route_arg = coord;
		if (max_conn <= 0 && 3 * nodes + 64 > o.max_connections)
			o.max_connections = 3 * nodes + 64;
		if (max_unauth <= 0)
			o.max_unauth += nodes;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!(s = mtc_peer_server_start(&o, err, sizeof err))) {
		/* its dir, address, token or TLS files: starting it again unchanged fails the same */
		mtc_error("cannot serve '%s': %s", dir, err);
		mtc_coord_free(coord);
		rc = MTC_EXIT_USAGE;
		goto out;
	}
	if (print_serving(dir, mtc_peer_server_address(s), !!o.tls_dir, coordinator ? nodes : 0, json) <
	    0)
		mtc_warn("cannot write the result line:");
	sigwait(&set, &sig);
	mtc_info("signal %d: shutting down", sig);
	if (coord)
		mtc_coord_shutdown(coord);
	mtc_peer_server_stop(s);
	mtc_coord_free(coord);
	rc = MTC_EXIT_OK;
out:
	poptFreeContext(ctx);
	free(dir);
	free(listen);
	free(token);
	free(tls_dir);
	free(ready_file);
	free(job);
	free(bg_name);
	return rc;
}

/* What push and fetch take on how to reach peers. */
struct client_args {
	char *token_file, *tls_dir;
	double timeout;
	int retries, streams;
};

#define CLIENT_ARGS_INIT      \
	{                     \
		.retries = -1 \
	}
#define CLIENT_OPTIONS(a, streams_help)                                                                     \
	MTC_POPT_PEER_TOKEN_FILE((a).token_file),                                                           \
		{ "tls-dir",                                                                                \
		  '\0',                                                                                     \
		  POPT_ARG_STRING,                                                                          \
		  &(a).tls_dir,                                                                             \
		  0,                                                                                        \
		  "HTTPS: peers checked against DIR/ca.crt, DIR/tls.crt shown as the client "               \
		  "certificate (else $MTC_TLS_DIR)",                                                        \
		  "DIR" },                                                                                  \
		MTC_POPT_TIMEOUT((a).timeout, "seconds per object, retries included (default 3600)"),       \
		{ "retries", '\0', POPT_ARG_INT, &(a).retries, 0, "retries per request (default 4)", "N" }, \
	{                                                                                                   \
		"streams", '\0', POPT_ARG_INT, &(a).streams, 0, streams_help, "N"                           \
	}

static int client_setup(struct mtc_peer_client *pc, const struct client_args *a, char **token)
{
	char err[512];
	const char *token_file = mtc_peer_token_path(a->token_file);
	mtc_peer_client_defaults(pc);
	if (a->timeout > 0)
		pc->deadline_s = a->timeout;
	if (a->retries >= 0)
		pc->retries = a->retries;
	if (a->streams > 0)
		pc->streams = a->streams > 64 ? 64 : a->streams;
	*token = NULL;
	if (token_file) {
		if (!(*token = mtc_read_token_file(token_file, err, sizeof err))) {
			mtc_error("%s", err);
			return MTC_EXIT_USAGE;
		}
		pc->token = *token;
	}
	if (mtc_tls_client_setup(a->tls_dir, err, sizeof err) < 0) {
		mtc_error("%s", err);
		return MTC_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	return MTC_EXIT_OK;
}

static void client_args_free(struct client_args *a)
{
	free(a->token_file);
	free(a->tls_dir);
}

static int count_argv(char **v)
{
	int n = 0;
	while (v && v[n])
		n++;
	return n;
}

static void free_argv(char **v)
{
	for (int i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* push's human result: a line per peer the step reached (a peer it did not is an error line). */
static int print_pushed(json_t *summary)
{
	json_t *peers = json_object_get(summary, "peers"), *p;
	size_t i;

	json_array_foreach (peers, i, p) {
		if (!json_is_true(json_object_get(p, "ok")))
			continue;
		printf("pushed step %lld to '%s': %lld metas, %lld data sent, %lld skipped, %lld bytes "
		       "in %.3f s\n",
		       (long long)json_integer_value(json_object_get(summary, "step")),
		       json_string_value(json_object_get(p, "peer")),
		       (long long)json_integer_value(json_object_get(p, "metas")),
		       (long long)json_integer_value(json_object_get(p, "data-sent")),
		       (long long)json_integer_value(json_object_get(p, "data-skipped")),
		       (long long)json_integer_value(json_object_get(p, "bytes")),
		       json_number_value(json_object_get(p, "seconds")));
	}
	json_decref(summary);
	return fflush(stdout) == 0 ? 0 : -1;
}

int mtc_replicate_push(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL, *step_s = NULL, *tmpl = NULL, *token = NULL, **peers = NULL,
	     **urls = NULL;
	struct client_args ca = CLIENT_ARGS_INIT;
	int n_urls = 0, failed = 0, json = 0, rc;
	long long step;
	struct poptOption opts[] = {
		MTC_POPT_DIR(dir),
		MTC_POPT_CONFIG(config),
		MTC_POPT_STEP(step_s, "the step to push"),
		MTC_POPT_PEER(peers, "push to this peer (repeatable)"),
		MTC_POPT_PEER_URL_TEMPLATE(tmpl),
		CLIENT_OPTIONS(ca, "connections per tree and peer (default 4; 1: one tar stream)"),
		MTC_POPT_JSON(json, "the summary is one JSON line"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_peer_client pc;
	struct mtc_config cfg;
	json_t *summary;

	if (mtc_replicate_parse(argc, argv, opts, PUSH_USAGE, &ctx, &rc) < 0)
		goto out;
	if ((rc = mtc_cli_required("--dir", !!dir, "--config", !!config, "--step", !!step_s, NULL))) {
		goto out;
	}
	if (mtc_parse_uint(step_s, &step) < 0) {
		rc = mtc_usage_error("--step takes a step number, not '%s'", step_s);
		goto out;
	}
	if (!peers && !tmpl) {
		rc = mtc_usage_error("give --peer URL or --peer-url-template T");
		goto out;
	}
	if ((rc = mtc_cli_config(config, &cfg)) != MTC_EXIT_OK)
		goto out;
	if (peers) {
		n_urls = count_argv(peers);
		urls = xcalloc((size_t)n_urls + 1, sizeof *urls);
		for (int i = 0; i < n_urls; i++)
			urls[i] = xstrdup(peers[i]);
	} else {
		int ranks[256], n = mtc_peers_from_config(&cfg, ranks, 256);
		if (n < 0) {
			mtc_error("cannot choose peers: nodes %d, data parallelism %d", cfg.nodes,
				  cfg.data_parallelism);
			mtc_config_free(&cfg);
			rc = MTC_EXIT_FAILURE;
			goto out;
		}
		urls = xcalloc((size_t)n + 1, sizeof *urls);
		for (int i = 0; i < n; i++)
			urls[n_urls++] = mtc_peer_url(tmpl, ranks[i]);
	}
	rc = client_setup(&pc, &ca, &token);
	if (rc != MTC_EXIT_OK) {
		mtc_config_free(&cfg);
		goto out;
	}
	if (token) {
		/* the node's own credential: a peer takes from it only this rank's metas */
		char *cred = mtc_peer_token_for(token, cfg.job_name, cfg.node_rank);
		free(token);
		pc.token = token = cred;
	}
	summary = mtc_peer_push_step(&pc, dir, cfg.job_name, step, cfg.node_rank, urls, n_urls, &failed);
	if ((json ? mtc_json_print(summary) : print_pushed(summary)) < 0 && !failed)
		failed = 1;
	if (failed < 0)
		mtc_error("nothing to push: no .meta of step %lld for node %d in '%s'", step,
			  cfg.node_rank, dir);
	rc = failed < 0 ? MTC_EXIT_NOTFOUND : failed ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	free_argv(urls);
	free_argv(peers);
	free(dir);
	free(config);
	free(step_s);
	free(tmpl);
	client_args_free(&ca);
	free(token);
	return rc;
}

int mtc_replicate_fetch(int argc, const char **argv)
{
	char *dir = NULL, *from = NULL, *token = NULL, **hashes = NULL, **metas = NULL;
	struct client_args ca = CLIENT_ARGS_INIT;
	int rc, worst = 0, json = 0, fetched = 0, total = 0;
	long long fetched_bytes = 0;
	struct poptOption opts[] = {
		MTC_POPT_DIR(dir),
		{ "from", '\0', POPT_ARG_STRING, &from, 0, "the peer to fetch from", "URL" },
		{ "hash", 'H', POPT_ARG_ARGV, &hashes, 0, "fetch <H>.data (repeatable)", "H" },
		{ "meta", '\0', POPT_ARG_ARGV, &metas, 0, "fetch this .meta and its data (repeatable)",
		  "NAME" },
		CLIENT_OPTIONS(ca, "connections per tree (default 4; 1: one tar stream)"),
		MTC_POPT_JSON(json, "the summary is one JSON line"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_peer_client pc;
	json_t *list, *summary;
	double t0 = mtc_now();

	if (mtc_replicate_parse(argc, argv, opts, FETCH_USAGE, &ctx, &rc) < 0)
		goto out;
	if ((rc = mtc_cli_required("--dir", !!dir, "--from", !!from, "--hash or --meta", hashes || metas,
				   NULL))) {
		goto out;
	}
	for (int i = 0; hashes && hashes[i]; i++)
		if (!mtc_is_hash(hashes[i])) {
			rc = mtc_usage_error("'%s' is not a hash", hashes[i]);
			goto out;
		}
	for (int i = 0; metas && metas[i]; i++) {
		struct mtc_ckpt_name n;
		if (mtc_parse_ckpt_name(metas[i], &n) || n.ext != MTC_EXT_META) {
			rc = mtc_usage_error("'%s' is not a .meta name", metas[i]);
			goto out;
		}
	}
	if ((rc = mtc_cli_local_dir(dir)) != MTC_EXIT_OK)
		goto out;
	rc = client_setup(&pc, &ca, &token);
	if (rc != MTC_EXIT_OK)
		goto out;
	list = json_array();
	for (int pass = 0; pass < 2; pass++)
		for (char **v = pass ? metas : hashes; v && *v; v++) {
			char err[1024], *name = pass ? xstrdup(*v) : xasprintf("%s.data", *v);
			long long bytes = 0;
			int r = mtc_peer_get(&pc, from, dir, name, &bytes, err, sizeof err);
			json_t *o = json_pack("{s:s, s:b, s:I}", "name", name, "ok", r == 0, "bytes",
					      (json_int_t)bytes);
			if (r) {
				json_object_set_new(o, "error", json_string(err));
				mtc_error("cannot fetch '%s': %s", name, err);
				if (!worst || r == MTC_EXIT_INTEGRITY)
					worst = r;
			} else {
				fetched++;
				fetched_bytes += bytes;
			}
			total++;
			json_array_append_new(list, o);
			free(name);
		}
	if (json) {
		summary = json_pack("{s:s, s:b, s:o, s:o}", "from", from, "ok", worst == 0, "seconds",
				    mtc_json_seconds(mtc_now() - t0), "transfers", list);
		if (mtc_json_print(summary) < 0 && !worst)
			worst = MTC_EXIT_FAILURE;
	} else {
		json_decref(list);
		if (fetched)
			printf("fetched %d of %d objects from '%s': %lld bytes in %.3f s\n", fetched,
			       total, from, fetched_bytes, mtc_now() - t0);
		if (fflush(stdout) != 0 && !worst)
			worst = MTC_EXIT_FAILURE;
	}
	rc = worst;
out:
	poptFreeContext(ctx);
	free_argv(hashes);
	free_argv(metas);
	free(dir);
	free(from);
	client_args_free(&ca);
	free(token);
	return rc;
}
