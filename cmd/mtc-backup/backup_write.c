#include "backup_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup_check.h"
#include "clock.h"
#include "data_name.h"
#include "digest.h"
#include "exitcode.h"
#include "fsutil.h"
#include "log.h"
#include "manifest_text.h"
#include "naming.h"
#include "peer/peer_manifest.h"
#include "progress.h"
#include "shape.h"
#include "store/store_tree.h"
#include "strset.h"
#include "xalloc.h"

struct meta {
	char *file;
	char hash[MTC_HASH_MAX + 1];
	int wait; /* another node uploads its data: wait until it is whole */
};

static int read_metas(const struct mtc_backup_write *o, long long step, struct meta *metas)
{
	const struct mtc_config *cfg = o->cfg;

	for (int w = 0; w < cfg->workers_per_node; w++) {
		char *file = mtc_ckpt_name(cfg->job_name, step, cfg->node_rank, w, MTC_EXT_META);
		char *path = xasprintf("%s/%s", o->dir, file), *buf;
		size_t len;

		metas[w].file = file;
		if (mtc_read_file(path, MTC_HASH_MAX + 16, &buf, &len) < 0) {
			int e = errno;
			struct stat st;
			if (e == ENOENT && stat(o->dir, &st) < 0)
				mtc_error("cannot read the local dir '%s' (--dir): %s", o->dir,
					  strerror(errno));
			else if (e == ENOENT)
				mtc_error("no step %lld of job '%s' in '%s' (--step): '%s' is missing",
					  step, cfg->job_name, o->dir, file);
			else
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
			free((char *)t->x[i].digest);
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
				  t->x[i].err == EEXIST	   ? "a different object exists"
				  : t->x[i].err == EBADMSG ? "its bytes do not match its manifest"
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
			  "backup name is bound to one step; give another --name",
			  step, mtc_store_url(s), prefix, n.step, base);
		rc = MTC_EXIT_FAILURE;
		break;
	}
	mtc_store_list_free(&l);
	return rc;
}

/*
 * The job's shape beside the step (mtc(7) §5.9), by rank 0 alone: one object
 * every node would otherwise try to create at once.
 */
static int put_shape(struct mtc_store *s, const char *prefix, const struct mtc_config *cfg)
{
	char *key, text[96];
	int rc = 0;

	if (cfg->node_rank != 0)
		return 0;
	key = xasprintf("%s%s", prefix, MTC_BACKUP_SHAPE);
	mtc_shape_text(cfg, text, sizeof text);
	if (mtc_store_put_buf(s, key, text, strlen(text), 0) < 0 && errno != EEXIST) {
		mtc_error("cannot upload '%s/%s': %s", mtc_store_url(s), key, mtc_store_error(s));
		rc = -1;
	}
	free(key);
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
static int owns_data(const struct mtc_backup_write *o, long long step, int w, const char *hash)
{
	const struct mtc_config *cfg = o->cfg;
	int D = cfg->data_parallelism, N = cfg->nodes, P, mate;
	char *name, *path, *text = NULL;
	size_t len;
	int same;

	if (D <= 1 || N % D || cfg->node_rank >= N - N / D)
		return 1;
	P = N / D;
	mate = N - P + cfg->node_rank % P;
	name = mtc_ckpt_name(cfg->job_name, step, mate, w, MTC_EXT_META);
	path = xasprintf("%s/%s", o->dir, name);
	same = mtc_read_file(path, MTC_HASH_MAX + 16, &text, &len) == 0 && !strcmp(text, hash);
	free(text);
	free(path);
	free(name);
	return !same;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct mtc_manifest_entry *)a)->path,
		      ((const struct mtc_manifest_entry *)b)->path);
}

/*
 * A directory store checks each file's digest as it writes it (store.h), so
 * the data need not be hashed before it is copied when the manifest kept
 * beside it (dir/<hash>.manifest) composes to hash (a merkle name) and lists
 * exactly the files, sizes and empty directories of one, the objects of
 * key: then what lands is bound to the name through that manifest. Gives m
 * and sets each file's digest in one; -1 (m empty, one untouched) when the
 * data must be hashed first.
 */
static int digests_from_manifest(const char *dir, const char *hash, const char *key,
				 struct mtc_tree *one, struct mtc_manifest *m)
{
	static const struct mtc_wire_limits lim = { .max_bytes = 1LL << 62,
						    .max_files = 1LL << 40,
						    .max_depth = 1 << 20 };
	char *path = xasprintf("%s/%s.manifest", dir, hash), *text = NULL, digest[MTC_DIGEST_LEN],
	     err[512];
	struct mtc_wire_list l = { 0 };
	struct mtc_manifest rebuilt;
	size_t len, klen = strlen(key);
	int rc = -1;

