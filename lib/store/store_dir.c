/*
 * The directory backend: a local disk, NFS or a Cloud Storage FUSE mount.
 * Invariant: an object is visible under its name only when whole and
 * durable. Data goes to a temporary (tmpname.h) in the same directory, locked
 * by its writer, is fsynced, renamed into place (without replacing, unless
 * asked) and the directory is fsynced. Listings skip temporaries; a dead
 * writer's are swept (dir_leftovers).
 * Deleting a prefix removes .meta objects first, so a crash halfway leaves a
 * backup that reads as incomplete.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "digest_copy.h"
#include "fault.h"
#include "fsutil.h"
#include "backends.h"
#include "store_impl.h"
#include "tmpname.h"
#include "walk.h"
#include "xalloc.h"

#define COPY_CHUNK (1 << 20)
#define MAX_DEPTH 64

struct dir_store {
	char *root;
};

static const char *root_of(struct mtc_store *s) { return ((struct dir_store *)s->impl)->root; }

static char *path_of(struct mtc_store *s, const char *key)
{
	return xasprintf("%s/%s", root_of(s), key);
}

static int fail(struct mtc_store *s, const char *what, const char *subject)
{
	int e = errno;
	mtc_store_set_error(s, "%s '%s': %s", what, subject, strerror(e));
	errno = e;
	return -1;
}

/* mkdir -p of path's parent (or of path itself when dir), fsyncing each new entry's parent. */
static int make_dirs(char *path, int include_last)
{
	char *p = path + 1;
	struct stat st;

	for (;;) {
		char *slash = strchr(p, '/');
		if (!slash && !include_last)
			return 0;
		if (slash)
			*slash = '\0';
		if (*path && mkdir(path, 0755) == 0) {
			if (mtc_fsync_parent(path) < 0) {
				if (slash)
					*slash = '/';
				return -1;
			}
		} else if (*path && (errno != EEXIST || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))) {
			if (errno == EEXIST)
				errno = ENOTDIR;
			if (slash)
				*slash = '/';
			return -1;
		}
		if (!slash)
			return 0;
		*slash = '/';
		p = slash + 1;
		if (!*p)
			return 0;
	}
}

static int copy_fd(struct mtc_store *s, int in, int out, long long *copied)
{
	static const long long chunk = 64LL << 20;
	char *buf = NULL;
	*copied = 0;

	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)chunk, 0);
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
			      errno == EOPNOTSUPP || errno == EBADF || errno == EPERM))
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			return 0;
		*copied += n;
		mtc_store_progress_add(s, n);
	}
	buf = xmalloc(COPY_CHUNK);
	for (;;) {
		ssize_t n = read(in, buf, COPY_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || mtc_write_all(out, buf, (size_t)n) < 0) {
			int e = errno;
			free(buf);
			errno = e;
			return n == 0 ? 0 : -1;
		}
		*copied += n;
		mtc_store_progress_add(s, n);
	}
}

/* Moves tmp to path: create-only unless replace. fsyncs the directory. */
static int publish(const char *tmp, const char *path, int replace)
{
	if (replace) {
		if (rename(tmp, path) < 0)
			return -1;
	} else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -1;
		/* Filesystems without RENAME_NOREPLACE: link is create-only too. */
		if (link(tmp, path) < 0)
			return -1;
		unlink(tmp);
	}
	return mtc_fsync_parent(path);
}

