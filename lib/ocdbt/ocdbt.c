/*
 * An OCDBT store on disk: the latest version's keys and where their values
 * are. Invariant: mtc_ocdbt_open gives the whole key list, in strictly
 * increasing key order, or an error; never a part of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "ocdbt.h"
#include "ocdbt_format.h"
#include "xalloc.h"

#define MAX_NODES (1u << 22) /* node reads per open (a tree may share nodes: bound the walk) */
#define MAX_KEYS (1u << 28)

struct walk {
	struct mtc_ocdbt *s;
	size_t cap, nodes;
	char *err;
	size_t errlen;
};

#define fail mtc_ocdbt_fail

/* Prefixes a reason already in err with the subject: "'subject': reason". */
static int about(char *err, size_t errlen, const char *root, const char *rel)
{
	char *why = xstrdup(err);
	snprintf(err, errlen, "'%s/%s': %s", root, rel, why);
	free(why);
	return -1;
}

static int safe_path(const char *p)
{
	if (!*p || *p == '/')
		return 0;
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return 0;
		c += n + (c[n] == '/');
	}
	return 1;
}

/* The store's index of a data file, opened on first use. */
static int file_index(struct mtc_ocdbt *s, const char *path, size_t *idx, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i].path, path)) {
			*idx = i;
			return 0;
		}
	if (!safe_path(path))
		return fail(err, errlen, "'%s': data file path '%s' leaves the store", s->root, path);
	int fd = openat(s->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = fd < 0 ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		return fail(err, errlen, "cannot open data file '%s/%s': %s", s->root, path,
			    e == EINVAL ? "not a regular file" : strerror(e));
	}
	void *map = st.st_size > 0 ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
				   : MAP_FAILED;
	s->files = xrealloc(s->files, (s->nfiles + 1) * sizeof *s->files);
	s->files[s->nfiles] = (struct mtc_ocdbt_file){ xstrdup(path), fd, (uint64_t)st.st_size,
						       map == MAP_FAILED ? NULL : map };
	*idx = s->nfiles++;
	return 0;
}

/* Bytes of a node or value reference, checked against the file's size. */
static int check_range(const struct mtc_ocdbt *s, size_t f, uint64_t off, uint64_t len, char *err,
		       size_t errlen)
{
	const struct mtc_ocdbt_file *file = &s->files[f];
	if (off > file->size || len > file->size - off)
		return fail(err, errlen,
			    "'%s/%s': truncated: bytes %llu..%llu referenced, file has %llu", s->root,
			    file->path, (unsigned long long)off, (unsigned long long)(off + len),
			    (unsigned long long)file->size);
	return 0;
}

/* prefix + key in a new buffer (prefix may be NULL when plen is 0) */
static uint8_t *join_key(const uint8_t *prefix, size_t plen, const uint8_t *key, size_t klen)
{
	uint8_t *k = xmalloc(plen + klen + 1);
	if (plen)
		memcpy(k, prefix, plen);
	if (klen)
		memcpy(k + plen, key, klen);
	return k;
}

static int add_kv(struct walk *w, const uint8_t *prefix, size_t plen, const struct mtc_ocdbt_entry *e,
		  const struct mtc_ocdbt_node *node)
{
	struct mtc_ocdbt *s = w->s;
	size_t klen = plen + e->key_len;
	if (s->n) {
		const struct mtc_ocdbt_kv *last = &s->kv[s->n - 1];
		size_t m = last->key_len < klen ? last->key_len : klen;
		int c = plen ? memcmp(last->key, prefix, m < plen ? m : plen) : 0;
		if (c == 0 && m > plen)
			c = memcmp(last->key + plen, e->key, m - plen);
		if (c > 0 || (c == 0 && last->key_len >= klen))
			return fail(w->err, w->errlen, "'%s': keys out of order in the B+tree", s->root);
	}
	if (s->n == MAX_KEYS)
		return fail(w->err, w->errlen, "'%s': more than %u keys", s->root, MAX_KEYS);
	if (s->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 1024;
		s->kv = xrealloc(s->kv, w->cap * sizeof *s->kv);
	}
	struct mtc_ocdbt_kv kv = { join_key(prefix, plen, e->key, e->key_len), klen, e->len, NULL, 0, 0 };
	int rc = 0;
	if (e->value) {
		kv.value = xmalloc(e->len ? e->len : 1);
		memcpy(kv.value, e->value, e->len);
	} else {
		const struct mtc_ocdbt_path *p = &node->table.v[e->ref.file];
		kv.offset = e->ref.offset;
		rc = file_index(s, p->path, &kv.file, w->err, w->errlen);
		if (rc == 0)
			rc = check_range(s, kv.file, kv.offset, kv.len, w->err, w->errlen);
	}
	if (rc < 0) {
		free(kv.key);
		free(kv.value);
		return -1;
	}
	s->kv[s->n++] = kv;
	return 0;
}

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = alen && blen ? memcmp(a, b, alen < blen ? alen : blen) : 0;
	return c ? c : (alen > blen) - (alen < blen);
}

