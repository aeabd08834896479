/*
 * The content digest (see digest.h). A directory is walked once (walk.h) into a
 * tree; its files are hashed by a pool (large files one after another with every
 * thread, small files one per thread), then directory digests are folded up.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blake3/blake3.h"
#include "cpu_count.h"
#include "digest.h"
#include "digest_cache.h"
#include "fsutil.h"
#include "naming.h"
#include "threads.h"
#include "walk.h"
#include "xalloc.h"

#define MAX_DEPTH 64
#define READ_MAX (64 * 1024)		 /* smaller files are read, larger ones mapped */
#define SEG_CHUNKS MTC_DIGEST_SEG_CHUNKS /* a segment: hashed by one thread */
#define SEG_BYTES MTC_DIGEST_SEG_BYTES
#define WHOLE_MAX (1LL << 30) /* one thread maps and populates a file up to this size at once */

static int hash_fd(int fd, long long size, int nomap, uint8_t out[32])
{
	struct mtc_blake3 h;
	mtc_blake3_init(&h);
	if (size > READ_MAX && !nomap) {
		void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (p != MAP_FAILED) {
			mtc_blake3_update(&h, p, (size_t)size);
			munmap(p, (size_t)size);
			mtc_blake3_final(&h, out, 32);
			return 0;
		}
	}
	uint8_t buf[READ_MAX];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		mtc_blake3_update(&h, buf, (size_t)n);
	}
	mtc_blake3_final(&h, out, 32);
	return 0;
}

struct node {
	char *full;	 /* path to open */
	int fd;		 /* or, when >= 0, the file already open (not owned) */
	uint8_t *prefix; /* chaining values of its first nprefix segments, known */
	size_t nprefix;
	const char *rel; /* below the root, in full; "" for the root */
	int is_dir;
	long long size;
	char digest[MTC_DIGEST_LEN];
	struct node **kids;
	size_t nkids, cap;
};

/* The walk's product: the tree, its files to hash, and the open directories by depth. */
struct tree {
	struct node *open[MAX_DEPTH + 2];
	size_t rootlen;
	struct node **files;
	size_t nfiles, cap;
	struct mtc_digest_cache *cache; /* files found there are not hashed */
	long long cached;		/* their bytes */
};

static void free_node(struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		free_node(n->kids[i]);
	free(n->kids);
	free(n->full);
	free(n->prefix);
	free(n);
}

static struct node *new_node(const char *full, size_t rootlen)
{
	struct node *n = xcalloc(1, sizeof *n);
	n->full = xstrdup(full);
	n->fd = -1;
	n->rel = n->full[rootlen] ? n->full + rootlen + 1 : "";
	return n;
}