/* Writes what fill() produces into a temporary, then publishes it as key. */
static int put_with(struct mtc_store *s, const char *key, int flags,
		    int (*fill)(struct mtc_store *s, int fd, const void *arg, long long *n),
		    const void *arg, long long *size)
{
	char *path = path_of(s, key);
	struct mtc_tmp t = { NULL, -1 };
	int e;
	size_t klen = strlen(key);
	struct stat st;

	if (key[klen - 1] == '/') {
		if (make_dirs(path, 1) < 0)
			goto fail_dirs;
		free(path);
		return 0;
	}
	if (!(flags & MTC_STORE_REPLACE) && lstat(path, &st) == 0) {
		errno = EEXIST;
		fail(s, "object exists", key);
		free(path);
		return -1;
	}
	if (make_dirs(path, 0) < 0)
		goto fail_dirs;
	if (mtc_tmp_beside(path, &t) < 0) {
		fail(s, "cannot create a temporary for", key);
		free(path);
		return -1;
	}
	if (fill(s, t.fd, arg, size) < 0 || fsync(t.fd) < 0)
		goto fail_write;
	mtc_fault_stall("dir-put", key);
	/* the lock is held until the temporary has its name */
	if (publish(t.path, path, flags & MTC_STORE_REPLACE) < 0) {
		e = errno;
		mtc_tmp_discard(&t);
		errno = e;
		fail(s, e == EEXIST ? "object exists" : "cannot publish", key);
		goto out;
	}
	if (close(t.fd) < 0) {
		t.fd = -1;
		fail(s, "cannot write", key);
		goto out;
	}
	t.fd = -1;
	mtc_tmp_release(&t);
	free(path);
	return 0;
fail_dirs:
	fail(s, "cannot create directories for", key);
	free(path);
	return -1;
fail_write:
	if (errno != EBADMSG) /* a digest that differs: fill said so */
		fail(s, "cannot write", t.path);
	mtc_tmp_discard(&t);
out:
	e = errno;
	mtc_tmp_release(&t);
	free(path);
	errno = e;
	return -1;
}

static int fill_from_file(struct mtc_store *s, int fd, const void *arg, long long *n)
{
	const char *src = arg;
	int in = open(src, O_RDONLY | O_CLOEXEC), rc, e;

	if (in < 0) {
		fail(s, "cannot open", src);
		return -1;
	}
	rc = copy_fd(s, in, fd, n);
	e = errno;
	close(in);
	errno = e;
	if (rc < 0)
		fail(s, "cannot copy", src);
	return rc;
}

static void progress_add(void *arg, long long n) { mtc_store_progress_add(arg, n); }

/* fill_from_file, hashing what it writes: the object is refused unless it has x's digest. */
static int fill_checked(struct mtc_store *s, int fd, const void *arg, long long *n)
{
	const struct mtc_store_xfer *x = arg;
	char digest[MTC_DIGEST_LEN];
	struct stat st;
	int in = open(x->path, O_RDONLY | O_CLOEXEC), rc, e;

	if (in < 0) {
		fail(s, "cannot open", x->path);
		return -1;
	}
	rc = fstat(in, &st) < 0
		     ? -1
		     : mtc_digest_copy(in, fd, st.st_size, s->opt.threads, progress_add, s, digest);
	e = errno;
	close(in);
	errno = e;
	if (rc < 0)
		return fail(s, "cannot copy", x->path);
	*n = st.st_size;
	if (strcmp(digest, x->digest)) {
		mtc_store_set_error(s, "'%s' has digest %s, its manifest says %s", x->path, digest,
				    x->digest);
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

struct buf_arg {
	const void *buf;
	size_t len;
};

static int fill_from_buf(struct mtc_store *s, int fd, const void *arg, long long *n)
{
	const struct buf_arg *b = arg;
	*n = (long long)b->len;
	return mtc_write_all(fd, b->buf, b->len);
}

static int dir_put_file(struct mtc_store *s, const char *key, const char *path, int flags)
{
	long long n = 0;
	return put_with(s, key, flags, fill_from_file, path, &n);
}

static int dir_put_buf(struct mtc_store *s, const char *key, const void *buf, size_t len, int flags)
{
	struct buf_arg b = { buf, len };
	long long n = 0;
	return put_with(s, key, flags, fill_from_buf, &b, &n);
}

static int put_one(struct mtc_store *s, struct mtc_store_xfer *x, int flags)
{
	if (x->digest)
		return put_with(s, x->key, flags, fill_checked, x, &x->size);
	return put_with(s, x->key, flags, fill_from_file, x->path, &x->size);
}

static int dir_put_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(x[i].path, &st) == 0)
			s->progress_total += st.st_size;
	}
	return mtc_store_run_parallel(s, x, n, flags, put_one);
}

