/*
 * mtc-replicate: the steady-state side of a node.
 *   digest  print the content digest of files and directories (b3sum's shape)
 *   commit  turn saved steps in the local dir into <hash>.data + .meta
 *   gc      local garbage collection, keeping the given steps
 *   serve, push, fetch, run: the peer service and the loop (added by their owners)
 * Each verb is one function with its own options; main() only dispatches.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "blake3/blake3.h"
#include "common/cli.h"
#include "clock.h"
#include "commit.h"
#include "config.h"
#include "digest.h"
#include "exitcode.h"
#include "fsutil.h"
#include "gc.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "node_status.h"
#include "ocdbt/orbax_digest.h"
#include "coord/coord_client.h"
#include "mtc-replicate/peer_cmd.h"
#include "peers.h"
#include "mtc-replicate/steady.h"
#include "token_file.h"
#include "xalloc.h"

enum verb { DIGEST, COMMIT, GC, SERVE, PUSH, FETCH, RUN, NVERBS };

typedef int verb_fn(int argc, const char **argv);

static verb_fn do_digest, do_commit, do_gc, do_run;

static const struct {
	const char *name;
	verb_fn *fn; /* NULL: not in this build yet */
	const char *usage;
} verbs[NVERBS] = {
	[DIGEST] = { "digest", do_digest, "digest [--json] [--threads N] [--framework F] PATH..." },
	[COMMIT] = { "commit", do_commit, "commit --dir DIR --config CFG [--watch | --wait SEC] [--quiet-time SEC] [--json]" },
	[GC] = { "gc", do_gc, "gc --dir DIR --config CFG --keep STEP[,STEP...] [--dry-run] [--json]" },
	[SERVE] = { "serve", mtc_replicate_serve, "serve --dir DIR --listen HOST:PORT [--peer-token-file FILE] [--insecure] [--json]" },
	[PUSH] = { "push", mtc_replicate_push, "push --dir DIR --config CFG --step S [--peer URL]... [--peer-url-template T] [--json]" },
	[FETCH] = { "fetch", mtc_replicate_fetch, "fetch --dir DIR --from URL [--hash H]... [--meta NAME]... [--json]" },
	[RUN] = { "run", do_run, "run --dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL] [--peer-url-template T | --peers-file FILE] [--json]" },
};

/* b3sum escapes a name holding a newline or backslash and marks the line with a leading '\'. */
static void print_b3sum_line(const char *digest, const char *path)
{
	if (!strpbrk(path, "\n\\")) {
		printf("%s  %s\n", digest, path);
		return;
	}
	printf("\\%s  ", digest);
	for (const char *p = path; *p; p++)
		fputs(*p == '\n' ? "\\n" : *p == '\\' ? "\\\\" : (char[]){ *p, 0 }, stdout);
	putchar('\n');
}

/*
 * The digest of one path: with --framework orbax the logical digest of its
 * OCDBT store (orbax_digest.h), else, or when it has none, the merkle digest.
 * Returns an exit code; m is filled only for a merkle digest.
 */
/* "-": the BLAKE3 of standard input, as b3sum gives it. */
static int digest_stdin(int threads, char d[MTC_DIGEST_LEN], long long *bytes)
{
	static struct mtc_blake3 h;
	size_t cap = 1 << 20;
	char *buf = xmalloc(cap);
	uint8_t out[MTC_BLAKE3_OUT_LEN];
	ssize_t n;

	mtc_blake3_init(&h);
	mtc_blake3_set_threads(&h, threads > 0 ? threads : 1);
	*bytes = 0;
	while ((n = read(STDIN_FILENO, buf, cap)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			mtc_error("cannot read standard input:");
			free(buf);
			return MTC_EXIT_FAILURE;
		}
		mtc_blake3_update(&h, buf, (size_t)n);
		*bytes += n;
	}
	free(buf);
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, d);
	return MTC_EXIT_OK;
}

