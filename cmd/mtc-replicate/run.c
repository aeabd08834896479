#include "verbs.h"

static volatile sig_atomic_t run_stop;

static void on_stop_signal(int sig) { run_stop = sig; }

/* mtc-backup next to this program, else from PATH. */
static char *sibling_program(const char *name)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		char *slash, *p;
		self[n] = '\0';
		if ((slash = strrchr(self, '/'))) {
			*slash = '\0';
			p = xasprintf("%s/%s", self, name);
			if (access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	return xstrdup(name);
}

/* Peer URLs of this node's replication peers: a template with {rank}, or line r of a file. */
static int peer_urls(const struct mtc_config *cfg, const char *tmpl, const char *file, char ***urls,
		     int *n)
{
	int ranks[256], k = mtc_peers_from_config(cfg, ranks, 256);
	char *text = NULL, **lines = NULL;
	int nlines = 0;

	*urls = NULL;
	*n = 0;
	if (k < 0) {
		mtc_error("cannot choose peers for rank %d of %d", cfg->node_rank, cfg->nodes);
		return -1;
	}
	if (file) {
		if (mtc_read_file(file, 1 << 20, &text, NULL) < 0) {
			mtc_error("cannot read peers file '%s':", file);
			return -1;
		}
		for (char *save = NULL, *t = strtok_r(text, "\n", &save); t;
		     t = strtok_r(NULL, "\n", &save)) {
			lines = xrealloc(lines, (size_t)(nlines + 1) * sizeof *lines);
			lines[nlines++] = t;
		}
	}
	*urls = xcalloc((size_t)k + 1, sizeof **urls);
	for (int i = 0; i < k; i++) {
		if (file) {
			if (ranks[i] >= nlines) {
				mtc_error("peers file '%s' has no line for rank %d", file, ranks[i]);
				free(lines);
				free(text);
				return -1;
			}
			(*urls)[(*n)++] = xstrdup(lines[ranks[i]]);
		} else if (tmpl) {
			(*urls)[(*n)++] = mtc_peer_url(tmpl, ranks[i]);
		}
	}
	free(lines);
	free(text);
	return 0;
}

static json_t *step_or_null(long long step) { return step >= 0 ? json_integer(step) : json_null(); }

/*
 * run --json: a line for each step as it reaches every peer and a backup
 * (its time to safety), and one when the loop stops, the node's state as
 * the loop left it in the local dir's status file (null: no such step yet).
 */
static int print_run(const char *dir, int rank, int sig)
{
	struct mtc_node_status st;
	mtc_node_status_read(dir, &st);
	return mtc_json_print(json_pack("{s:i, s:o, s:o, s:o, s:o, s:I, s:s}", "rank", rank, "committed",
					step_or_null(st.committed), "replicated",
					step_or_null(st.replicated), "backed-up",
					step_or_null(st.backup_step), "backup-time",
					step_or_null(st.backup_time), "backups-failed",
					(json_int_t)st.backups_failed, "stopped",
					sig == SIGTERM	? "SIGTERM"
					: sig == SIGINT ? "SIGINT"
							: "timeout"));
}

int mtc_replicate_run(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL, *backup = NULL, *coord = NULL, *tmpl = NULL,
	     *peers_file = NULL, *token_file = NULL, *store_token = NULL, *token = NULL,
	     *s3_endpoint = NULL, *bg_name = NULL, err[512];
	double sync_s = 10, quiet = 5, heartbeat = 5, timeout = -1;
	int threads = 0, json = 0, no_prehash = 0;
	enum mtc_background bg = MTC_BG_IDLE;
	struct poptOption opts[] = {
		MTC_POPT_DIR(dir),
		{ "config", 'c', POPT_ARG_STRING, &config, 0, "the accepted config (a JSON file)",
		  "CFG" },
		MTC_POPT_BACKUP(backup,
				"backup location (the job name is added); without it no backups"),
		MTC_POPT_COORDINATOR_URL(coord),
		MTC_POPT_PEER_URL_TEMPLATE(tmpl),
		{ "peers-file", '\0', POPT_ARG_STRING, &peers_file, 0,
		  "one peer URL per line, in rank order", "FILE" },
		MTC_POPT_PEER_TOKEN_FILE(token_file),
		MTC_POPT_STORE_AUTH(store_token, s3_endpoint),
		{ "sync-interval", '\0', POPT_ARG_DOUBLE, &sync_s, 0,
		  "seconds between syncs with the coordinator (default 10)", "SEC" },
		MTC_POPT_QUIET_TIME(quiet,
				    "a created step dir is taken after SEC s without change (default 5)"),
		MTC_POPT_HEARTBEAT(heartbeat),
		MTC_POPT_TIMEOUT(timeout, "exit 0 after SEC s (default: never)"),
		MTC_POPT_THREADS(threads),
		{ "no-prehash", '\0', POPT_ARG_NONE, &no_prehash, 0,
		  "hash a step only at its commit, not while the framework writes it", NULL },
		MTC_POPT_BACKGROUND(bg_name, "CPU class of hashing before the commit, pushes and "
					     "backups: idle (default), nice or normal"),
		MTC_POPT_JSON(
			json,
			"a JSON line for each step's time to safety, and the node's state when the loop stops"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_config cfg;
	char **urls = NULL;
	int n_urls = 0;
	int rc;

	if (mtc_replicate_parse(argc, argv, opts, RUN_USAGE, &ctx, &rc) < 0)
		goto out;
	if ((rc = mtc_cli_required("--dir", !!dir, "--config", !!config, NULL)))
		goto out;
	if (!strcmp(config, "-")) {
		rc = mtc_usage_error("--config takes a FILE, not - (mtc-backup reads the file)");
		goto out;
	}
	if (tmpl && peers_file) {
		rc = mtc_usage_error("--peer-url-template and --peers-file exclude each other");
		goto out;
	}
	if ((rc = mtc_cli_background(bg_name, &bg)))
		goto out;
	if ((rc = mtc_cli_node(dir, config, &cfg)) != MTC_EXIT_OK)
		goto out;
	/* what it is given cannot work (a token, the peers): a restart does not change that */
	rc = MTC_EXIT_USAGE;
	if (mtc_peer_token_path(token_file) &&
	    !(token = mtc_read_token_file(mtc_peer_token_path(token_file), err, sizeof err)))
		mtc_error("%s", err);
	else if ((tmpl || peers_file) && peer_urls(&cfg, tmpl, peers_file, &urls, &n_urls) < 0)
		;
	else if (cfg.nodes > 1 && !mtc_coord_url(coord))
		rc = mtc_usage_error("%d nodes need a coordinator: give --coordinator-url or "
				     "MTC_COORDINATOR",
				     cfg.nodes);
	else {
		struct sigaction sa = { .sa_handler = on_stop_signal };
		char *prog = sibling_program("mtc-backup");
		struct mtc_steady_opts o = {
			.dir = dir,
			.cfg = &cfg,
			.config_path = config,
			.backup = backup,
			.coordinator = mtc_coord_url(coord),
			.peers = urls,
			.n_peers = n_urls,
			.token = token,
			.store_token_file = store_token,
			.store_s3_endpoint = s3_endpoint,
			.backup_prog = prog,
			.sync_s = sync_s,
			.quiet_s = quiet,
			.heartbeat_s = heartbeat,
			.timeout_s = timeout,
			.threads = threads,
			.no_prehash = no_prehash,
			.background = bg,
			.json = json,
			.stop = &run_stop,
		};
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		rc = mtc_steady_run(&o);
		if (run_stop)
			mtc_info("signal %d: stopped", (int)run_stop);
		if (json && rc == MTC_EXIT_OK && print_run(dir, cfg.node_rank, (int)run_stop) < 0)
			rc = MTC_EXIT_FAILURE;
		free(prog);
	}
	for (int i = 0; i < n_urls; i++)
		free(urls[i]);
	free(urls);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	free(dir);
	free(config);
	free(backup);
	free(coord);
	free(tmpl);
	free(peers_file);
	free(token_file);
	free(store_token);
	free(s3_endpoint);
	free(bg_name);
	free(token);
	return rc;
}
