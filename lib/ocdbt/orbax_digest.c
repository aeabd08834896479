/*
 * The logical digest of an Orbax step (the rule is in orbax_digest.h). The
 * values are hashed on a pool of threads: a small value is one job; a large
 * one is cut into aligned BLAKE3 subtrees of SEG bytes, one job each, and
 * whoever finishes its last subtree hashes the tail and joins them.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blake3/blake3.h"
#include "cpu_count.h"
#include "ocdbt.h"
#include "orbax_digest.h"
#include "threads.h"
#include "xalloc.h"

#define SEG_CHUNKS 1024
#define SEG ((uint64_t)SEG_CHUNKS * MTC_BLAKE3_CHUNK_LEN)

size_t mtc_py_bytes_repr(const uint8_t *s, size_t len, char *out)
{
	char q = memchr(s, '\'', len) && !memchr(s, '"', len) ? '"' : '\'';
	size_t n = 0;
	out[n++] = 'b';
	out[n++] = q;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];
		if (c == q || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c == '\t' || c == '\n' || c == '\r') {
			out[n++] = '\\';
			out[n++] = c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
		} else if (c < 0x20 || c >= 0x7f) {
			n += (size_t)sprintf(out + n, "\\x%02x", c);
		} else {
			out[n++] = (char)c;
		}
	}
	out[n++] = q;
	out[n] = '\0';
	return n;
}

/* The first entry of dir, in readdir order, that is a directory holding manifest.ocdbt. */
static int find_store(const char *dir, char **store, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOTDIR || errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot list '%s': %s", dir, strerror(errno));
		return -1;
	}
	struct dirent *de;
	struct stat st;
	*store = NULL;
	while (!*store && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = xasprintf("%s/%s", dir, de->d_name);
		char *man = xasprintf("%s/manifest.ocdbt", sub);
		if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && stat(man, &st) == 0 &&
		    S_ISREG(st.st_mode))
			*store = sub;
		else
			free(sub);
		free(man);
	}
	closedir(d);
	return *store != NULL;
}

struct value {
	const struct mtc_ocdbt_kv *kv;
	uint64_t segs;	    /* whole subtrees before the tail; 0: one job */
	uint8_t *cvs;	    /* their chaining values */
	atomic_ullong left; /* subtrees still to hash */
	char hex[65];
};

struct job {
	struct value *v;
	uint64_t seg;
};

struct pool {
	const struct mtc_ocdbt *s;
	struct job *jobs;
	size_t n;
	atomic_size_t next;
	atomic_int failed;
	pthread_mutex_t lock;
	char *err;
	size_t errlen;
};