	mtc_manifest_init(&rebuilt);
	if (mtc_read_file(path, (size_t)1 << 34, &text, &len) < 0 ||
	    mtc_peer_manifest_parse(text, len, hash, &lim, m, err, sizeof err) < 0)
		goto out;
	for (size_t i = 0; i < one->n; i++) {
		const char *k = one->x[i].key, *rel = k + klen + 1;
		size_t rlen = strlen(k) - klen - 1;
		struct mtc_manifest_entry probe = { .path = (char *)rel }, *e;
		if (strncmp(k, key, klen) || k[klen] != '/' || !rlen)
			goto out;
		if (rel[rlen - 1] == '/') {
			char *d = xasprintf("%.*s", (int)(rlen - 1), rel);
			mtc_wire_list_add(&l, d, 1, 0);
			free(d);
			continue;
		}
		e = bsearch(&probe, m->entries, m->n, sizeof *m->entries, by_path);
		if (!e || e->type != MTC_ENTRY_FILE)
			goto out;
		snprintf(mtc_wire_list_add(&l, rel, 0, local_size(&one->x[i]))->digest, MTC_DIGEST_LEN,
			 "%s", e->digest);
	}
	mtc_wire_manifest(&l, &rebuilt, digest);
	if (strcmp(digest, hash) || mtc_manifest_compare(m, &rebuilt, err, sizeof err))
		goto out;
	for (size_t i = 0; i < one->n; i++) {
		const char *rel = one->x[i].key + klen + 1;
		struct mtc_manifest_entry probe = { .path = (char *)rel }, *e;
		e = bsearch(&probe, m->entries, m->n, sizeof *m->entries, by_path);
		if (e && e->type == MTC_ENTRY_FILE)
			one->x[i].digest = xstrdup(e->digest);
	}
	rc = 0;
out:
	if (rc < 0) {
		mtc_manifest_free(m);
		mtc_manifest_init(m);
	}
	mtc_manifest_free(&rebuilt);
	mtc_wire_list_free(&l);
	free(text);
	free(path);
	return rc;
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
			mtc_error("cannot upload '%s/%s': %s", mtc_store_url(s), key,
				  mtc_store_error(s));
			rc = -1;
		} else if (mtc_store_get_buf(s, key, MTC_MANIFEST_MAX, &theirs, &len) < 0) {
			mtc_error("cannot read '%s/%s': %s", mtc_store_url(s), key, mtc_store_error(s));
			rc = -1;
		} else if (len != strlen(text) || memcmp(theirs, text, len)) {
			mtc_info("'%s%s.data' is claimed by another replica of the same content: "
				 "not uploading this node's copy",
				 prefix, hash);
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
	if (mtc_store_get_buf(s, key, MTC_MANIFEST_MAX, &text, &len) == 0 &&
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
static int wait_whole(struct mtc_store *s, const char *prefix, const char *hash, int stall_s)
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
				  "not uploading this node's .meta",
				  mtc_store_url(s), prefix, hash, stall_s);
			return MTC_EXIT_TIMEOUT;
		}
		usleep((useconds_t)(pause * 1e6));
		pause = pause < 2 ? pause * 2 : 2;
	}
}

static void removed_leftover(const char *where, long long bytes, void *arg)
{
	mtc_info("removed '%s' (%lld bytes): a dead writer's temporary", where, bytes);
}