static int open_object(struct mtc_store *s, const char *key, struct stat *st)
{
	char *path = path_of(s, key);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, st) == 0 && S_ISDIR(st->st_mode)) {
		close(fd);
		fd = -1;
		errno = ENOENT;
	}
	if (fd < 0)
		fail(s, errno == ENOENT ? "no such object" : "cannot open", key);
	free(path);
	return fd;
}

/* The bytes partial (open as out) already holds, positioned after them in both files. */
static long long continue_partial(int in, int out, long long object_size)
{
	struct stat st;
	long long have = fstat(out, &st) == 0 ? (long long)st.st_size : 0;

	if (have > object_size && ftruncate(out, 0) == 0)
		have = 0;
	if (have > object_size || lseek(in, have, SEEK_SET) < 0 || lseek(out, have, SEEK_SET) < 0)
		return -1;
	return have;
}

static int get_to_path(struct mtc_store *s, const char *key, const char *path, const char *partial,
		       long long *size)
{
	struct stat st;
	struct mtc_tmp t = { NULL, -1 };
	long long have = 0;
	int in, e;

	if (key[strlen(key) - 1] == '/')
		return mtc_mkdir_p(path, 0755) < 0 ? fail(s, "cannot create", path) : 0;
	in = open_object(s, key, &st);
	if (in < 0)
		return -1;
	if (partial) {
		t.path = xstrdup(partial);
		t.fd = open(partial, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	} else if (mtc_tmp_beside(path, &t) < 0) {
		t.fd = -1;
	}
	if (t.fd < 0) {
		fail(s, "cannot create a temporary for", path);
		goto fail;
	}
	if (partial && (have = continue_partial(in, t.fd, st.st_size)) < 0) {
		fail(s, "cannot continue", t.path);
		goto fail;
	}
	if (copy_fd(s, in, t.fd, size) < 0) {
		fail(s, "cannot copy", key);
		goto fail;
	}
	*size += have;
	if (*size != st.st_size) {
		errno = EIO;
		mtc_store_set_error(s, "object '%s' changed while it was read", key);
		goto fail;
	}
	if (fsync(t.fd) < 0) {
		fail(s, "cannot write", t.path);
		goto fail;
	}
	mtc_fault_stall("dir-get", key);
	if (rename(t.path, path) < 0 || mtc_fsync_parent(path) < 0) {
		fail(s, "cannot rename into", path);
		goto fail;
	}
	close(in);
	mtc_tmp_release(&t);
	return 0;
fail:
	e = errno;
	if (t.path && (!partial || e == EIO))
		unlink(t.path);
	mtc_tmp_release(&t);
	close(in);
	errno = e;
	return -1;
}

static int dir_get_file(struct mtc_store *s, const char *key, const char *path)
{
	long long n;
	return get_to_path(s, key, path, NULL, &n);
}

static int get_one(struct mtc_store *s, struct mtc_store_xfer *x, int flags)
{
	return get_to_path(s, x->key, x->path, x->partial, &x->size);
}

static int dir_get_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char *p = path_of(s, x[i].key);
		if (stat(p, &st) == 0)
			s->progress_total += st.st_size;
		free(p);
	}
	return mtc_store_run_parallel(s, x, n, 0, get_one);
}

static int dir_get_buf(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len)
{
	char *path = path_of(s, key);
	struct stat st;
	int rc;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		errno = ENOENT, rc = -1;
	else
		rc = mtc_read_file(path, max, buf, len);
	if (rc < 0)
		fail(s, errno == ENOENT ? "no such object" : "cannot read", key);
	free(path);
	return rc;
}

