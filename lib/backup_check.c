#include "backup_check.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blake3/blake3.h"
#include "object.h"
#include "digest.h"
#include "fsutil.h"
#include "manifest_text.h"
#include "naming.h"
#include "store/store_tree.h"
#include "strset.h"
#include "threads.h"
#include "tmpname.h"
#include "xalloc.h"

#define READ_PIECE (8 << 20)

/* name/hash.manifest into m: 1 read, 0 there is none, -1 storage error; a bad one is EBADMSG. */
static int load_manifest(struct mtc_store *s, const char *name, const char *hash, struct mtc_manifest *m,
			 char *err, size_t errlen)
{
	char *key = xasprintf("%s/%s.manifest", name, hash), *text;
	size_t len;
	int rc = 1;

	if (mtc_store_get_buf(s, key, MTC_MANIFEST_MAX, &text, &len) < 0) {
		rc = errno == ENOENT ? 0 : -1;
		if (rc)
			snprintf(err, errlen, "cannot read '%s': %s", key, mtc_store_error(s));
	} else {
		if (mtc_manifest_parse(text, len, m, err, errlen) < 0) {
			errno = EBADMSG;
			rc = -1;
		}
		free(text);
	}
	free(key);
	return rc;
}

size_t mtc_backup_data_missing(const struct mtc_store_list *l, const char *data,
			       const struct mtc_manifest *m, long long *bytes,
			       const struct mtc_manifest_entry **first, long long *found)
{
	size_t missing = 0;

	if (bytes)
		*bytes = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct mtc_manifest_entry *e = &m->entries[i];
		if (e->type != MTC_ENTRY_FILE)
			continue;
		char *key = *e->path ? xasprintf("%s/%s", data, e->path) : xstrdup(data);
		const struct mtc_store_object *o = mtc_store_list_find(l, key);
		free(key);
		if (o && o->size == e->size) {
			if (bytes)
				*bytes += e->size;
			continue;
		}
		if (!missing++ && first) {
			*first = e;
			*found = o ? o->size : -1;
		}
	}
	return missing;
}

int mtc_backup_check_sizes(struct mtc_store *s, struct mtc_backup_info *info, long long *bytes)
{
	struct mtc_store_list l = { 0 };
	struct mtc_strset seen = { 0 };
	char *prefix = xasprintf("%s/", info->name);
	int rc = 0;

	*bytes = 0;
	if (mtc_store_list(s, prefix, NULL, &l) < 0)
		rc = -1;
	for (size_t i = 0; !rc && i < l.n_objects; i++)
		*bytes += l.objects[i].size;
	for (size_t i = 0; !rc && info->state == MTC_BACKUP_VALID && i < info->n_metas; i++) {
		const struct mtc_backup_meta *mt = &info->metas[i];
		const struct mtc_manifest_entry *e;
		struct mtc_manifest m;
		char err[160], *data;
		long long found;
		int have;

		if (mtc_strset_add(&seen, mt->hash))
			continue;
		mtc_manifest_init(&m);
		have = load_manifest(s, info->name, mt->hash, &m, err, sizeof err);
		data = xasprintf("%s/%s.data", info->name, mt->hash);
		if (have < 0 && errno == EBADMSG) {
			info->state = MTC_BACKUP_DAMAGED;
			snprintf(info->reason, sizeof info->reason, "node %d worker %d: %s.manifest: %s",
				 mt->rank, mt->worker, mt->hash, err);
		} else if (have < 0) {
			rc = -1;
		} else if (have && mtc_backup_data_missing(&l, data, &m, NULL, &e, &found)) {
			info->state = MTC_BACKUP_DAMAGED;
			snprintf(info->reason, sizeof info->reason,
				 found < 0 ? "node %d worker %d: '%s.data%s%s' is missing"
					   : "node %d worker %d: '%s.data%s%s' holds %lld bytes, its "
					     "manifest says %lld",
				 mt->rank, mt->worker, mt->hash, *e->path ? "/" : "", e->path, found,
				 e->size);
		}
		free(data);
		mtc_manifest_free(&m);
	}
	mtc_strset_free(&seen);
	mtc_store_list_free(&l);
	free(prefix);
	return rc;
}

