/*
 * mtc-backup: upload this node's part of step S to LOCATION/<job>/<name>/.
 *   1. read the accepted config and this node's .meta files of S; a name that
 *      holds a .meta of another step is refused (a backup name is bound to one
 *      step), checked again before the .meta files go up
 *   2. check the local data against its name (digest + manifest)
 *   3. claim <hash>.manifest (create-only), then upload the data objects not
 *      already there; with data parallelism one copy of each hash: the last
 *      partition's, or the first claimer's (see owns_data)
 *   4. wait until the data this node's .meta names is whole in the backup,
 *      then upload the .meta files last: a .meta that exists means its data
 *      is whole
 *   5. print a JSON summary line
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "backup_check.h"
#include "cli.h"
#include "config.h"
#include "data_name.h"
#include "digest.h"
#include "exitcode.h"
#include "fsutil.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "manifest_text.h"
#include "naming.h"
#include "peer/peer_manifest.h"
#include "progress.h"
#include "store/store.h"
#include "store/store_tree.h"
#include "xalloc.h"

static char *dir, *config_file, *step_text, *location, *name_opt, *token_file;
static int parallel, threads, no_verify, no_progress, json, stall_s = 300;
static char *slice_threshold_text;
static long long slice_threshold;
static int slices;

struct meta {
	char *file;
	char hash[MTC_HASH_MAX + 1];
	int wait; /* another node uploads its data: wait until it is whole */
};

static int read_metas(const struct mtc_config *cfg, long long step, struct meta *metas)
{
	for (int w = 0; w < cfg->workers_per_node; w++) {
		char *file = mtc_ckpt_name(cfg->job_name, step, cfg->node_rank, w, MTC_EXT_META);
		char *path = xasprintf("%s/%s", dir, file), *buf;
		size_t len;

		metas[w].file = file;
		if (mtc_read_file(path, MTC_HASH_MAX + 16, &buf, &len) < 0) {
			int e = errno;
			mtc_error("cannot read '%s': %s", path, strerror(e));
			free(path);
			return e == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
		}
		if (!mtc_is_hash(buf)) {
			mtc_error("cannot back up '%s': it does not hold a hash", path);
			free(buf);
			free(path);
			return MTC_EXIT_INTEGRITY;
		}
		snprintf(metas[w].hash, sizeof metas[w].hash, "%s", buf);
		free(buf);
		free(path);
	}
	return MTC_EXIT_OK;
}