static int digest_one(const char *path, int threads, int orbax, char d[MTC_DIGEST_LEN],
		      struct mtc_manifest *m, long long *bytes)
{
	char err[1024];
	int r;

	if (!strcmp(path, "-"))
		return digest_stdin(threads, d, bytes);
	r = orbax ? mtc_orbax_digest(path, threads, d, err, sizeof err) : 0;
	if (r < 0) {
		mtc_error("integrity failure: %s", err);
		return MTC_EXIT_INTEGRITY;
	}
	if (r == 0 && mtc_digest_path(path, threads, d, m) < 0) {
		int rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
		mtc_error("cannot digest '%s':", path);
		return rc;
	}
	*bytes = mtc_manifest_bytes(m);
	return MTC_EXIT_OK;
}

static int do_digest(int argc, const char **argv)
{
	int json = 0, threads = 0, manifest = 0;
	char *framework = NULL;
	struct poptOption opts[] = {
		{ "json", '\0', POPT_ARG_NONE, &json, 0, "one JSON object per line", NULL },
		{ "threads", 't', POPT_ARG_INT, &threads, 0,
		  "hashing threads (default: one per CPU)", "N" },
		{ "manifest", 'm', POPT_ARG_NONE, &manifest, 0,
		  "with --json, add the manifest (path, type, size, digest of every entry)", NULL },
		{ "framework", '\0', POPT_ARG_STRING, &framework, 0,
		  "orbax: the logical digest of the step's OCDBT store (default and pytorch: merkle)",
		  "orbax|pytorch|pytorch.distributed" },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	int rc;
	if (mtc_replicate_parse(argc, argv, opts, verbs[DIGEST].usage, &ctx, &rc) < 0)
		goto out;
	if (threads < 0) {
		rc = mtc_usage_error("--threads must be 0 or more");
		goto out;
	}
	int orbax = framework && !strcmp(framework, "orbax");
	if (framework && !orbax && strcmp(framework, "pytorch") &&
	    strcmp(framework, "pytorch.distributed")) {
		rc = mtc_usage_error("--framework must be orbax, pytorch or pytorch.distributed");
		goto out;
	}
	const char **paths = poptGetArgs(ctx);
	if (!paths || !*paths) {
		rc = mtc_usage_error("digest needs a PATH");
		goto out;
	}
	rc = MTC_EXIT_OK;
	for (; *paths; paths++) {
		char d[MTC_DIGEST_LEN];
		struct mtc_manifest m;
		mtc_manifest_init(&m);
		double t0 = mtc_now();
		long long bytes = 0;
		int r = digest_one(*paths, threads, orbax, d, &m, &bytes);
		if (r != MTC_EXIT_OK) {
			rc = r;
			mtc_manifest_free(&m);
			continue;
		}
		if (json) {
			json_t *o = json_pack("{s:s, s:s, s:I, s:o}", "path", *paths, "digest", d,
					      "bytes", (json_int_t)bytes, "seconds",
					      mtc_json_seconds(mtc_now() - t0));
			if (manifest)
				json_object_set_new(o, "manifest", mtc_manifest_to_json(&m));
			if (mtc_json_print(o) < 0)
				rc = MTC_EXIT_FAILURE;
		} else {
			print_b3sum_line(d, *paths);
		}
		mtc_manifest_free(&m);
	}
	if (fflush(stdout) != 0)
		rc = MTC_EXIT_FAILURE;
out:
	free(framework);
	poptFreeContext(ctx);
	return rc;
}

static int load_config(const char *path, struct mtc_config *cfg)
{
	char err[512];
	if (!path)
		return mtc_usage_error("--config is required");
	if (mtc_config_load(path, cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", path, err);
		return MTC_EXIT_USAGE;
	}
	return MTC_EXIT_OK;
}

static void print_commit(const struct mtc_commit_result *r, void *arg)
{
	(void)arg;
	mtc_json_print(json_pack("{s:I, s:i, s:s, s:I, s:o, s:b}", "step", (json_int_t)r->step,
				 "worker", r->worker, "hash", r->hash, "bytes", (json_int_t)r->bytes,
				 "seconds", mtc_json_seconds(r->seconds), "redundant", r->redundant));
}

/*
 * The steps a scan left pending: with json one result line
 * {"pending":[S...],"quiet-time":Q}, else a warning for each on stderr.
 */
static void report_pending(const struct mtc_commit_pendings *p, double quiet, int json)
{
	if (!p->n)
		return;
	if (json) {
		json_t *steps = json_array();
		for (size_t i = 0; i < p->n; i++)
			json_array_append_new(steps, json_integer(p->v[i].step));
		mtc_json_print(json_pack("{s:o, s:o}", "pending", steps, "quiet-time",
					 mtc_json_seconds(quiet)));
		return;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].saves < 0)
			mtc_warn("step %lld is pending: it kept changing while it was hashed; not "
				 "committed (--wait SEC waits for it)", p->v[i].step);
		else if (p->v[i].saves < p->v[i].workers)
			mtc_warn("step %lld is pending: %d of %d workers' saves are there",
				 p->v[i].step, p->v[i].saves, p->v[i].workers);
		else
			mtc_warn("step %lld is pending: written to within the last %g s (--quiet-time); "
				 "not committed (--wait SEC waits for it)", p->v[i].step, quiet);
}

/*
 * commit --wait: scans until no step is pending or wait_s has passed, taking
 * each step as it becomes quiet. Exit 3 when some stay pending.
 */
static int commit_wait(const struct mtc_commit_opts *o, struct mtc_commit_pendings *p,
		       double wait_s, int json)
{
	double end = mtc_now() + wait_s;
	for (;;) {
		if (mtc_commit_scan_pending(o, p) < 0)
			return MTC_EXIT_FAILURE;
		if (!p->n)
			return MTC_EXIT_OK;
		if (mtc_now() >= end)
			break;
		double left = end - mtc_now();
		usleep((useconds_t)((left < 0.25 ? left : 0.25) * 1e6));
	}
	if (json)
		report_pending(p, o->quiet_s, json);
	mtc_error("timed out after %g s: step %lld%s still pending", wait_s, p->v[0].step,
		  p->n > 1 ? " and others" : "");
	return MTC_EXIT_TIMEOUT;
}

static int do_commit(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL;
	int watch = 0, threads = 0, json = 0;
	double quiet = 5, timeout = -1, wait_s = -1;
	struct poptOption opts[] = {
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "the local dir", "DIR" },
		{ "config", 'c', POPT_ARG_STRING, &config, 0, "the accepted config (JSON, - for stdin)",
		  "CFG" },
		{ "watch", 'w', POPT_ARG_NONE, &watch, 0, "keep committing steps as they arrive", NULL },
		{ "quiet-time", '\0', POPT_ARG_DOUBLE, &quiet, 0,
		  "a created step dir or .save file is taken after SEC s without change (default 5)",
		  "SEC" },
		{ "timeout", '\0', POPT_ARG_DOUBLE, &timeout, 0,
		  "with --watch, exit 0 after SEC s (default: never)", "SEC" },
		{ "wait", '\0', POPT_ARG_DOUBLE, &wait_s, 0,
		  "wait up to SEC s for pending steps to become quiet and commit them; exit 3 if "
		  "some are still pending", "SEC" },
		{ "threads", 't', POPT_ARG_INT, &threads, 0, "hashing threads (default: one per CPU)",
		  "N" },
		{ "json", '\0', POPT_ARG_NONE, &json, 0,
		  "only JSON on stdout: a line per committed step, one for the pending steps", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_config cfg;
	struct mtc_commit_pendings pending = { 0 };
	int rc;
	if (mtc_replicate_parse(argc, argv, opts, verbs[COMMIT].usage, &ctx, &rc) < 0)
		goto out;
	if (!dir) {
		rc = mtc_usage_error("--dir is required");
		goto out;
	}
	if (quiet < 0 || threads < 0) {
		rc = mtc_usage_error("--quiet-time and --threads take a number >= 0");
		goto out;
	}
	if (watch && wait_s >= 0) {
		rc = mtc_usage_error("--watch and --wait exclude each other");
		goto out;
	}
	if ((rc = load_config(config, &cfg)) != MTC_EXIT_OK)
		goto out;
	struct mtc_commit_opts o = {
		.dir = dir, .cfg = &cfg, .threads = threads, .quiet_s = quiet, .cb = print_commit
	};
	if (watch) {
		rc = mtc_commit_watch(&o, timeout) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	} else if (wait_s >= 0) {
		rc = commit_wait(&o, &pending, wait_s, json);
	} else {
		rc = mtc_commit_scan_pending(&o, &pending) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
		report_pending(&pending, quiet, json);
	}
	free(pending.v);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	free(dir);
	free(config);
	return rc;
}

static int parse_steps(const char *list, long long **steps, size_t *n)
{
	char *copy = xstrdup(list), *save = NULL;
	*steps = NULL;
	*n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long long v;
		if (mtc_parse_uint(t, &v) < 0) {
			free(copy);
			free(*steps);
			return -1;
		}
		*steps = xrealloc(*steps, (*n + 1) * sizeof **steps);
		(*steps)[(*n)++] = v;
	}
	free(copy);
	return 0;
}

static void print_would_delete(const char *path, void *arg)
{
	if (arg)
		json_array_append_new(arg, json_string(path));
	else
		printf("would delete '%s'\n", path);
}

/* The summary: text, or with json one line; a dry run says what would go. */
static int print_gc(const struct mtc_gc_stats *st, int dry_run, json_t *would, int json)
{
	if (json && dry_run)
		return mtc_json_print(json_pack("{s:b, s:O, s:I, s:I, s:I, s:I}", "dry-run", 1,
						"would-delete", would, "would-delete-meta",
						(json_int_t)st->deleted_meta, "would-delete-data",
						(json_int_t)st->deleted_data, "kept-meta",
						(json_int_t)st->kept_meta, "kept-data",
						(json_int_t)st->kept_data));
	if (json)
		return mtc_json_print(json_pack("{s:b, s:I, s:I, s:I, s:I}", "dry-run", 0,
						"deleted-meta", (json_int_t)st->deleted_meta,
						"deleted-data", (json_int_t)st->deleted_data,
						"kept-meta", (json_int_t)st->kept_meta, "kept-data",
						(json_int_t)st->kept_data));
	printf("%s %zu .meta and %zu .data, kept %zu .meta and %zu .data\n",
	       dry_run ? "would delete" : "deleted", st->deleted_meta, st->deleted_data,
	       st->kept_meta, st->kept_data);
	return fflush(stdout) == 0 ? 0 : -1;
}

static int do_gc(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL, *keep = NULL;
	int own_only = 0, dry_run = 0, json = 0;
	double grace = 0;
	struct poptOption opts[] = {
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "the local dir", "DIR" },
		{ "config", 'c', POPT_ARG_STRING, &config, 0, "the accepted config (JSON, - for stdin)",
		  "CFG" },
		{ "keep", 'k', POPT_ARG_STRING, &keep, 0, "steps whose .meta and .data stay ('' for none)",
		  "STEP[,STEP...]" },
		{ "own-only", '\0', POPT_ARG_NONE, &own_only, 0,
		  "keep only this node's own .meta (data parallelism after a restore)", NULL },
		{ "dry-run", 'n', POPT_ARG_NONE, &dry_run, 0, "print what would go, delete nothing",
		  NULL },
		{ "grace", '\0', POPT_ARG_DOUBLE, &grace, 0,
		  "keep any .data published less than this long ago (default 0)", "SECONDS" },
		{ "json", '\0', POPT_ARG_NONE, &json, 0,
		  "print the summary as one JSON line (a dry run lists what would go in it)", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_config cfg;
	long long *steps = NULL;
	size_t nsteps = 0;
	int rc;
	if (mtc_replicate_parse(argc, argv, opts, verbs[GC].usage, &ctx, &rc) < 0)
		goto out;
	if (!dir || !keep) {
		rc = mtc_usage_error("--dir and --keep are required");
		goto out;
	}
	if (parse_steps(keep, &steps, &nsteps) < 0) {
		rc = mtc_usage_error("--keep takes steps like 100,200, not '%s'", keep);
		goto out;
	}
	if (grace < 0) {
		rc = mtc_usage_error("--grace takes seconds, 0 or more");
		goto out;
	}
	if ((rc = load_config(config, &cfg)) != MTC_EXIT_OK)
		goto out;
	json_t *would = json ? json_array() : NULL;
	struct mtc_gc_opts g = { dir, &cfg, steps, nsteps, own_only, 0, dry_run, grace };
	struct mtc_gc_stats st;
	if (mtc_gc_dry(&g, &st, print_would_delete, would) < 0)
		rc = MTC_EXIT_FAILURE;
	else
		rc = print_gc(&st, dry_run, would, json) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	json_decref(would);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	free(steps);
	free(dir);
	free(config);
	free(keep);
	return rc;
}

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
static int peer_urls(const struct mtc_config *cfg, const char *tmpl, const char *file,
		     char ***urls, int *n)
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
		for (char *save = NULL, *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
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

static json_t *step_or_null(long long step)
{
	return step >= 0 ? json_integer(step) : json_null();
}

/*
 * run --json: a line for each step as it reaches every peer and a backup
 * (its time to safety), and one when the loop stops, the node's state as
 * the loop left it in the local dir's status file (null: no such step yet).
 */
static int print_run(const char *dir, int rank, int sig)
{
	struct mtc_node_status st;
	mtc_node_status_read(dir, &st);
	return mtc_json_print(json_pack(
		"{s:i, s:o, s:o, s:o, s:o, s:I, s:s}", "rank", rank, "committed",
		step_or_null(st.committed), "replicated", step_or_null(st.replicated), "backed-up",
		step_or_null(st.backup_step), "backup-time", step_or_null(st.backup_time),
		"backups-failed", (json_int_t)st.backups_failed, "stopped",
		sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "timeout"));
}

static int do_run(int argc, const char **argv)
{
	char *dir = NULL, *config = NULL, *backup = NULL, *coord = NULL, *tmpl = NULL,
	     *peers_file = NULL, *token_file = NULL, *store_token = NULL, *token = NULL,
	     *s3_endpoint = NULL, err[512];
	double sync_s = 10, quiet = 5, heartbeat = 5, timeout = -1;
	int threads = 0, json = 0, no_prehash = 0;
	struct poptOption opts[] = {
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "the local dir", "DIR" },
		{ "config", 'c', POPT_ARG_STRING, &config, 0, "the accepted config (a JSON file)", "CFG" },
		{ "backup", 'b', POPT_ARG_STRING, &backup, 0,
		  "backup location (the job name is added); without it no backups", "LOCATION" },
		{ "coordinator-url", '\0', POPT_ARG_STRING, &coord, 0,
		  "the coordinator (default $MTC_COORDINATOR)", "URL" },
		{ "peer-url-template", '\0', POPT_ARG_STRING, &tmpl, 0,
		  "turns a peer rank into its URL, e.g. http://job-0-{rank}.job:7070", "T" },
		{ "peers-file", '\0', POPT_ARG_STRING, &peers_file, 0,
		  "one peer URL per line, in rank order", "FILE" },
		{ "peer-token-file", '\0', POPT_ARG_STRING, &token_file, 0,
		  "bearer token for the peers and the coordinator", "FILE" },
		{ "gcs-token-file", '\0', POPT_ARG_STRING, &store_token, 0, "gs:// bearer token file (else $MTC_GCS_TOKEN, credentials, metadata server)", "FILE" },
		{ "s3-endpoint", '\0', POPT_ARG_STRING, &s3_endpoint, 0, "s3:// endpoint URL (else $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's, AWS's)", "URL" },
		{ "sync-interval", '\0', POPT_ARG_DOUBLE, &sync_s, 0,
		  "seconds between syncs with the coordinator (default 10)", "SEC" },
		{ "quiet-time", '\0', POPT_ARG_DOUBLE, &quiet, 0,
		  "a created step dir is taken after SEC s without change (default 5)", "SEC" },
		{ "heartbeat", '\0', POPT_ARG_DOUBLE, &heartbeat, 0,
		  "seconds between heartbeats (default 5)", "SEC" },
		{ "timeout", '\0', POPT_ARG_DOUBLE, &timeout, 0, "exit 0 after SEC s (default: never)",
		  "SEC" },
		{ "threads", 't', POPT_ARG_INT, &threads, 0, "hashing threads (default: one per CPU)",
		  "N" },
		{ "no-prehash", '\0', POPT_ARG_NONE, &no_prehash, 0,
		  "hash a step only at its commit, not while the framework writes it", NULL },
		{ "json", '\0', POPT_ARG_NONE, &json, 0,
		  "a JSON line for each step's time to safety, and the node's state when the loop stops", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	struct mtc_config cfg;
	char **urls = NULL, *context;
	int n_urls = 0;
	int rc;

	if (mtc_replicate_parse(argc, argv, opts, verbs[RUN].usage, &ctx, &rc) < 0)
		goto out;
	if (!dir || !config || !strcmp(config, "-")) {
		rc = mtc_usage_error("--dir and --config FILE are required (mtc-backup reads the file)");
		goto out;
	}
	if (tmpl && peers_file) {
		rc = mtc_usage_error("--peer-url-template and --peers-file exclude each other");
		goto out;
	}
	if ((rc = mtc_cli_local_dir(dir)) != MTC_EXIT_OK)
		goto out;
	if ((rc = load_config(config, &cfg)) != MTC_EXIT_OK)
		goto out;
	context = xasprintf("job=%s node=%d/%d", cfg.job_name, cfg.node_rank, cfg.nodes);
	mtc_log_status_dir(dir, context);
	free(context);
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
			.dir = dir, .cfg = &cfg, .config_path = config, .backup = backup,
			.coordinator = mtc_coord_url(coord), .peers = urls, .n_peers = n_urls,
			.token = token, .store_token_file = store_token,
			.store_s3_endpoint = s3_endpoint, .backup_prog = prog,
			.sync_s = sync_s, .quiet_s = quiet, .heartbeat_s = heartbeat,
			.timeout_s = timeout, .threads = threads, .no_prehash = no_prehash, .json = json,
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
	free(token);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: mtc-replicate VERB [OPTIONS]\n");
	for (int v = 0; v < NVERBS; v++)
		if (verbs[v].fn)
			fprintf(f, "  mtc-replicate %s\n", verbs[v].usage);
	fprintf(f, "Run 'mtc-replicate VERB --help' for the options of a verb.\n");
}

int main(int argc, const char **argv)
{
	mtc_log_init(argv[0]);
	mtc_http_init();
	if (argc < 2) {
		usage(stderr);
		return MTC_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--usage")) {
		usage(stdout);
		return MTC_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("mtc-replicate (mtc) %s\n", MTC_VERSION);
		return MTC_EXIT_OK;
	}
	for (int v = 0; v < NVERBS; v++)
		if (!strcmp(argv[1], verbs[v].name)) {
			if (!verbs[v].fn)
				return mtc_usage_error("'%s' is not available in this build", argv[1]);
			/* popt prints "Usage: ARGV0 USAGE", and each usage starts with its verb */
			argv[1] = argv[0];
			return verbs[v].fn(argc - 1, argv + 1);
		}
	return mtc_usage_error("unknown verb '%s'", argv[1]);
}
