/* The directory walker (see walk.h). */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beneath.h"
#include "xalloc.h"

/* One directory's names, NUL-separated in buf; reused by every directory at its depth. */
struct names {
	char *buf;
	size_t len, cap;
	size_t *off;
	size_t n, ncap;
};

struct walker {
	const struct mtc_walk *w;
	char *path;
	size_t cap, rootlen;
	struct names *levels;
	int nlevels;
};

static const char *rel_of(const struct walker *k, size_t plen)
{
	return plen > k->rootlen ? k->path + k->rootlen + 1 : "";
}

/* path[0..plen) + "/" + name; returns the new length. */
static size_t append(struct walker *k, size_t plen, const char *name)
{
	size_t nlen = strlen(name);
	if (plen + nlen + 2 > k->cap) {
		k->cap = 2 * (plen + nlen + 2);
		k->path = xrealloc(k->path, k->cap);
	}
	k->path[plen] = '/';
	memcpy(k->path + plen + 1, name, nlen + 1);
	return plen + 1 + nlen;
}

static struct names *level(struct walker *k, int depth)
{
	if (depth >= k->nlevels) {
		int n = depth + 8;
		k->levels = xrealloc(k->levels, (size_t)n * sizeof *k->levels);
		memset(k->levels + k->nlevels, 0, (size_t)(n - k->nlevels) * sizeof *k->levels);
		k->nlevels = n;
	}
	return &k->levels[depth];
}

static void add_name(struct names *l, const char *name)
{
	size_t len = strlen(name) + 1;
	if (l->len + len > l->cap) {
		l->cap = 2 * (l->len + len) + 256;
		l->buf = xrealloc(l->buf, l->cap);
	}
	if (l->n == l->ncap) {
		l->ncap = l->ncap ? 2 * l->ncap : 64;
		l->off = xrealloc(l->off, l->ncap * sizeof *l->off);
	}
	memcpy(l->buf + l->len, name, len);
	l->off[l->n++] = l->len;
	l->len += len;
}

static DIR *open_dir(const struct walker *k, size_t plen)
{
	if (!(k->w->flags & MTC_WALK_BENEATH))
		return opendir(k->path);
	int fd = mtc_open_beneath(k->w->rootfd, rel_of(k, plen), O_RDONLY | O_DIRECTORY);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

static int read_names(const struct walker *k, size_t plen, struct names *l)
{
	DIR *d = open_dir(k, plen);
	struct dirent *e;
	int err;

	if (!d)
		return -1;
	l->len = l->n = 0;
	while ((errno = 0, e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			add_name(l, e->d_name);
	err = errno;
	closedir(d);
	errno = err;
	return err ? -1 : 0;
}

static int by_name(const void *a, const void *b, void *buf)
{
	return strcmp((char *)buf + *(const size_t *)a, (char *)buf + *(const size_t *)b);
}

static int stat_entry(const struct walker *k, size_t plen, struct stat *st)
{
	if (k->w->flags & MTC_WALK_BENEATH)
		return mtc_stat_beneath(k->w->rootfd, rel_of(k, plen), st);
	return k->w->flags & MTC_WALK_PHYS ? lstat(k->path, st) : stat(k->path, st);
}

static void entry_at(const struct walker *k, size_t plen, int depth, struct mtc_walk_entry *e)
{
	const char *slash = depth ? strrchr(k->path, '/') : NULL;
	memset(e, 0, sizeof *e);
	e->path = k->path;
	e->rel = rel_of(k, plen);
	e->name = slash ? slash + 1 : e->rel;
	e->depth = depth;
}

/* The contents of the directory at path[0..plen), then its post visit. */
static int walk_dir(struct walker *k, size_t plen, int depth, const struct stat *st)
{
	const struct mtc_walk *w = k->w;
	struct mtc_walk_entry e;
	struct names *l = level(k, depth);
	size_t n;

	if (depth > w->max_depth || read_names(k, plen, l) < 0) {
		entry_at(k, plen, depth, &e);
		e.error = depth > w->max_depth ? ELOOP : errno;
		e.reading = 1;
		if (st)
			e.st = *st;
		return w->visit(&e, w->arg) < 0 ? -1 : 0;
	}
	if ((w->flags & MTC_WALK_SORTED) && l->n)
		qsort_r(l->off, l->n, sizeof *l->off, by_name, l->buf);
	n = l->n;
	for (size_t i = 0; i < n; i++) {
		int r;
		l = level(k, depth); /* deeper levels may have moved the array */
		size_t len = append(k, plen, l->buf + l->off[i]);
		entry_at(k, len, depth + 1, &e);
		if (stat_entry(k, len, &e.st) < 0)
			e.error = errno;
		if ((r = w->visit(&e, w->arg)) < 0)
			return -1;
		if (r == 0 && !e.error && S_ISDIR(e.st.st_mode) &&
		    walk_dir(k, len, depth + 1, &e.st) < 0)
			return -1;
		k->path[plen] = '\0';
	}
	if (!(w->flags & MTC_WALK_POST))
		return 0;
	entry_at(k, plen, depth, &e);
	if (st)
		e.st = *st;
	e.post = 1;
	e.kids = n;
	return w->visit(&e, w->arg) < 0 ? -1 : 0;
}

int mtc_walk(const struct mtc_walk *w)
{
	struct walker k = { .w = w };
	struct stat st;
	int rc, e;

	k.rootlen = strlen(w->root);
	k.cap = k.rootlen + 256;
	k.path = xmalloc(k.cap);
	memcpy(k.path, w->root, k.rootlen + 1);
	rc = walk_dir(&k, k.rootlen, 0, stat_entry(&k, k.rootlen, &st) == 0 ? &st : NULL);
	e = errno;
	for (int i = 0; i < k.nlevels; i++) {
		free(k.levels[i].buf);
		free(k.levels[i].off);
	}
	free(k.levels);
	free(k.path);
	errno = e;
	return rc;
}

/* A walk's visit (walk.h): each entry removed, a directory after its contents. */
static int remove_entry(const struct mtc_walk_entry *e, void *arg)
{
	if (e->error && e->error != ENOENT) {
		errno = e->error;
		return -1;
	}
	if (e->error || (S_ISDIR(e->st.st_mode) && !e->post))
		return 0;
	if (S_ISDIR(e->st.st_mode))
		return rmdir(e->path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(e->path) < 0 && errno != ENOENT ? -1 : 0;
}

int mtc_remove_tree(const char *path)
{
	struct stat st;
	struct mtc_walk w = { .root = path,
			      .flags = MTC_WALK_PHYS | MTC_WALK_POST,
			      .max_depth = INT_MAX,
			      .visit = remove_entry };
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
	return mtc_walk(&w);
}