static long long local_size(const struct mtc_store_xfer *x)
{
	struct stat st;

	if (x->key[strlen(x->key) - 1] == '/')
		return 0;
	return stat(x->path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Keys that already exist with the same size are dropped from t (another node uploaded them). */
static size_t drop_present(struct mtc_store *s, const char *prefix, struct mtc_tree *t)
{
	struct mtc_store_list l;
	size_t kept = 0, dropped = 0;

	if (mtc_store_list(s, prefix, NULL, &l) < 0) {
		mtc_store_list_free(&l);
		return 0;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct mtc_store_object *hit = mtc_store_list_find(&l, t->x[i].key);
		long long local = local_size(&t->x[i]);
		if (hit && hit->size == local) {
			t->bytes -= local;
			free((char *)t->x[i].key);
			free((char *)t->x[i].path);
			dropped++;
			continue;
		}
		t->x[kept++] = t->x[i];
	}
	t->n = kept;
	mtc_store_list_free(&l);
	return dropped;
}

/* An existing object of the same size is another node's identical upload. */
static int tolerate_existing(struct mtc_store *s, struct mtc_tree *t)
{
	int bad = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct mtc_store_object st;
		if (!t->x[i].err)
			continue;
		if (t->x[i].err == EEXIST && mtc_store_stat(s, t->x[i].key, &st) == 0) {
			if (st.size == local_size(&t->x[i]))
				continue;
		}
		if (!bad++)
			mtc_error("cannot upload '%s/%s': %s", mtc_store_url(s), t->x[i].key,
				  t->x[i].err == EEXIST ? "a different object exists"
							: strerror(t->x[i].err));
	}
	return bad ? -1 : 0;
}

/*
 * A backup name is bound to one step: the first .meta in prefix of another
 * step than step refuses it (a restore takes one step from a name, so a
 * second step would never be restored). Exit 1, like any object the store
 * refuses to replace; the stored objects are not touched.
 */
static int bound_to_other_step(struct mtc_store *s, const char *prefix, long long step)
{
	struct mtc_store_list l = { 0 };
	int rc = MTC_EXIT_OK;

	if (mtc_store_list(s, prefix, "/", &l) < 0) {
		mtc_error("cannot list '%s/%s': %s", mtc_store_url(s), prefix, mtc_store_error(s));
		mtc_store_list_free(&l);
		return MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; i < l.n_objects; i++) {
		const char *base = l.objects[i].name + strlen(prefix);
		struct mtc_ckpt_name n;
		if (mtc_parse_ckpt_name(base, &n) || n.ext != MTC_EXT_META || n.step == step)
			continue;
		mtc_error("cannot back up step %lld into '%s/%s': it holds step %lld ('%s'), and a "
			  "backup name is bound to one step; give another --name", step,
			  mtc_store_url(s), prefix, n.step, base);
		rc = MTC_EXIT_FAILURE;
		break;
	}
	mtc_store_list_free(&l);
	return rc;
}

static int put_meta_last(struct mtc_store *s, const char *prefix, struct meta *metas, int n)
{
	for (int w = 0; w < n; w++) {
		char *key = xasprintf("%s%s", prefix, metas[w].file);
		if (mtc_store_put_buf(s, key, metas[w].hash, strlen(metas[w].hash), 0) < 0) {
			char *buf = NULL;
			size_t len;
			int same = errno == EEXIST &&
				   mtc_store_get_buf(s, key, MTC_HASH_MAX + 16, &buf, &len) == 0 &&
				   !strcmp(buf, metas[w].hash);
			free(buf);
			if (!same) {
				mtc_error("cannot upload '%s/%s': %s", mtc_store_url(s), key,
					  mtc_store_error(s));
				free(key);
				return -1;
			}
		}
		free(key);
	}
	return 0;
}

/*
 * Whether this node uploads the data of its worker w. Without data
 * parallelism, or in the last partition (rank >= N - N/D), it does. Above
 * it, a node leaves its data to its last-partition column-mate when it holds
 * that mate's meta of the step and it names the same hash (the reference's
 * rule: one copy per column); otherwise (replicas that disagree, or a mate
 * whose meta it has not seen) it uploads its own, and the manifest claim
 * keeps it to one copy per hash.
 */
static int owns_data(const struct mtc_config *cfg, long long step, int w, const char *hash)
{
	int D = cfg->data_parallelism, N = cfg->nodes, P, mate;
	char *name, *path, *text = NULL;
	size_t len;
	int same;

	if (D <= 1 || N % D || cfg->node_rank >= N - N / D)
		return 1;
	P = N / D;
	mate = N - P + cfg->node_rank % P;
	name = mtc_ckpt_name(cfg->job_name, step, mate, w, MTC_EXT_META);
	path = xasprintf("%s/%s", dir, name);
	same = mtc_read_file(path, MTC_HASH_MAX + 16, &text, &len) == 0 && !strcmp(text, hash);
	free(text);
	free(path);
	free(name);
	return !same;
}

/*
 * Claims prefix/<hash>.data for this node's bytes by creating its manifest.
 * 1 when this node uploads the data (its claim, or an identical one); 0 when
 * another replica of the same logical content holds the claim (its bytes
 * differ, so mixing the two trees would make a tree that is neither); -1 on
 * error.
 */
static int claim(struct mtc_store *s, const char *prefix, const char *hash, const char *text)
{
	char *key = xasprintf("%s%s.manifest", prefix, hash), *theirs = NULL;
	size_t len;
	int rc = 1;

	if (mtc_store_put_buf(s, key, text, strlen(text), 0) < 0) {
		if (errno != EEXIST) {
			mtc_error("cannot upload '%s/%s': %s", mtc_store_url(s), key, mtc_store_error(s));
			rc = -1;
		} else if (mtc_store_get_buf(s, key, MTC_MANIFEST_BODY_MAX, &theirs, &len) < 0) {
			mtc_error("cannot read '%s/%s': %s", mtc_store_url(s), key, mtc_store_error(s));
			rc = -1;
		} else if (len != strlen(text) || memcmp(theirs, text, len)) {
			mtc_info("'%s%s.data' is claimed by another replica of the same content: "
				 "not uploading this node's copy", prefix, hash);
			rc = 0;
		}
	}
	free(theirs);
	free(key);
	return rc;
}

/* Bytes of prefix/<hash>.data present in the store, and whether it is whole. */
static long long present(struct mtc_store *s, const char *prefix, const char *hash, int *whole)
{
	char *key = xasprintf("%s%s.manifest", prefix, hash), *text = NULL, *data;
	struct mtc_manifest m;
	struct mtc_store_list l = { 0 };
	struct mtc_store_object st;
	char err[256];
	size_t len;
	long long bytes = 0;

	*whole = 0;
	mtc_manifest_init(&m);
	if (!mtc_is_dir_hash(hash)) {
		data = xasprintf("%s%s.data", prefix, hash);
		*whole = mtc_store_stat(s, data, &st) == 0;
		free(data);
		free(key);
		return *whole ? st.size : 0;
	}
	data = xasprintf("%s%s.data", prefix, hash);
	char *tree = xasprintf("%s/", data);
	if (mtc_store_get_buf(s, key, MTC_MANIFEST_BODY_MAX, &text, &len) == 0 &&
	    mtc_manifest_parse(text, len, &m, err, sizeof err) == 0 &&
	    mtc_store_list(s, tree, NULL, &l) == 0)
		*whole = !mtc_backup_data_missing(&l, data, &m, &bytes, NULL, NULL);
	free(tree);
	mtc_store_list_free(&l);
	mtc_manifest_free(&m);
	free(text);
	free(data);
	free(key);
	return bytes;
}

/*
 * Waits until prefix/<hash>.data, which another node uploads, is whole. Every
 * wait has a bound: exit 3 when no byte arrived for stall_s seconds.
 */
static int wait_whole(struct mtc_store *s, const char *prefix, const char *hash)
{
	long long last = -1;
	double since = mtc_now(), pause = 0.1;
	int whole;

	for (;;) {
		long long got = present(s, prefix, hash, &whole);
		if (whole)
			return MTC_EXIT_OK;
		if (got > last) {
			last = got;
			since = mtc_now();
		} else if (mtc_now() - since > stall_s) {
			mtc_error("'%s/%s%s.data', uploaded by another node, has not grown for %d s: "
				  "not uploading this node's .meta", mtc_store_url(s), prefix, hash,
				  stall_s);
			return MTC_EXIT_TIMEOUT;
		}
		usleep((useconds_t)(pause * 1e6));
		pause = pause < 2 ? pause * 2 : 2;
	}
}

static int run(const struct mtc_config *cfg, long long step)
{
	struct meta *metas = xcalloc((size_t)cfg->workers_per_node, sizeof *metas);
	struct mtc_store_options opt = { .token_file = token_file,
					 .parallel = parallel,
					 .slice_threshold = slice_threshold,
					 .slices = slices };
	struct mtc_store *s = NULL;
	struct mtc_tree t = { 0 };
	char name[17], err[512], *prefix = NULL;
	struct mtc_progress *bar;
	double start = mtc_now();
	int rc, put_failed, nw = cfg->workers_per_node;
	size_t skipped = 0, manifests = 0;

	if (mtc_store_open(location, &opt, &s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", location, err);
		rc = errno == EINVAL ? MTC_EXIT_USAGE : MTC_EXIT_FAILURE;
		goto out;
	}
	rc = read_metas(cfg, step, metas);
	if (rc != MTC_EXIT_OK)
		goto out;
	if (name_opt) {
		snprintf(name, sizeof name, "%s", name_opt);
	} else {
		mtc_backup_name(time(NULL), name);
	}
	prefix = xasprintf("%s/%s/", cfg->job_name, name);
	if ((rc = bound_to_other_step(s, prefix, step)) != MTC_EXIT_OK)
		goto out;
	mtc_info("hashing the data of step %lld (%d worker%s) against its name%s", step, nw,
		 nw == 1 ? "" : "s", no_verify ? ": skipped (--no-verify)" : "");
	rc = MTC_EXIT_FAILURE;
	for (int w = 0; w < nw; w++) {
		char *data = xasprintf("%s/%s.data", dir, metas[w].hash);
		char *key = xasprintf("%s%s.data", prefix, metas[w].hash);
		char digest[MTC_DIGEST_LEN];
		struct mtc_manifest m;
		struct mtc_tree one = { 0 };
		int dup = 0;

		for (int v = 0; v < w; v++)
			dup |= !strcmp(metas[v].hash, metas[w].hash);
		metas[w].wait = !owns_data(cfg, step, w, metas[w].hash);
		if (dup || metas[w].wait) {
			free(data);
			free(key);
			continue;
		}
		mtc_manifest_init(&m);
		if (!no_verify) {
			double t0 = mtc_now();
			if (mtc_digest_path(data, threads, digest, &m) < 0) {
				mtc_error("cannot read '%s':", data);
				goto fail_one;
			}
			mtc_info("hashed '%s' (%lld bytes) in %.3f s", data, mtc_manifest_bytes(&m),
				 mtc_now() - t0);
			if (mtc_data_name_check(data, metas[w].hash, digest, threads, err,
						sizeof err)) {
				mtc_error("cannot back up '%s': %s", data, err);
				rc = MTC_EXIT_INTEGRITY;
				goto fail_one;
			}
			char *text = mtc_peer_manifest_text(&m);
			int mine = claim(s, prefix, metas[w].hash, text);
			free(text);
			if (mine < 0)
				goto fail_one;
			manifests += mine;
			if (!mine) {
				metas[w].wait = 1;
				mtc_manifest_free(&m);
				free(data);
				free(key);
				continue;
			}
		}
		if (mtc_tree_collect(data, key, &one, err, sizeof err) < 0) {
			mtc_error("%s", err);
			goto fail_one;
		}
		skipped += drop_present(s, key, &one);
		for (size_t i = 0; i < one.n; i++) {
			if ((t.n & (t.n - 1)) == 0)
				t.x = xrealloc(t.x, (t.n ? 2 * t.n : 1) * sizeof *t.x);
			t.x[t.n++] = one.x[i];
		}
		t.bytes += one.bytes;
		free(one.x);
		mtc_manifest_free(&m);
		free(data);
		free(key);
		continue;
fail_one:
		mtc_manifest_free(&m);
		mtc_tree_free(&one);
		free(data);
		free(key);
		goto out;
	}
	mtc_info("uploading %zu objects (%lld bytes) to '%s/%s'; %zu already there", t.n,
		 t.bytes, mtc_store_url(s), prefix, skipped);
	bar = mtc_progress_new(t.bytes, 0, !no_progress && mtc_log_level() >= MTC_LOG_WARN);
	mtc_store_set_progress(s, mtc_progress_store, bar);
	put_failed = mtc_store_put_many(s, t.x, t.n, 0) < 0;
	mtc_store_set_progress(s, NULL, NULL);
	mtc_progress_end(bar);
	if (put_failed && tolerate_existing(s, &t) < 0) {
		for (size_t i = 0; i < t.n; i++)
			if (t.x[i].err == ETIMEDOUT)
				rc = MTC_EXIT_TIMEOUT;
		goto out;
	}
	for (int w = 0; w < nw; w++)
		if (metas[w].wait) {
			mtc_info("waiting for '%s%s.data', which another node uploads", prefix,
				 metas[w].hash);
			if ((rc = wait_whole(s, prefix, metas[w].hash)) != MTC_EXIT_OK)
				goto out;
		}
	if ((rc = bound_to_other_step(s, prefix, step)) != MTC_EXIT_OK)
		goto out;
	mtc_info("uploading %d .meta file%s last", nw, nw == 1 ? "" : "s");
	rc = MTC_EXIT_FAILURE;
	if (put_meta_last(s, prefix, metas, nw) < 0)
		goto out;
	{
		double secs = mtc_now() - start;
		double rate = t.bytes / 1e6 / (secs > 1e-6 ? secs : 1e-6);
		json_t *j = json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:i, s:o, s:f}", "backup", name,
				      "location", mtc_store_url(s), "step", (json_int_t)step, "rank",
				      cfg->node_rank, "bytes", (json_int_t)t.bytes, "objects",
				      (json_int_t)(t.n + (size_t)nw + manifests), "skipped",
				      (int)skipped, "seconds", mtc_json_seconds(secs), "mb-per-s",
				      round(rate * 10) / 10);
		mtc_info("backed up step %lld as '%s' in %.3f s", step, name, secs);
		if (mtc_json_print(j) < 0)
			goto out;
	}
	rc = MTC_EXIT_OK;
out:
	mtc_tree_free(&t);
	for (int w = 0; w < nw; w++)
		free(metas[w].file);
	free(metas);
	free(prefix);
	mtc_store_close(s);
	return rc;
}

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "the local dir", "DIR" },
		{ "config", 'c', POPT_ARG_STRING, &config_file, 0, "accepted config (JSON, - for stdin)", "FILE" },
		{ "step", 's', POPT_ARG_STRING, &step_text, 0, "the step to back up", "S" },
		{ "to", 't', POPT_ARG_STRING, &location, 0, "backup location: DIR, file://DIR or gs://BUCKET[/PREFIX]", "LOCATION" },
		{ "name", 'n', POPT_ARG_STRING, &name_opt, 0, "backup name (default: now, UTC)", "YYYY-MM-DD_HH-MM" },
		{ "gcs-token-file", '\0', POPT_ARG_STRING, &token_file, 0, "gs:// bearer token file (else $MTC_GCS_TOKEN, credentials, metadata server)", "FILE" },
		{ "parallel", 'j', POPT_ARG_INT, &parallel, 0, "transfers in flight (default 32)", "N" },
		{ "threads", '\0', POPT_ARG_INT, &threads, 0, "hashing threads (default: one per CPU)", "N" },
		{ "slice-threshold", '\0', POPT_ARG_STRING, &slice_threshold_text, 0, "on gs://: upload a file at least this big as parallel parts composed into one object (default 64M)", "SIZE" },
		{ "slices", '\0', POPT_ARG_INT, &slices, 0, "parts of one such file (default 16, at most 32; 1: one stream)", "N" },
		{ "no-verify", '\0', POPT_ARG_NONE, &no_verify, 0, "do not check the data against its name, and upload no manifest", NULL },
		{ "no-progress", '\0', POPT_ARG_NONE, &no_progress, 0, "no progress line on a terminal", NULL },
		{ "stall-timeout", '\0', POPT_ARG_INT, &stall_s, 0, "give up waiting for data another node uploads after it has not grown this long (default 300)", "SECONDS" },
		{ "json", '\0', POPT_ARG_NONE, &json, 0, "the summary line is JSON (it is without this too)", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	struct mtc_config cfg;
	poptContext ctx;
	long long step;
	char err[512];
	int rc;

	mtc_log_init(argv[0]);
	mtc_http_init();
	ctx = mtc_cli_context("mtc-backup", argc, argv, opts,
			      "--dir DIR --config FILE --step S --to LOCATION [OPTIONS]");
	if ((rc = mtc_cli_parse(ctx)) >= 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (poptPeekArg(ctx)) {
		mtc_usage_error("unexpected argument '%s'", poptPeekArg(ctx));
		goto out;
	}
	if (!dir || !config_file || !step_text || !location) {
		mtc_usage_error("--dir, --config, --step and --to are required");
		goto out;
	}
	if (mtc_parse_uint(step_text, &step) < 0) {
		mtc_usage_error("invalid step '%s'", step_text);
		goto out;
	}
	if (name_opt && mtc_parse_backup_name(name_opt, NULL) < 0) {
		mtc_usage_error("invalid backup name '%s': want YYYY-MM-DD_HH-MM", name_opt);
		goto out;
	}
	if (parallel < 0 || threads < 0 || stall_s <= 0) {
		mtc_usage_error("--parallel, --threads and --stall-timeout take a positive number");
		goto out;
	}
	if (mtc_cli_slices(slice_threshold_text, slices, &slice_threshold))
		goto out;
	if (mtc_config_load(config_file, &cfg, err, sizeof err) < 0) {
		mtc_error("cannot load config '%s': %s", config_file, err);
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	rc = run(&cfg, step);
	mtc_config_free(&cfg);
out:
	poptFreeContext(ctx);
	return rc;
}