/*
 * Visits the node at `ref` (in `path`, a file of the parent's table) of the
 * given height. Every key below it starts with prefix; min is the parent's
 * key for it, which its first key may not be below. The height falls by one
 * per level, so the recursion is at most 256 deep.
 */
static int visit(struct walk *w, const struct mtc_ocdbt_path *path, const struct mtc_ocdbt_ref *ref,
		 unsigned height, const uint8_t *prefix, size_t plen, const uint8_t *min, size_t minlen)
{
	struct mtc_ocdbt *s = w->s;
	size_t f;
	if (++w->nodes > MAX_NODES)
		return fail(w->err, w->errlen, "'%s': more than %u B+tree nodes", s->root, MAX_NODES);
	if (file_index(s, path->path, &f, w->err, w->errlen) < 0 ||
	    check_range(s, f, ref->offset, ref->length, w->err, w->errlen) < 0)
		return -1;
	if (ref->length > MTC_OCDBT_MAX_DECODED)
		return fail(w->err, w->errlen, "'%s/%s': B+tree node of %llu bytes", s->root, path->path,
			    (unsigned long long)ref->length);
	uint8_t *buf = xmalloc(ref->length ? ref->length : 1);
	struct mtc_ocdbt_node node;
	int rc = -1;
	if (mtc_pread_all(s->files[f].fd, buf, ref->length, ref->offset) < 0) {
		fail(w->err, w->errlen, "cannot read '%s/%s': %s", s->root, path->path, strerror(errno));
		free(buf);
		return -1;
	}
	if (mtc_ocdbt_decode_node(buf, ref->length, path->path, path->base_len, &node, w->err,
				  w->errlen) < 0) {
		free(buf);
		return about(w->err, w->errlen, s->root, path->path);
	}
	free(buf);
	uint8_t *first = join_key(prefix, plen, node.e[0].key, node.e[0].key_len);
	if (node.height != height) {
		fail(w->err, w->errlen, "'%s/%s': B+tree node of height %u where %u was expected",
		     s->root, path->path, node.height, height);
		goto out;
	}
	if (key_cmp(first, plen + node.e[0].key_len, min, minlen) < 0) {
		fail(w->err, w->errlen, "'%s/%s': B+tree node keys below its parent's", s->root,
		     path->path);
		goto out;
	}
	for (size_t i = 0; i < node.n; i++) {
		const struct mtc_ocdbt_entry *e = &node.e[i];
		if (height == 0) {
			if (add_kv(w, prefix, plen, e, &node) < 0)
				goto out;
			continue;
		}
		uint8_t *key = join_key(prefix, plen, e->key, e->key_len);
		int r = visit(w, &node.table.v[e->ref.file], &e->ref, height - 1, key,
			      plen + e->subtree_prefix, key, plen + e->key_len);
		free(key);
		if (r < 0)
			goto out;
	}
	rc = 0;
out:
	free(first);
	mtc_ocdbt_node_free(&node);
	return rc;
}

/* The newest manifest.<16 hex> of a numbered store: 0 and *gen 0 when there is none. */
static int newest_numbered(struct mtc_ocdbt *s, uint64_t *gen, char *err, size_t errlen)
{
	int fd = dup(s->dirfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return fail(err, errlen, "cannot list '%s': %s", s->root, strerror(errno));
	}
	struct dirent *de;
	*gen = 0;
	while ((de = readdir(d))) {
		const char *h = de->d_name + 9;
		if (strncmp(de->d_name, "manifest.", 9) || strlen(h) != 16 || h[0] < '0' || h[0] > '9' ||
		    strspn(h, "0123456789abcdefABCDEF") != 16)
			continue;
		uint64_t g = strtoull(h, NULL, 16);
		if (g > *gen)
			*gen = g;
	}
	closedir(d);
	return 0;
}