int mtc_backup_write(const struct mtc_backup_write *o, long long step, struct mtc_backup_written *out)
{
	const struct mtc_config *cfg = o->cfg;
	struct meta *metas = xcalloc((size_t)cfg->workers_per_node, sizeof *metas);
	struct mtc_store *s = NULL;
	struct mtc_tree t = { 0 };
	struct mtc_strset seen = { 0 };
	char name[17], err[512], *prefix = NULL;
	struct mtc_progress *bar;
	double start = mtc_now();
	int rc, put_failed, nw = cfg->workers_per_node;
	size_t skipped = 0, manifests = 0;

	if (mtc_store_open(o->location, &o->store, &s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", o->location, err);
		rc = mtc_store_result(errno);
		goto out;
	}
	rc = read_metas(o, step, metas);
	if (rc != MTC_EXIT_OK)
		goto out;
	if (o->name)
		snprintf(name, sizeof name, "%s", o->name);
	else
		mtc_backup_name(time(NULL), name);
	prefix = xasprintf("%s/%s/", cfg->job_name, name);
	if ((rc = bound_to_other_step(s, prefix, step)) != MTC_EXIT_OK)
		goto out;
	if (mtc_store_leftovers(s, prefix, 1, removed_leftover, NULL) < 0)
		mtc_warn("cannot remove leftovers in '%s/%s': %s", mtc_store_url(s), prefix,
			 mtc_store_error(s));
	mtc_info("hashing the data of step %lld (%d worker%s) against its name%s", step, nw,
		 nw == 1 ? "" : "s", o->no_verify ? ": skipped (--no-verify)" : "");
	rc = MTC_EXIT_FAILURE;
	for (int w = 0; w < nw; w++) {
		char *data = xasprintf("%s/%s.data", o->dir, metas[w].hash);
		char *key = xasprintf("%s%s.data", prefix, metas[w].hash);
		char digest[MTC_DIGEST_LEN];
		struct mtc_manifest m;
		struct mtc_tree one = { 0 };
		int dup = mtc_strset_add(&seen, metas[w].hash);

		metas[w].wait = !owns_data(o, step, w, metas[w].hash);
		if (dup || metas[w].wait) {
			free(data);
			free(key);
			continue;
		}
		mtc_manifest_init(&m);
		if (mtc_tree_collect(data, key, &one, err, sizeof err) < 0) {
			mtc_error("%s", err);
			goto fail_one;
		}
		if (!o->no_verify && !mtc_store_is_remote(s) &&
		    digests_from_manifest(o->dir, metas[w].hash, key, &one, &m) == 0) {
			mtc_info("'%s': each file is checked against its manifest as it is copied",
				 data);
		} else if (!o->no_verify) {
			double t0 = mtc_now();
			if (mtc_digest_path(data, o->threads, digest, &m) < 0) {
				mtc_error("cannot read '%s':", data);
				goto fail_one;
			}
			mtc_info("hashed '%s' (%lld bytes) in %.3f s", data, mtc_manifest_bytes(&m),
				 mtc_now() - t0);
			if (mtc_data_name_check(data, metas[w].hash, digest, o->threads, err,
						sizeof err)) {
				mtc_error("cannot back up '%s': %s", data, err);
				rc = MTC_EXIT_INTEGRITY;
				goto fail_one;
			}
		}
		if (!o->no_verify) {
			char *text = mtc_manifest_text(&m);
			int mine = claim(s, prefix, metas[w].hash, text);
			free(text);
			if (mine < 0)
				goto fail_one;
			manifests += mine;
			if (!mine) {
				metas[w].wait = 1;
				mtc_manifest_free(&m);
				mtc_tree_free(&one);
				free(data);
				free(key);
				continue;
			}
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
	mtc_info("uploading %zu objects (%lld bytes) to '%s/%s'; %zu already there", t.n, t.bytes,
		 mtc_store_url(s), prefix, skipped);
	bar = mtc_progress_new(t.bytes, 0, o->progress);
	mtc_store_set_progress(s, mtc_progress_store, bar);
	put_failed = mtc_store_put_many(s, t.x, t.n, 0) < 0;
	mtc_store_set_progress(s, NULL, NULL);
	mtc_progress_end(bar);
	if (put_failed && tolerate_existing(s, &t) < 0) {
		for (size_t i = 0; i < t.n; i++)
			if (t.x[i].err == ETIMEDOUT || t.x[i].err == EBADMSG)
				rc = t.x[i].err == EBADMSG ? MTC_EXIT_INTEGRITY : MTC_EXIT_TIMEOUT;
		goto out;
	}
	for (int w = 0; w < nw; w++)
		if (metas[w].wait) {
			mtc_info("waiting for '%s%s.data', which another node uploads", prefix,
				 metas[w].hash);
			if ((rc = wait_whole(s, prefix, metas[w].hash, o->stall_s)) != MTC_EXIT_OK)
				goto out;
		}
	if ((rc = bound_to_other_step(s, prefix, step)) != MTC_EXIT_OK)
		goto out;
	mtc_info("uploading %d .meta file%s last", nw, nw == 1 ? "" : "s");
	rc = MTC_EXIT_FAILURE;
	if (put_shape(s, prefix, cfg) < 0 || put_meta_last(s, prefix, metas, nw) < 0)
		goto out;
	snprintf(out->name, sizeof out->name, "%s", name);
	out->location = xstrdup(mtc_store_url(s));
	out->bytes = t.bytes;
	out->objects = (long long)(t.n + (size_t)nw + manifests);
	out->skipped = (long long)skipped;
	out->seconds = mtc_now() - start;
	mtc_info("backed up step %lld as '%s' in %.3f s", step, name, out->seconds);
	rc = MTC_EXIT_OK;
out:
	mtc_strset_free(&seen);
	mtc_tree_free(&t);
	for (int w = 0; w < nw; w++)
		free(metas[w].file);
	free(metas);
	free(prefix);
	mtc_store_close(s);
	return rc;
}