/* One file to re-hash, streamed. */
struct check {
	char *key;
	long long size;
	char digest[MTC_DIGEST_LEN];
};

struct verify {
	const char *url;
	const struct mtc_store_options *opt;
	struct check *c;
	size_t n, next;
	long long done, total;
	int failed; /* 1 damaged, -1 storage error */
	char err[512];
	mtc_store_progress_fn progress;
	void *arg;
	pthread_mutex_t lock;
};

static void verify_fail(struct verify *v, int rc, const char *fmt, const char *a, const char *b)
{
	pthread_mutex_lock(&v->lock);
	if (!v->failed) {
		v->failed = rc;
		snprintf(v->err, sizeof v->err, fmt, a, b);
	}
	pthread_mutex_unlock(&v->lock);
}

static void verify_one(struct verify *v, struct mtc_store *s, const struct check *c, char *buf)
{
	struct mtc_blake3 h;
	uint8_t out[32];
	char hex[65];

	mtc_blake3_init(&h);
	for (long long off = 0; off < c->size && !v->failed;) {
		size_t len = c->size - off < READ_PIECE ? (size_t)(c->size - off) : READ_PIECE;
		if (mtc_store_get_range(s, c->key, off, buf, len) < 0) {
			int e = errno;
			verify_fail(v, e == EIO || e == ENOENT ? 1 : -1, "'%s': %s", c->key,
				    mtc_store_error(s));
			return;
		}
		mtc_blake3_update(&h, buf, len);
		off += (long long)len;
		pthread_mutex_lock(&v->lock);
		v->done += (long long)len;
		if (v->progress)
			v->progress(v->arg, v->done, v->total);
		pthread_mutex_unlock(&v->lock);
	}
	if (v->failed)
		return;
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, hex);
	if (strcmp(hex, c->digest))
		verify_fail(v, 1, "'%s': its bytes hash to %s, not what its manifest says", c->key, hex);
}

static void *verify_worker(void *arg)
{
	struct verify *v = arg;
	struct mtc_store *s;
	char err[256], *buf = xmalloc(READ_PIECE);

	if (mtc_store_open(v->url, v->opt, &s, err, sizeof err) < 0) {
		verify_fail(v, -1, "cannot open '%s': %s", v->url, err);
		free(buf);
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&v->lock);
		size_t i = v->next++;
		pthread_mutex_unlock(&v->lock);
		if (i >= v->n || v->failed)
			break;
		verify_one(v, s, &v->c[i], buf);
	}
	mtc_store_close(s);
	free(buf);
	return NULL;
}

static void add_check(struct verify *v, const char *key, long long size, const char *digest)
{
	if ((v->n & (v->n - 1)) == 0)
		v->c = xrealloc(v->c, (v->n ? 2 * v->n : 1) * sizeof *v->c);
	v->c[v->n].key = xstrdup(key);
	v->c[v->n].size = size;
	snprintf(v->c[v->n].digest, sizeof v->c[v->n].digest, "%s", digest);
	v->total += size;
	v->n++;
}