/* Bytes [off, off + len) of v's value (mtc_ocdbt_range); NULL when they cannot be read. */
static const uint8_t *bytes(struct pool *p, struct value *v, uint64_t off, size_t len, uint8_t *buf)
{
	char why[512];
	const uint8_t *b = mtc_ocdbt_range(p->s, v->kv, off, len, buf, why, sizeof why);
	if (b)
		return b;
	pthread_mutex_lock(&p->lock);
	if (!atomic_exchange(&p->failed, 1))
		snprintf(p->err, p->errlen, "%s", why);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The tail of v after its subtrees (its whole value when it has none), then v's hex. */
static int finish(struct pool *p, struct value *v, uint8_t *buf)
{
	uint64_t off = v->segs * SEG;
	size_t len = (size_t)(v->kv->len - off);
	const uint8_t *b = bytes(p, v, off, len, buf);
	if (!b)
		return -1;
	struct mtc_blake3 *h = xmalloc(sizeof *h);
	uint8_t raw[32];
	mtc_blake3_init(h);
	for (uint64_t s = 0; s < v->segs; s++)
		mtc_blake3_push_subtree(h, v->cvs + 32 * s, SEG_CHUNKS);
	mtc_blake3_update(h, b, len);
	mtc_blake3_final(h, raw, 32);
	mtc_ocdbt_drop(p->s, v->kv, b, len);
	free(h);
	mtc_hex(raw, 32, v->hex);
	return 0;
}

static int run(struct pool *p, struct job *j, uint8_t *buf)
{
	struct value *v = j->v;
	if (!v->segs)
		return finish(p, v, buf);
	const uint8_t *b = bytes(p, v, j->seg * SEG, (size_t)SEG, buf);
	if (!b)
		return -1;
	mtc_blake3_subtree(b, SEG_CHUNKS, j->seg * SEG_CHUNKS, v->cvs + 32 * j->seg);
	mtc_ocdbt_drop(p->s, v->kv, b, (size_t)SEG);
	return atomic_fetch_sub(&v->left, 1) == 1 ? finish(p, v, buf) : 0;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	uint8_t *buf = xmalloc((size_t)SEG);
	size_t i;
	while (!atomic_load(&p->failed) && (i = atomic_fetch_add(&p->next, 1)) < p->n)
		if (run(p, &p->jobs[i], buf) < 0)
			break;
	free(buf);
	return NULL;
}

static int by_len_desc(const void *a, const void *b)
{
	const struct value *x = *(struct value *const *)a, *y = *(struct value *const *)b;
	return x->kv->len < y->kv->len ? 1 : x->kv->len > y->kv->len ? -1 : 0;
}

/* The hex of every value into v (in s's key order), largest values first. */
static int hash_values(const struct mtc_ocdbt *s, struct value *v, int threads, char *err, size_t errlen)
{
	struct value **order = xcalloc(s->n ? s->n : 1, sizeof *order);
	size_t njobs = 0;
	for (size_t i = 0; i < s->n; i++) {
		v[i].kv = &s->kv[i];
		v[i].segs = s->kv[i].len > SEG ? (s->kv[i].len - 1) / SEG : 0;
		v[i].cvs = v[i].segs ? xmalloc((size_t)v[i].segs * 32) : NULL;
		atomic_init(&v[i].left, v[i].segs);
		njobs += v[i].segs ? (size_t)v[i].segs : 1;
		order[i] = &v[i];
	}
	qsort(order, s->n, sizeof *order, by_len_desc);
	struct pool p = { .s = s,
			  .jobs = xcalloc(njobs ? njobs : 1, sizeof *p.jobs),
			  .n = njobs,
			  .err = err,
			  .errlen = errlen };
	atomic_init(&p.next, 0);
	atomic_init(&p.failed, 0);
	pthread_mutex_init(&p.lock, NULL);
	for (size_t i = 0, k = 0; i < s->n; i++)
		for (uint64_t seg = 0; seg == 0 || seg < order[i]->segs; seg++)
			p.jobs[k++] = (struct job){ order[i], seg };
	free(order);
	size_t most = threads < MTC_HASH_THREADS_MAX ? (size_t)threads : MTC_HASH_THREADS_MAX;
	mtc_run_threads(njobs < most ? njobs : most, worker, &p);
	pthread_mutex_destroy(&p.lock);
	free(p.jobs);
	for (size_t i = 0; i < s->n; i++)
		free(v[i].cvs);
	return atomic_load(&p.failed) ? -1 : 0;
}

int mtc_orbax_digest(const char *step_dir, int threads, char out[MTC_DIGEST_LEN], char *err,
		     size_t errlen)
{
	char *dir;
	int found = find_store(step_dir, &dir, err, errlen);
	if (found <= 0)
		return found;
	struct mtc_ocdbt s;
	if (mtc_ocdbt_open(&s, dir, err, errlen) < 0) {
		free(dir);
		return -1;
	}
	free(dir);
	struct value *v = xcalloc(s.n ? s.n : 1, sizeof *v);
	int rc = -1;
	if (hash_values(&s, v, threads > 0 ? threads : mtc_cpu_count(), err, errlen) == 0) {
		struct mtc_blake3 *h = xmalloc(sizeof *h);
		char *line = NULL;
		size_t cap = 0;
		uint8_t raw[32];
		mtc_blake3_init(h);
		for (size_t i = 0; i < s.n; i++) {
			if (4 * s.kv[i].key_len + 72 > cap) {
				cap = 4 * s.kv[i].key_len + 72;
				line = xrealloc(line, cap);
			}
			size_t n = mtc_py_bytes_repr(s.kv[i].key, s.kv[i].key_len, line);
			n += (size_t)sprintf(line + n, "\t%s\n", v[i].hex);
			mtc_blake3_update(h, line, n);
		}
		mtc_blake3_final(h, raw, 32);
		out[0] = 'D';
		mtc_hex(raw, 32, out + 1);
		free(line);
		free(h);
		rc = 1;
	}
	free(v);
	mtc_ocdbt_close(&s);
	return rc;
}