static int dir_get_range(struct mtc_store *s, const char *key, long long off, void *buf, size_t len)
{
	struct stat st;
	int fd = open_object(s, key, &st);

	if (fd < 0)
		return -1;
	if (mtc_pread_all(fd, buf, len, off) < 0) {
		int short_read = errno == ENODATA, e = short_read ? EIO : errno;
		mtc_store_set_error(s, "cannot read %zu bytes at %lld of '%s': %s", len, off, key,
				    short_read ? "object too short" : strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

static int dir_stat(struct mtc_store *s, const char *key, struct mtc_store_object *out)
{
	char *path = path_of(s, key);
	struct stat st;
	int want_dir = key[strlen(key) - 1] == '/';

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) != !want_dir) {
		if (errno == 0 || S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
			errno = ENOENT;
		fail(s, errno == ENOENT ? "no such object" : "cannot stat", key);
		free(path);
		return -1;
	}
	free(path);
	out->size = want_dir ? 0 : st.st_size;
	return 0;
}

struct listing {
	struct mtc_store *s;
	const char *base, *prefix, *delim;
	size_t plen;
	struct mtc_store_list *l;
};

/* The entry as a key: base + rel, with a '/' after a directory's. */
static char *key_of(const struct listing *g, const struct mtc_walk_entry *e, int dir)
{
	return xasprintf("%s%s%s", g->base, e->rel, dir && *e->rel ? "/" : "");
}

/* A directory's key sub: 0 to list its contents, 1 to skip it (or to list it as a prefix). */
static int enter(const struct listing *g, char *sub)
{
	size_t n = strlen(sub) < g->plen ? strlen(sub) : g->plen;
	char *cut;

	if (strncmp(sub, g->prefix, n))
		return 1; /* not under the prefix */
	if (!g->delim || strlen(sub) <= g->plen || !(cut = strstr(sub + g->plen, g->delim)))
		return 0;
	cut[strlen(g->delim)] = '\0';
	mtc_store_list_add_prefix(g->l, sub);
	return 1;
}

/* A walk's visit (walk.h): entries under the prefix, recursively or one level with delimiter. */
static int list_entry(const struct mtc_walk_entry *e, void *arg)
{
	struct listing *g = arg;
	int dir = !e->error && S_ISDIR(e->st.st_mode), rc = 0;
	char *key;

	if (e->error && e->reading) {
		if (e->error == ENOENT || e->error == ENOTDIR)
			return 0;
		errno = e->error;
		return fail(g->s, e->error == ELOOP ? "too deep" : "cannot list", e->path);
	}
	if (e->post) {
		key = key_of(g, e, 1);
		if (!e->kids && *key && !strncmp(key, g->prefix, g->plen))
			mtc_store_list_add_object(g->l, key, 0, 0); /* an empty directory: "name/" */
		free(key);
		return 0;
	}
	if (mtc_tmp_is_name(e->name) || e->error)
		return 1;
	key = key_of(g, e, dir);
	if (dir) {
		rc = enter(g, key);
	} else if (S_ISREG(e->st.st_mode) && !strncmp(key, g->prefix, g->plen)) {
		const char *cut = g->delim ? strstr(key + g->plen, g->delim) : NULL;
		if (cut) {
			char *p = xasprintf("%.*s", (int)(cut - key + (long)strlen(g->delim)), key);
			mtc_store_list_add_prefix(g->l, p);
			free(p);
		} else {
			mtc_store_list_add_object(g->l, key, e->st.st_size, 0);
		}
	}
	free(key);
	return rc;
}

static int dir_list(struct mtc_store *s, const char *prefix, const char *delim,
		    struct mtc_store_list *out)
{
	const char *slash = strrchr(prefix, '/');
	char *base = slash ? xasprintf("%.*s", (int)(slash - prefix + 1), prefix) : xstrdup("");
	char *dir = *base ? xasprintf("%s/%.*s", root_of(s), (int)strlen(base) - 1, base)
			  : xstrdup(root_of(s));
	struct listing g = { s, base, prefix, delim, strlen(prefix), out };
	struct mtc_walk w = { .root = dir,
			      .flags = MTC_WALK_POST,
			      .max_depth = MAX_DEPTH,
			      .visit = list_entry,
			      .arg = &g };
	int rc = mtc_walk(&w);

	free(dir);
	free(base);
	if (rc == 0)
		mtc_store_list_sort(out);
	return rc;
}

/* Removes now-empty directories from key's parent up to (not including) the root. */
static void prune_parents(struct mtc_store *s, const char *key)
{
	char *path = path_of(s, key);
	size_t rootlen = strlen(root_of(s));

	for (;;) {
		char *slash = strrchr(path, '/');
		if (!slash || (size_t)(slash - path) <= rootlen)
			break;
		*slash = '\0';
		if (rmdir(path) < 0)
			break;
		mtc_fsync_parent(path);
	}
	free(path);
}

static int dir_delete(struct mtc_store *s, const char *key)
{
	char *path = path_of(s, key);
	int rc = key[strlen(key) - 1] == '/' ? rmdir(path) : unlink(path);

	if (rc < 0 && (errno == ENOTEMPTY || errno == EEXIST))
		errno = EBUSY;
	if (rc < 0 || mtc_fsync_parent(path) < 0) {
		fail(s, errno == ENOENT ? "no such object" : "cannot delete", key);
		free(path);
		return -1;
	}
	free(path);
	prune_parents(s, key);
	return 0;
}

static int delete_one(struct mtc_store *s, struct mtc_store_xfer *x, int flags)
{
	char *path = path_of(s, x->key);
	int rc = unlink(path);
	if (rc < 0 && errno == ENOENT)
		rc = 0;
	if (rc < 0)
		fail(s, "cannot delete", x->key);
	free(path);
	return rc;
}

static int dir_delete_prefix(struct mtc_store *s, const char *prefix)
{
	struct mtc_store_list l;
	struct mtc_store_xfer *x;
	size_t n = 0, metas;
	int rc;

	if (dir_list(s, prefix, NULL, (memset(&l, 0, sizeof l), &l)) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	x = xcalloc(l.n_objects + 1, sizeof *x);
	for (size_t i = 0; i < l.n_objects; i++)
		if (mtc_store_ends_with(l.objects[i].name, ".meta"))
			x[n++].key = l.objects[i].name;
	metas = n;
	rc = mtc_store_run_parallel(s, x, metas, 0, delete_one);
	for (size_t i = 0; rc == 0 && i < l.n_objects; i++)
		if (!mtc_store_ends_with(l.objects[i].name, ".meta") &&
		    !mtc_store_ends_with(l.objects[i].name, "/"))
			x[n++].key = l.objects[i].name;
	if (rc == 0)
		rc = mtc_store_run_parallel(s, x + metas, n - metas, 0, delete_one);
	if (rc == 0) {
		char *path = path_of(s, prefix);
		if (mtc_store_ends_with(prefix, "/") && mtc_remove_tree(path) < 0)
			rc = fail(s, "cannot delete", prefix);
		free(path);
		if (rc == 0)
			prune_parents(s, prefix);
	}
	free(x);
	mtc_store_list_free(&l);
	return rc;
}

static long dir_leftovers(struct mtc_store *s, const char *prefix, int remove, mtc_store_leftover_fn *fn,
			  void *arg)
{
	char *path = path_of(s, prefix);
	long n;

	path[strlen(path) - 1] = path[strlen(path) - 1] == '/' ? '\0' : path[strlen(path) - 1];
	n = mtc_tmp_sweep(path, MAX_DEPTH, remove, fn, arg);

	if (n < 0)
		fail(s, "cannot look for leftovers in", prefix);
	free(path);
	return n;
}

static void dir_close(struct mtc_store *s)
{
	struct dir_store *d = s->impl;
	if (d)
		free(d->root);
	free(d);
}

static const struct mtc_store_ops dir_ops = {
	.put_file = dir_put_file,
	.put_buf = dir_put_buf,
	.put_many = dir_put_many,
	.get_file = dir_get_file,
	.get_buf = dir_get_buf,
	.get_range = dir_get_range,
	.get_many = dir_get_many,
	.list = dir_list,
	.stat = dir_stat,
	.del = dir_delete,
	.delete_prefix = dir_delete_prefix,
	.leftovers = dir_leftovers,
	.close = dir_close,
};

int mtc_store_dir_open(struct mtc_store *s, const char *root, char *err, size_t errlen)
{
	struct dir_store *d;
	size_t n = strlen(root);

	if (!n) {
		snprintf(err, errlen, "empty directory location");
		errno = EINVAL;
		return -1;
	}
	d = xcalloc(1, sizeof *d);
	d->root = xstrdup(root);
	while (n > 1 && d->root[n - 1] == '/')
		d->root[--n] = '\0';
	s->impl = d;
	s->ops = &dir_ops;
	return 0;
}