/* Data that only its own tree can check: fetched into a private directory and verified there. */
static int verify_staged(struct mtc_store *s, const char *name, const char *hash,
			 const struct mtc_manifest *m, int threads, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char *path = NULL, *key = NULL, *dir;
	struct mtc_tree t = { 0 };
	struct mtc_tmp d;
	int rc = -1;

	if (mtc_tmp_private_dir("verify", &d) < 0) {
		snprintf(err, errlen, "cannot create a directory under %s: %s",
			 tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return -1;
	}
	dir = d.path;
	path = xasprintf("%s/%s.data", dir, hash);
	if (mtc_is_dir_hash(hash)) {
		key = xasprintf("%s/%s.data/", name, hash);
		rc = mtc_tree_download(s, key, path, &t);
	} else {
		key = xasprintf("%s/%s.data", name, hash);
		rc = mtc_store_get_file(s, key, path);
	}
	if (rc < 0)
		snprintf(err, errlen, "cannot read '%s': %s", key, mtc_store_error(s));
	else if ((rc = mtc_object_verify(path, hash, m, threads, err, errlen)) < 0)
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
	else if (rc)
		rc = 1;
	mtc_tree_free(&t);
	mtc_tmp_discard(&d);
	free(key);
	free(path);
	return rc;
}

int mtc_backup_verify(struct mtc_store *s, const struct mtc_store_options *opt,
		      const struct mtc_backup_info *info, int threads, mtc_store_progress_fn progress,
		      void *arg, struct mtc_verify_stats *stats, char *err, size_t errlen)
{
	struct verify v = { .url = mtc_store_url(s), .opt = opt, .progress = progress, .arg = arg };
	struct mtc_strset seen = { 0 };
	int rc = 0, readers = opt && opt->parallel > 0 ? opt->parallel : 8;

	memset(stats, 0, sizeof *stats);
	pthread_mutex_init(&v.lock, NULL);
	for (size_t i = 0; !rc && i < info->n_metas; i++) {
		const struct mtc_backup_meta *mt = &info->metas[i];
		struct mtc_manifest m;
		char *data;
		int have;

		if (!mt->hash[0] || mtc_strset_add(&seen, mt->hash))
			continue;
		stats->objects++;
		mtc_manifest_init(&m);
		have = load_manifest(s, info->name, mt->hash, &m, err, errlen);
		data = xasprintf("%s/%s.data", info->name, mt->hash);
		if (have < 0)
			rc = errno == EBADMSG ? 1 : -1;
		else if (!have || (mtc_is_dir_hash(mt->hash) && strcmp(m.entries[0].digest, mt->hash)))
			rc = verify_staged(s, info->name, mt->hash, have ? &m : NULL, threads, err,
					   errlen);
		else if (!mtc_is_dir_hash(mt->hash) &&
			 (m.n != 1 || strcmp(m.entries[0].digest, mt->hash)))
			rc = 1, snprintf(err, errlen, "'%s.manifest' does not describe this file", data);
		for (size_t k = 0; !rc && have && k < m.n; k++) {
			const struct mtc_manifest_entry *e = &m.entries[k];
			if (e->type != MTC_ENTRY_FILE)
				continue;
			char *key = *e->path ? xasprintf("%s/%s", data, e->path) : xstrdup(data);
			add_check(&v, key, e->size, e->digest);
			stats->files++;
			free(key);
		}
		if (rc == 1 && !strstr(err, mt->hash))
			snprintf(err + strlen(err), errlen - strlen(err), " (node %d worker %d)",
				 mt->rank, mt->worker);
		free(data);
		mtc_manifest_free(&m);
	}
	mtc_strset_free(&seen);
	if (!rc && v.n) {
		mtc_run_threads((size_t)readers < v.n ? (size_t)readers : v.n, verify_worker, &v);
		rc = v.failed;
		if (rc)
			snprintf(err, errlen, "%s", v.err);
	}
	stats->bytes = v.done;
	for (size_t i = 0; i < v.n; i++)
		free(v.c[i].key);
	free(v.c);
	pthread_mutex_destroy(&v.lock);
	return rc;
}

int mtc_backup_judge(struct mtc_store *s, const char *name, int nodes, int workers,
		     struct mtc_backup_info *info, long long *bytes)
{
	long long total;

	if (mtc_backup_inspect(s, name, nodes, workers, info) < 0)
		return -1;
	if (!bytes && info->state != MTC_BACKUP_VALID)
		return 0;
	return mtc_backup_check_sizes(s, info, bytes ? bytes : &total);
}
