/*
 * The digest cache (see digest_cache.h): a chained hash table of files by
 * (dev, ino), each with its figures, its digest when known, and its prefix.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "digest.h"
#include "digest_cache.h"
#include "threads.h"
#include "xalloc.h"

struct rec {
	struct rec *next;
	struct stat st; /* dev, ino and the figures */
	char hex[65];	/* the digest of the file st describes, when known */
	int known;
	uint8_t *prefix; /* chaining values of the first nprefix segments */
	size_t nprefix;
	long long birth; /* the file's birth time in ns, with its prefix */
	double used;	 /* when last found or put (mtc_wall_now) */
};

struct mtc_digest_cache {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct rec **bucket;
	size_t nbuckets, nrecs;
	int holds, busy;
};

struct mtc_digest_cache *mtc_digest_cache_new(void)
{
	struct mtc_digest_cache *c = xcalloc(1, sizeof *c);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	c->nbuckets = 256;
	c->bucket = xcalloc(c->nbuckets, sizeof *c->bucket);
	return c;
}

static void free_rec(struct rec *r)
{
	free(r->prefix);
	free(r);
}

void mtc_digest_cache_free(struct mtc_digest_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++)
		for (struct rec *r = c->bucket[i], *next; r; r = next) {
			next = r->next;
			free_rec(r);
		}
	free(c->bucket);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int mtc_digest_cache_quiet(const struct stat *st, double since)
{
	double ctime = (double)st->st_ctim.tv_sec + st->st_ctim.tv_nsec / 1e9;
	return S_ISREG(st->st_mode) && since - ctime >= MTC_DIGEST_QUIET_S;
}

static int same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int same_figures(const struct stat *a, const struct stat *b)
{
	return same_file(a, b) && a->st_size == b->st_size && same_time(a->st_mtim, b->st_mtim) &&
	       same_time(a->st_ctim, b->st_ctim);
}

static struct rec **slot(struct mtc_digest_cache *c, const struct stat *st)
{
	uint64_t h = ((uint64_t)st->st_ino * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)st->st_dev;
	struct rec **p = &c->bucket[(h >> 17) % c->nbuckets];
	while (*p && !same_file(&(*p)->st, st))
		p = &(*p)->next;
	return p;
}

static void grow(struct mtc_digest_cache *c)
{
	struct rec **old = c->bucket;
	size_t n = c->nbuckets;
	c->nbuckets *= 4;
	c->bucket = xcalloc(c->nbuckets, sizeof *c->bucket);
	for (size_t i = 0; i < n; i++)
		for (struct rec *r = old[i], *next; r; r = next) {
			next = r->next;
			struct rec **p = slot(c, &r->st);
			r->next = NULL;
			*p = r;
		}
	free(old);
}

int mtc_digest_cache_get(struct mtc_digest_cache *c, const struct stat *st, char hex[65])
{
	int hit = 0;
	pthread_mutex_lock(&c->lock);
	struct rec *r = *slot(c, st);
	if (r && r->known && same_figures(&r->st, st)) {
		memcpy(hex, r->hex, 65);
		r->used = mtc_wall_now();
		hit = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return hit;
}

/* The record of st's file, made when there is none; under the lock. */
static struct rec *rec_of(struct mtc_digest_cache *c, const struct stat *st)
{
	struct rec **p = slot(c, st), *r = *p;
	if (!r) {
		r = *p = xcalloc(1, sizeof *r);
		r->st = *st;
		if (++c->nrecs > 2 * c->nbuckets)
			grow(c);
	}
	r->used = mtc_wall_now();
	return r;
}

/* The birth time in ns of the file open as fd (fd < 0: at path), 0 where none is kept. */
static long long birth_of(int fd, const char *path)
{
	struct statx sx;
	int rc = fd >= 0 ? statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &sx)
			 : statx(AT_FDCWD, path, 0, STATX_BTIME, &sx);
	if (rc < 0 || !(sx.stx_mask & STATX_BTIME))
		return 0;
	return (long long)sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec;
}