/* A walk's visit (walk.h): every entry becomes a node of the tree. */
static int add_entry(const struct mtc_walk_entry *e, void *arg)
{
	struct tree *t = arg;
	struct node *parent, *k;

	if (e->error) {
		errno = e->error;
		return -1;
	}
	if (!S_ISDIR(e->st.st_mode) && !S_ISREG(e->st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	parent = t->open[e->depth - 1];
	k = new_node(e->path, t->rootlen);
	if (S_ISDIR(e->st.st_mode)) {
		k->is_dir = 1;
		t->open[e->depth] = k;
	} else if (t->cache && mtc_digest_cache_get(t->cache, &e->st, k->digest)) {
		k->size = e->st.st_size;
		t->cached += k->size;
	} else {
		k->size = e->st.st_size;
		if (t->cache)
			k->nprefix = mtc_digest_cache_prefix(t->cache, &e->st, -1, e->path, &k->prefix);
		if (t->nfiles == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->files = xrealloc(t->files, t->cap * sizeof *t->files);
		}
		t->files[t->nfiles++] = k;
	}
	if (parent->nkids == parent->cap) {
		parent->cap = parent->cap ? 2 * parent->cap : 8;
		parent->kids = xrealloc(parent->kids, parent->cap * sizeof *parent->kids);
	}
	parent->kids[parent->nkids++] = k;
	return 0;
}

/*
 * Hashing is a queue of jobs shared by every thread: a file up to one segment
 * long (with one thread, up to WHOLE_MAX) is one job; a longer one is a job
 * per whole segment before its last byte, and whoever finishes the last of
 * them hashes the tail and the root.
 */
struct target {
	struct node *node;
	int nomap;	/* read, never mapped: the file may be cut short under the hash */
	long long segs; /* 0: hashed whole */
	uint8_t *cvs;	/* segs chaining values */
	atomic_llong left;
	pthread_mutex_t lock; /* guards the mapping's creation by the file's first job */
	int tried;
	uint8_t *map; /* the whole file; NULL where it cannot be mapped */
};

struct job {
	struct target *t;
	long long seg; /* -1: the tail alone, every segment being known */
};

struct pool {
	struct job *jobs;
	size_t n;
	atomic_size_t next;
	atomic_int err;
	const struct mtc_digest_gate *gate; /* may be NULL */
};

static void fail(atomic_int *err, int e)
{
	int zero = 0;
	atomic_compare_exchange_strong(err, &zero, e ? e : EIO);
}

static int may_go(const struct mtc_digest_gate *g) { return !g || g->may_go(g->arg); }

static int open_node(const struct node *n)
{
	return n->fd >= 0 ? fcntl(n->fd, F_DUPFD_CLOEXEC, 0) : open(n->full, O_RDONLY | O_CLOEXEC);
}

/* Opens the node's file, which must still have the size the walk saw. */
static int open_same(const struct node *n)
{
	struct stat st;
	int fd = open_node(n);
	if (fd < 0)
		return -1;
	int e = fstat(fd, &st) < 0 ? errno : st.st_size != n->size ? EAGAIN : 0;
	if (e) {
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Bytes [off, off + len) of the node's file read into a new buffer. */
static uint8_t *read_range(const struct node *n, long long off, size_t len)
{
	int fd = open_same(n);
	if (fd < 0)
		return NULL;
	uint8_t *p = xmalloc(len ? len : 1);
	if (mtc_pread_all(fd, p, len, off) < 0) {
		int e = errno == ENODATA ? EAGAIN : errno;
		free(p);
		close(fd);
		errno = e;
		return NULL;
	}
	close(fd);
	return p;
}

/*
 * Bytes [off, off + len) of a segmented file: in the file's one mapping (made
 * by its first job; each job populates its own part, then drops it so that
 * the final unmap is cheap), or, where mapping fails, read into a copy.
 */
static uint8_t *range_of(struct target *t, long long off, size_t len, int *copy)
{
	int e = 0;
	pthread_mutex_lock(&t->lock);
	if (!t->tried) {
		int fd = open_same(t->node);
		if (fd < 0) {
			e = errno;
		} else {
			void *p = mmap(NULL, (size_t)t->node->size, PROT_READ, MAP_PRIVATE, fd, 0);
			t->map = p == MAP_FAILED ? NULL : p;
			t->tried = 1;
			close(fd);
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (e) {
		errno = e;
		return NULL;
	}
	*copy = !t->map;
	if (*copy)
		return read_range(t->node, off, len);
	madvise(t->map + off, len, MADV_POPULATE_READ);
	return t->map + off;
}

static void drop_range(uint8_t *p, size_t len, int copy)
{
	if (copy)
		free(p);
	else
		madvise(p, len, MADV_DONTNEED);
}

/* mtc_digest_meter's counter: the bytes hashed by mtc_digest_path and mtc_digest_file. */
static _Atomic(atomic_llong *) meter;

void mtc_digest_meter(atomic_llong *bytes) { atomic_store(&meter, bytes); }

static void count(long long n)
{
	atomic_llong *m = atomic_load(&meter);
	if (m)
		atomic_fetch_add(m, n);
}

static int hash_whole(struct node *n, int nomap)
{
	struct stat st;
	uint8_t raw[32];
	int fd = open_node(n);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || hash_fd(fd, st.st_size, nomap, raw) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	mtc_hex(raw, 32, n->digest);
	n->size = st.st_size;
	count(st.st_size);
	return 0;
}

static int hash_segment(struct target *t, long long seg)
{
	int copy;
	uint8_t *p = range_of(t, seg * SEG_BYTES, (size_t)SEG_BYTES, &copy);
	if (!p)
		return -1;
	mtc_blake3_subtree(p, SEG_CHUNKS, (uint64_t)seg * SEG_CHUNKS, t->cvs + 32 * seg);
	drop_range(p, (size_t)SEG_BYTES, copy);
	count(SEG_BYTES);
	return 0;
}

static int hash_tail(struct target *t)
{
	int copy;
	long long off = t->segs * SEG_BYTES;
	size_t len = (size_t)(t->node->size - off);
	uint8_t *p = range_of(t, off, len, &copy);
	if (!p)
		return -1;
	struct mtc_blake3 h;
	uint8_t raw[32];
	mtc_blake3_init(&h);
	for (long long s = 0; s < t->segs; s++)
		mtc_blake3_push_subtree(&h, t->cvs + 32 * s, SEG_CHUNKS);
	mtc_blake3_update(&h, p, len);
	if (copy) {
		free(p);
	} else {
		munmap(t->map, (size_t)t->node->size);
		t->map = NULL;
	}
	mtc_blake3_final(&h, raw, 32);
	mtc_hex(raw, 32, t->node->digest);
	count((long long)len);
	return 0;
}

static int run_job(struct job *j)
{
	struct target *t = j->t;
	if (!t->segs)
		return hash_whole(t->node, t->nomap);
	if (j->seg < 0)
		return hash_tail(t);
	if (hash_segment(t, j->seg) < 0)
		return -1;
	return atomic_fetch_sub(&t->left, 1) == 1 ? hash_tail(t) : 0;
}

static void *pool_worker(void *arg)
{
	struct pool *p = arg;
	size_t i;
	while (atomic_load(&p->err) == 0 && (i = atomic_fetch_add(&p->next, 1)) < p->n) {
		if (!may_go(p->gate))
			fail(&p->err, EAGAIN);
		else if (run_job(&p->jobs[i]) < 0)
			fail(&p->err, errno);
	}
	return NULL;
}

static int by_size_desc(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

/* Fills the digest (and size) of every file node, largest first, on up to `threads` threads. */
static int hash_files(struct node **files, size_t n, int threads, int nomap,
		      const struct mtc_digest_gate *gate)
{
	if (n)
		qsort(files, n, sizeof *files, by_size_desc);
	struct target *t = xcalloc(n ? n : 1, sizeof *t);
	size_t njobs = 0;
	for (size_t i = 0; i < n; i++) {
		struct node *f = files[i];
		t[i].node = f;
		t[i].nomap = t[i].tried = nomap;
		if ((threads > 1 || f->size > WHOLE_MAX || f->nprefix) && f->size > SEG_BYTES)
			t[i].segs = (f->size - 1) / SEG_BYTES;
		t[i].cvs = t[i].segs ? xmalloc((size_t)t[i].segs * 32) : NULL;
		if ((long long)f->nprefix > t[i].segs)
			f->nprefix = (size_t)t[i].segs;
		if (f->nprefix)
			memcpy(t[i].cvs, f->prefix, 32 * f->nprefix);
		atomic_init(&t[i].left, t[i].segs - (long long)f->nprefix);
		pthread_mutex_init(&t[i].lock, NULL);
		njobs += t[i].segs > (long long)f->nprefix ? (size_t)(t[i].segs - (long long)f->nprefix)
							   : 1;
	}
	struct pool p = { xcalloc(njobs ? njobs : 1, sizeof *p.jobs), njobs, 0, 0, gate };
	for (size_t i = 0, k = 0; i < n; i++) {
		long long from = (long long)files[i]->nprefix;
		if (t[i].segs && from == t[i].segs)
			p.jobs[k++] = (struct job){ &t[i], -1 };
		for (long long s = from; s == 0 || s < t[i].segs; s++)
			p.jobs[k++] = (struct job){ &t[i], s };
	}
	size_t most = threads < MTC_HASH_THREADS_MAX ? (size_t)threads : MTC_HASH_THREADS_MAX;
	mtc_run_threads(njobs < most ? njobs : most, pool_worker, &p);
	for (size_t i = 0; i < n; i++) {
		if (t[i].map)
			munmap(t[i].map, (size_t)t[i].node->size);
		pthread_mutex_destroy(&t[i].lock);
		free(t[i].cvs);
	}
	free(t);
	free(p.jobs);
	if (p.err) {
		errno = p.err;
		return -1;
	}
	return 0;
}

/* The digest (and size) of the one file node n, which is freed. */
static int digest_node(struct node *n, int threads, int nomap, const struct mtc_digest_gate *gate,
		       char out[MTC_DIGEST_LEN], long long *size)
{
	int rc = hash_files(&n, 1, threads, nomap, gate);
	int e = errno;
	if (rc == 0) {
		memcpy(out, n->digest, MTC_DIGEST_LEN);
		if (size)
			*size = n->size;
	}
	free_node(n);
	errno = e;
	return rc;
}

/* The digest of one regular file, sized by the stat st. */
static int digest_file(const char *path, const struct stat *st, int threads, char out[MTC_DIGEST_LEN],
		       long long *size)
{
	struct node *n = new_node(path, strlen(path));
	n->size = st->st_size;
	return digest_node(n, threads, 0, NULL, out, size);
}

int mtc_digest_file(const char *path, int threads, char out[MTC_DIGEST_LEN], long long *size)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	return digest_file(path, &st, threads > 0 ? threads : mtc_cpu_count(), out, size);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void mtc_digest_dir(char **kids, size_t n, char out[MTC_DIGEST_LEN])
{
	struct mtc_blake3 h;
	uint8_t raw[32];

	if (n)
		qsort(kids, n, sizeof *kids, by_string);
	mtc_blake3_init(&h);
	for (size_t i = 0; i < n; i++) {
		if (i)
			mtc_blake3_update(&h, "\n", 1);
		mtc_blake3_update(&h, kids[i], strlen(kids[i]));
	}
	mtc_blake3_final(&h, raw, 32);
	out[0] = 'D';
	mtc_hex(raw, 32, out + 1);
}

static void fold_dir(struct node *n)
{
	char **kids = xmalloc((n->nkids ? n->nkids : 1) * sizeof *kids);
	n->size = 0;
	for (size_t i = 0; i < n->nkids; i++) {
		if (n->kids[i]->is_dir)
			fold_dir(n->kids[i]);
		kids[i] = n->kids[i]->digest;
		n->size += n->kids[i]->size;
	}
	mtc_digest_dir(kids, n->nkids, n->digest);
	free(kids);
}

static void manifest_collect(struct mtc_manifest *m, const struct node *n)
{
	mtc_manifest_append(m, n->rel, strlen(n->rel), n->is_dir ? MTC_ENTRY_DIR : MTC_ENTRY_FILE,
			    n->size, n->digest);
	for (size_t i = 0; i < n->nkids; i++)
		manifest_collect(m, n->kids[i]);
}

int mtc_digest_fd_read(int fd, const struct stat *st, int threads, struct mtc_digest_cache *cache,
		       const struct mtc_digest_gate *gate, char out[MTC_DIGEST_LEN])
{
	struct node *n = new_node("", 0);
	n->fd = fd;
	n->size = st->st_size;
	if (cache)
		n->nprefix = mtc_digest_cache_prefix(cache, st, fd, NULL, &n->prefix);
	return digest_node(n, threads > 0 ? threads : mtc_cpu_count(), 1, gate, out, NULL);
}

struct segments {
	int fd;
	size_t to;
	uint8_t *cvs;
	atomic_size_t next; /* the next to take: once the workers end, all below it are done */
	atomic_int err;
	const struct mtc_digest_gate *gate;
};

static void *segments_worker(void *arg)
{
	struct segments *g = arg;
	uint8_t *buf = xmalloc((size_t)SEG_BYTES);
	size_t i;
	while (atomic_load(&g->err) == 0 && may_go(g->gate) &&
	       (i = atomic_fetch_add(&g->next, 1)) < g->to) {
		if (mtc_pread_all(g->fd, buf, (size_t)SEG_BYTES, (long long)i * SEG_BYTES) < 0) {
			fail(&g->err, errno == ENODATA ? EAGAIN : errno);
			break;
		}
		mtc_blake3_subtree(buf, SEG_CHUNKS, (uint64_t)i * SEG_CHUNKS, g->cvs + 32 * i);
	}
	free(buf);
	return NULL;
}

long long mtc_digest_fd_segments(int fd, size_t from, size_t to, int threads, uint8_t *cvs,
				 const struct mtc_digest_gate *gate)
{
	struct segments g = { .fd = fd, .to = to, .cvs = cvs, .gate = gate };
	atomic_init(&g.next, from);
	atomic_init(&g.err, 0);
	size_t n = to > from ? to - from : 0, most = threads > 0 ? (size_t)threads : 1;
	if (n)
		mtc_run_threads(n < most ? n : most, segments_worker, &g);
	if (g.err) {
		errno = g.err;
		return -1;
	}
	size_t end = atomic_load(&g.next);
	return (long long)(end < to ? end : to);
}

int mtc_digest_path(const char *path, int threads, char out[MTC_DIGEST_LEN],
		    struct mtc_manifest *manifest)
{
	return mtc_digest_path_cached(path, threads, NULL, out, manifest, NULL);
}

int mtc_digest_path_cached(const char *path, int threads, struct mtc_digest_cache *cache,
			   char out[MTC_DIGEST_LEN], struct mtc_manifest *manifest, long long *cached)
{
	struct stat st;
	if (threads <= 0)
		threads = mtc_cpu_count();
	if (stat(path, &st) < 0)
		return -1;
	if (S_ISREG(st.st_mode)) {
		long long size;
		if (digest_file(path, &st, threads, out, &size) < 0)
			return -1;
		if (manifest)
			mtc_manifest_append(manifest, "", 0, MTC_ENTRY_FILE, size, out);
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	struct tree t = { .rootlen = strlen(path), .cache = cache };
	struct node *root = t.open[0] = new_node(path, t.rootlen);
	root->is_dir = 1;
	struct mtc_walk w = { .root = path, .max_depth = MAX_DEPTH, .visit = add_entry, .arg = &t };
	int rc = mtc_walk(&w);
	if (rc == 0)
		rc = hash_files(t.files, t.nfiles, threads, 0, NULL);
	if (rc == 0) {
		fold_dir(root);
		memcpy(out, root->digest, MTC_DIGEST_LEN);
		if (manifest) {
			manifest_collect(manifest, root);
			mtc_manifest_sort(manifest);
		}
		if (cached)
			*cached = t.cached;
	}
	int saved = errno;
	free(t.files);
	free_node(root);
	errno = saved;
	return rc;
}