static int read_manifest(struct mtc_ocdbt *s, const char *name, struct mtc_ocdbt_manifest *m, char *err,
			 size_t errlen)
{
	int fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
	char *buf;
	size_t len;
	if (fd < 0 || mtc_read_fd(fd, MTC_OCDBT_MAX_DECODED, &buf, &len) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return fail(err, errlen, "cannot read '%s/%s': %s", s->root, name, strerror(e));
	}
	close(fd);
	int rc = mtc_ocdbt_decode_manifest((uint8_t *)buf, len, m, err, errlen);
	free(buf);
	return rc < 0 ? about(err, errlen, s->root, name) : 0;
}

int mtc_ocdbt_open(struct mtc_ocdbt *s, const char *dir, char *err, size_t errlen)
{
	struct mtc_ocdbt_manifest m;
	memset(s, 0, sizeof *s);
	s->root = xstrdup(dir);
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		fail(err, errlen, "cannot open '%s': %s", dir, strerror(errno));
		goto bad;
	}
	if (read_manifest(s, "manifest.ocdbt", &m, err, errlen) < 0)
		goto bad;
	if (m.numbered) {
		uint64_t gen = 0;
		char name[32];
		mtc_ocdbt_manifest_free(&m);
		if (newest_numbered(s, &gen, err, errlen) < 0)
			goto bad;
		if (gen == 0)
			return 0; /* no version yet: no keys */
		snprintf(name, sizeof name, "manifest.%016llx", (unsigned long long)gen);
		if (read_manifest(s, name, &m, err, errlen) < 0)
			goto bad;
		if (m.numbered || m.generation != gen) {
			fail(err, errlen, "'%s/%s': not the single manifest of generation %llu", s->root,
			     name, (unsigned long long)gen);
			mtc_ocdbt_manifest_free(&m);
			goto bad;
		}
	}
	s->generation = m.generation;
	int rc = 0;
	if (m.root.offset != MTC_OCDBT_MISSING) {
		struct walk w = { s, 0, 0, err, errlen };
		rc = visit(&w, &m.table.v[m.root.file], &m.root, m.root_height, NULL, 0, NULL, 0);
	}
	mtc_ocdbt_manifest_free(&m);
	if (rc == 0)
		return 0;
bad:
	mtc_ocdbt_close(s);
	return -1;
}

void mtc_ocdbt_close(struct mtc_ocdbt *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->kv[i].key);
		free(s->kv[i].value);
	}
	for (size_t i = 0; i < s->nfiles; i++) {
		if (s->files[i].map)
			munmap((void *)s->files[i].map, (size_t)s->files[i].size);
		close(s->files[i].fd);
		free(s->files[i].path);
	}
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->kv);
	free(s->files);
	free(s->root);
	memset(s, 0, sizeof *s);
	s->dirfd = -1;
}

/* The pages holding [p, p + len): madvise wants a page-aligned start. */
static void pages(const uint8_t *p, size_t len, uint8_t **start, size_t *n)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p & ~(page - 1);
	*start = (uint8_t *)a;
	*n = (size_t)((uintptr_t)p + len - a);
}

const uint8_t *mtc_ocdbt_range(const struct mtc_ocdbt *s, const struct mtc_ocdbt_kv *kv, uint64_t off,
			       size_t len, uint8_t *buf, char *err, size_t errlen)
{
	if (off > kv->len || len > kv->len - off) {
		fail(err, errlen, "read past the end of a value");
		return NULL;
	}
	if (kv->value)
		return kv->value + off;
	const struct mtc_ocdbt_file *f = &s->files[kv->file];
	if (f->map) {
		const uint8_t *p = f->map + kv->offset + off;
		uint8_t *start;
		size_t n;
		pages(p, len, &start, &n);
		madvise(start, n, MADV_POPULATE_READ); /* one call, not a fault a page */
		return p;
	}
	if (mtc_pread_all(f->fd, buf, len, kv->offset + off) < 0) {
		fail(err, errlen, "cannot read '%s/%s': %s", s->root, f->path,
		     errno == ENODATA ? "truncated" : strerror(errno));
		return NULL;
	}
	return buf;
}

void mtc_ocdbt_drop(const struct mtc_ocdbt *s, const struct mtc_ocdbt_kv *kv, const uint8_t *p,
		    size_t len)
{
	const struct mtc_ocdbt_file *f = &s->files[kv->file];
	if (kv->value || !f->map || p < f->map || p >= f->map + f->size)
		return;
	uint8_t *start;
	size_t n;
	pages(p, len, &start, &n);
	madvise(start, n, MADV_DONTNEED); /* a private, unwritten map: the pages come back on use */
}