size_t mtc_digest_cache_prefix(struct mtc_digest_cache *c, const struct stat *st, int fd,
			       const char *path, uint8_t **cvs)
{
	size_t n = 0;
	*cvs = NULL;
	pthread_mutex_lock(&c->lock);
	struct rec *r = *slot(c, st);
	if (r && r->nprefix && birth_of(fd, path) != r->birth)
		r->nprefix = 0; /* another file with the inode of one gone */
	if (r && r->nprefix && (long long)st->st_size >= (long long)r->nprefix * MTC_DIGEST_SEG_BYTES) {
		n = r->nprefix;
		*cvs = memcpy(xmalloc(32 * n), r->prefix, 32 * n);
		r->used = mtc_wall_now();
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

void mtc_digest_cache_put_prefix(struct mtc_digest_cache *c, const struct stat *st, int fd, size_t from,
				 size_t n, const uint8_t *cvs)
{
	long long birth = birth_of(fd, NULL);
	if (!birth)
		return;
	pthread_mutex_lock(&c->lock);
	struct rec *r = rec_of(c, st);
	if (r->nprefix && r->birth != birth)
		r->nprefix = 0;
	if (!r->nprefix)
		r->birth = birth;
	if (r->nprefix == from && n > from) {
		r->prefix = xrealloc(r->prefix, 32 * n);
		memcpy(r->prefix + 32 * from, cvs + 32 * from, 32 * (n - from));
		r->nprefix = n;
	}
	pthread_mutex_unlock(&c->lock);
}

void mtc_digest_cache_put(struct mtc_digest_cache *c, double since, const struct stat *before,
			  const struct stat *after, const char *hex)
{
	if (!mtc_digest_cache_quiet(before, since) || !same_figures(before, after))
		return;
	pthread_mutex_lock(&c->lock);
	struct rec *r = rec_of(c, before);
	r->st = *before;
	memcpy(r->hex, hex, 64);
	r->hex[64] = '\0';
	r->known = 1;
	pthread_mutex_unlock(&c->lock);
}

void mtc_digest_cache_sweep(struct mtc_digest_cache *c, double keep_s)
{
	double before = mtc_wall_now() - keep_s;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nbuckets; i++)
		for (struct rec **p = &c->bucket[i]; *p;) {
			struct rec *r = *p;
			if (r->used >= before) {
				p = &r->next;
			} else {
				*p = r->next;
				free_rec(r);
				c->nrecs--;
			}
		}
	pthread_mutex_unlock(&c->lock);
}

size_t mtc_digest_cache_files(struct mtc_digest_cache *c)
{
	pthread_mutex_lock(&c->lock);
	size_t n = c->nrecs;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void mtc_digest_cache_hold(struct mtc_digest_cache *c)
{
	pthread_mutex_lock(&c->lock);
	c->holds++;
	/* bounded: the work may be in the idle class (threads.h), starved while the CPUs are busy */
	struct timespec until = mtc_wall_after(MTC_DIGEST_HOLD_WAIT_S);
	while (c->busy && pthread_cond_timedwait(&c->idle, &c->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&c->lock);
}

void mtc_digest_cache_release(struct mtc_digest_cache *c)
{
	pthread_mutex_lock(&c->lock);
	c->holds--;
	pthread_mutex_unlock(&c->lock);
}

int mtc_digest_cache_begin(struct mtc_digest_cache *c)
{
	pthread_mutex_lock(&c->lock);
	int ok = !c->holds && !c->busy;
	if (ok)
		c->busy = 1;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

void mtc_digest_cache_end(struct mtc_digest_cache *c) { mtc_cond_set(&c->lock, &c->idle, &c->busy, 0); }

int mtc_digest_cache_held(struct mtc_digest_cache *c)
{
	pthread_mutex_lock(&c->lock);
	int held = c->holds > 0;
	pthread_mutex_unlock(&c->lock);
	return held;
}
