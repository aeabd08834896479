#include "peer_wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "blake3/blake3.h"
#include "fsutil.h"
#include "log.h"
#include "walk.h"
#include "xalloc.h"

#define BLOCK (1 << 20)

static const char zero_block[512];
#define TRAILING_MAX (1 << 20)

int mtc_wire_check_path(const char *path, int max_depth, char *why, size_t whylen)
{
	const char *p = path, *comp = path;
	int depth = 1;

	if (!*path)
		return mtc_fail(why, whylen, "empty path");
	if (*path == '/')
		return mtc_fail(why, whylen, "'%.200s': absolute path", path);
	if (strlen(path) >= MTC_WIRE_PATH_MAX)
		return mtc_fail(why, whylen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
	for (;; p++) {
		if (*p == '/' || !*p) {
			size_t len = (size_t)(p - comp);
			if (len == 0 || (len == 1 && comp[0] == '.') ||
			    (len == 2 && comp[0] == '.' && comp[1] == '.'))
				return mtc_fail(why, whylen, "'%.200s': path component '%.*s' not allowed",
					    path, (int)len, comp);
			if (len > 255)
				return mtc_fail(why, whylen, "'%.200s': path component too long", path);
			if (!*p)
				break;
			if (++depth > max_depth)
				return mtc_fail(why, whylen, "'%.200s': deeper than %d", path, max_depth);
			comp = p + 1;
		} else if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			return mtc_fail(why, whylen, "'%.200s': control character in path", path);
		}
	}
	return 0;
}

/* Opens (creating as needed) the directory holding path's last component below rootfd. */
static int open_parent(int rootfd, char *path, char **leaf)
{
	int fd = dup(rootfd);
	char *comp = path, *slash;

	while (fd >= 0 && (slash = strchr(comp, '/'))) {
		int next;
		*slash = '\0';
		if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
			*slash = '/';
			close(fd);
			return -1;
		}
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		*slash = '/';
		close(fd);
		fd = next;
		comp = slash + 1;
	}
	*leaf = comp;
	return fd;
}

/* The entry's data from the archive into fd (closed here), hashed into digest. */
static int extract_file(struct archive *a, int fd, const char *path, long long size,
			char digest[66], char *why, size_t whylen)
{
	struct mtc_blake3 h;
	uint8_t out[MTC_BLAKE3_OUT_LEN];
	long long done = 0;
	const void *buf;
	size_t len;
	la_int64_t off;
	int rc;

	mtc_blake3_init(&h);
	while ((rc = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off != done || done + (long long)len > size) {
			close(fd);
			return mtc_fail(why, whylen, "'%.200s': data does not match its size", path);
		}
		if (mtc_write_all(fd, buf, len) < 0) {
			int e = errno;
			close(fd);
			return mtc_fail(why, whylen, "'%.200s': %s", path, strerror(e));
		}
		mtc_blake3_update(&h, buf, len);
		done += (long long)len;
	}
	close(fd);
	if (rc != ARCHIVE_EOF)
		return mtc_fail(why, whylen, "'%.200s': %s", path, archive_error_string(a));
	if (done != size)
		return mtc_fail(why, whylen, "'%.200s': %lld of %lld bytes", path, done, size);
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, digest);
	return 0;
}

static int extract_dir(int rootfd, char *path, char *why, size_t whylen)
{
	char *leaf;
	int dfd = open_parent(rootfd, path, &leaf);
	struct stat st;

	if (dfd < 0)
		return mtc_fail(why, whylen, "'%.200s': cannot create parent: %s", path, strerror(errno));
	if (mkdirat(dfd, leaf, 0755) < 0 &&
	    (errno != EEXIST || fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	     !S_ISDIR(st.st_mode))) {
		int e = errno;
		close(dfd);
		return mtc_fail(why, whylen, "'%.200s': %s", path, strerror(e));
	}
	close(dfd);
	return 0;
}

/* 0: extract into path; 1: the root entry, skip; -1: rejected. */
static int check_entry(struct archive_entry *e, const struct mtc_wire_limits *lim, char *path,
		       char *why, size_t whylen)
{
	const char *name = archive_entry_pathname(e);
	mode_t type = archive_entry_filetype(e);
	size_t len;

	if (!name)
		return mtc_fail(why, whylen, "entry without a path");
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (type == AE_IFDIR && (!strcmp(name, ".") || !*name)) {
		*path = '\0';
		return 1;
	}
	len = strlen(name);
	if (len >= MTC_WIRE_PATH_MAX)
		return mtc_fail(why, whylen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
	memcpy(path, name, len + 1);
	if (type == AE_IFDIR && len > 1 && path[len - 1] == '/')
		path[len - 1] = '\0';
	if (mtc_wire_check_path(path, lim->max_depth, why, whylen) < 0)
		return -1;
	if (archive_entry_hardlink(e))
		return mtc_fail(why, whylen, "'%.200s': hard links are not accepted", path);
	if (type == AE_IFLNK || archive_entry_symlink(e))
		return mtc_fail(why, whylen, "'%.200s': symbolic links are not accepted", path);
	if (type != AE_IFREG && type != AE_IFDIR)
		return mtc_fail(why, whylen, "'%.200s': only regular files and directories are accepted",
			    path);
	if (type == AE_IFREG && (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0))
		return mtc_fail(why, whylen, "'%.200s': no size", path);
	if (archive_entry_sparse_count(e) > 0)
		return mtc_fail(why, whylen, "'%.200s': sparse files are not accepted", path);
	return 0;
}

struct source {
	mtc_wire_source *next;
	void *arg;
};

static la_ssize_t source_read(struct archive *a, void *arg, const void **buf)
{
	struct source *src = arg;
	ssize_t n = src->next(src->arg, buf);
	if (n < 0)
		archive_set_error(a, errno, "reading the stream: %s", strerror(errno));
	return n;
}

static int drain_trailer(struct source *src, char *why, size_t whylen)
{
	const void *buf;
	long long total = 0;
	ssize_t n;

	while ((n = src->next(src->arg, &buf)) != 0) {
		if (n < 0)
			return mtc_fail(why, whylen, "reading the stream: %s", strerror(errno));
		for (ssize_t i = 0; i < n; i++)
			if (((const char *)buf)[i])
				return mtc_fail(why, whylen, "data after the end of the archive");
		if ((total += n) > TRAILING_MAX)
			return mtc_fail(why, whylen, "too much padding after the end of the archive");
	}
	return 0;
}

struct mtc_wire_entry *mtc_wire_list_add(struct mtc_wire_list *l, const char *path, int is_dir,
					 long long size)
{
	struct mtc_wire_entry *e;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->e = xrealloc(l->e, l->cap * sizeof *l->e);
	}
	e = &l->e[l->n++];
	e->path = xstrdup(path);
	e->is_dir = is_dir;
	e->size = size;
	e->digest[0] = '\0';
	return e;
}

void mtc_wire_list_free(struct mtc_wire_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
	memset(l, 0, sizeof *l);
}

static const struct mtc_manifest_entry *expected_entry(const struct mtc_manifest *m,
						       const char *path)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->entries[mid].path, path);
		if (!c)
			return &m->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* 0 when the entry is in the expected manifest with its type and size; else -1 and why. */
static int check_expected(const struct mtc_manifest *m, const char *path, int is_dir,
			  long long size, const struct mtc_manifest_entry **x, char *why,
			  size_t whylen)
{
	if (!m)
		return 0;
	if (!(*x = expected_entry(m, path)))
		return mtc_fail(why, whylen, "'%.200s' is not in the manifest", path);
	if (((*x)->type == MTC_ENTRY_DIR) != is_dir)
		return mtc_fail(why, whylen, "'%.200s' is a %s, the manifest says a %s", path,
			    is_dir ? "dir" : "file", is_dir ? "file" : "dir");
	if (!is_dir && (*x)->size != size)
		return mtc_fail(why, whylen, "'%.200s' has %lld bytes, the manifest says %lld", path, size,
			    (*x)->size);
	return 0;
}

/* Both extractors' state while they admit a stream's entries. */
struct admission {
	int rootfd;
	const struct mtc_wire_limits *lim;
	const struct mtc_manifest *expected;
	struct mtc_wire_list *got;
	long long files, bytes;
};

/*
 * An entry whose clean path, type and size are known, against the limits
 * and the expected manifest: a directory is created and listed (1); a
 * file is listed and created, *fd open for writing, *w its list entry and
 * *x its manifest entry (NULL without one) (0); -1 with why.
 */
static int admit(struct admission *ad, char *path, int is_dir, long long size, int *fd,
		 struct mtc_wire_entry **w, const struct mtc_manifest_entry **x, char *why,
		 size_t whylen)
{
	char *leaf, *copy;
	int dfd;

	*x = NULL;
	if (++ad->files > ad->lim->max_files)
		return mtc_fail(why, whylen, "more than %lld entries", ad->lim->max_files);
	if (check_expected(ad->expected, path, is_dir, size, x, why, whylen) < 0)
		return -1;
	if (is_dir) {
		if (extract_dir(ad->rootfd, path, why, whylen) < 0)
			return -1;
		mtc_wire_list_add(ad->got, path, 1, 0);
		return 1;
	}
	if ((ad->bytes += size) > ad->lim->max_bytes)
		return mtc_fail(why, whylen, "more than %lld bytes", ad->lim->max_bytes);
	*w = mtc_wire_list_add(ad->got, path, 0, size);
	copy = xstrdup(path);
	dfd = open_parent(ad->rootfd, copy, &leaf);
	if (dfd < 0) {
		free(copy);
		return mtc_fail(why, whylen, "'%.200s': cannot create parent: %s", path,
				strerror(errno));
	}
	*fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(dfd);
	free(copy);
	if (*fd < 0)
		return mtc_fail(why, whylen, "'%.200s': %s", path,
				errno == EEXIST ? "duplicate entry" : strerror(errno));
	return 0;
}

/* A file that arrived against its manifest entry: 0, or -1 with why. */
static int digest_matches(const struct mtc_manifest_entry *x, const struct mtc_wire_entry *w,
			  char *why, size_t whylen)
{
	if (!x || !strcmp(x->digest, w->digest))
		return 0;
	return mtc_fail(why, whylen, "'%.200s' has digest %s, the manifest says %s", w->path,
			w->digest, x->digest);
}

int mtc_wire_extract_from(mtc_wire_source *next, void *arg, const char *root,
			  const struct mtc_wire_limits *lim, const struct mtc_manifest *expected,
			  struct mtc_wire_list *got, char *why, size_t whylen)
{
	struct source src = { next, arg };
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	char *path = xmalloc(MTC_WIRE_PATH_MAX);
	struct admission ad = { .lim = lim, .expected = expected, .got = got };
	int rootfd, rc = -1, r;

	rootfd = ad.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		mtc_fail(why, whylen, "'%s': %s", root, strerror(errno));
		goto out;
	}
	archive_read_support_format_tar(a);
	if (archive_read_open(a, &src, NULL, source_read, NULL) != ARCHIVE_OK) {
		mtc_fail(why, whylen, "not a tar stream: %s", archive_error_string(a));
		goto out;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const struct mtc_manifest_entry *x;
		struct mtc_wire_entry *w;
		int c = check_entry(e, lim, path, why, whylen), is_dir, fd;
		long long size;
		if (c < 0)
			goto out;
		if (c > 0)
			continue; /* the root itself, as "tar -C dir ." writes it */
		is_dir = archive_entry_filetype(e) == AE_IFDIR;
		size = is_dir ? 0 : archive_entry_size(e);
		if ((c = admit(&ad, path, is_dir, size, &fd, &w, &x, why, whylen)) < 0)
			goto out;
		if (c > 0)
			continue;
		if (extract_file(a, fd, path, size, w->digest, why, whylen) < 0)
			goto out;
		if (digest_matches(x, w, why, whylen) < 0) {
			rc = -2;
			goto out;
		}
	}
	if (r != ARCHIVE_EOF) {
		mtc_fail(why, whylen, "bad tar stream: %s", archive_error_string(a));
		goto out;
	}
	rc = drain_trailer(&src, why, whylen);
out:
	if (rootfd >= 0)
		close(rootfd);
	archive_read_free(a);
	free(path);
	return rc;
}

struct fd_source {
	int fd;
	char *buf;
};

static ssize_t fd_next(void *arg, const void **buf)
{
	struct fd_source *f = arg;
	ssize_t n;
	do
		n = read(f->fd, f->buf, BLOCK);
	while (n < 0 && errno == EINTR);
	*buf = f->buf;
	return n;
}

int mtc_wire_extract(int fd, const char *root, const struct mtc_wire_limits *lim,
		     const struct mtc_manifest *expected, struct mtc_wire_list *got, char *why,
		     size_t whylen)
{
	struct fd_source f = { fd, xmalloc(BLOCK) };
	int rc = mtc_wire_extract_from(fd_next, &f, root, lim, expected, got, why, whylen);
	free(f.buf);
	return rc;
}

/* Path order with '/' below every other byte: a directory's entries follow it. */
static int cmp_path(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned ca = *a == '/' ? 1 : (unsigned char)*a, cb = *b == '/' ? 1 : (unsigned char)*b;
		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (!ca)
			return 0;
	}
}

static int by_entry_path(const void *x, const void *y)
{
	return cmp_path(((const struct mtc_wire_entry *)x)->path,
			((const struct mtc_wire_entry *)y)->path);
}

/*
 * An open directory: its children's digests, files' borrowed from the list
 * (which outlives the composition), subdirectories' owned (a copy costs
 * what the file list costs again in a directory of 100k files).
 */
struct level {
	const char *path;
	size_t len;
	long long size;
	char **kids, **owned;
	size_t n, cap, n_owned, cap_owned;
};

static void add_kid(struct level *l, char *digest, int own)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->kids = xrealloc(l->kids, l->cap * sizeof *l->kids);
	}
	if (own) {
		digest = xstrdup(digest);
		if (l->n_owned == l->cap_owned) {
			l->cap_owned = l->cap_owned ? l->cap_owned * 2 : 16;
			l->owned = xrealloc(l->owned, l->cap_owned * sizeof *l->owned);
		}
		l->owned[l->n_owned++] = digest;
	}
	l->kids[l->n++] = digest;
}

static void close_level(struct level *l, char out[66], struct mtc_manifest *m)
{
	mtc_digest_dir(l->kids, l->n, out);
	for (size_t i = 0; i < l->n_owned; i++)
		free(l->owned[i]);
	if (m)
		mtc_manifest_append(m, l->path ? l->path : "", l->len, MTC_ENTRY_DIR, l->size, out);
	free(l->kids);
	free(l->owned);
	memset(l, 0, sizeof *l);
}

/* Closes the innermost open directory into its parent. */
static void pop(struct level *stack, size_t *depth, struct mtc_manifest *m)
{
	char d[66];
	long long size = stack[*depth - 1].size;
	close_level(&stack[--*depth], d, m);
	add_kid(&stack[*depth - 1], d, 1);
	stack[*depth - 1].size += size;
}

static int inside(const struct level *l, const char *path)
{
	return l->len == 0 || (!strncmp(path, l->path, l->len) && path[l->len] == '/');
}

static int by_item_path(const void *x, const void *y)
{
	return cmp_path(((const struct mtc_wire_item *)x)->path,
			((const struct mtc_wire_item *)y)->path);
}

static void compose(struct mtc_wire_item *e, size_t n, struct mtc_manifest *m, char digest[66],
		    int files)
{
	struct level *stack = xcalloc(16, sizeof *stack);
	size_t depth = 1, cap = 16;

	if (n)
		qsort(e, n, sizeof *e, by_item_path);
	for (size_t i = 0; i < n; i++) {
		const char *p = e[i].path;
		size_t plen = strlen(p);
		if (i && !strcmp(p, e[i - 1].path))
			continue; /* listed twice */
		while (depth > 1 && !inside(&stack[depth - 1], p))
			pop(stack, &depth, m);
		for (size_t k = stack[depth - 1].len + (depth > 1); k <= plen; k++) {
			if (p[k] != '/' && !(k == plen && e[i].is_dir))
				continue;
			if (depth == cap) {
				stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
				memset(stack + depth, 0, (cap - depth) * sizeof *stack);
			}
			stack[depth].path = p;
			stack[depth++].len = k;
		}
		if (!e[i].is_dir) {
			add_kid(&stack[depth - 1], (char *)e[i].digest, 0);
			stack[depth - 1].size += e[i].size;
			if (files && m)
				mtc_manifest_append(m, p, plen, MTC_ENTRY_FILE, e[i].size, e[i].digest);
		}
	}
	while (depth > 1)
		pop(stack, &depth, m);
	close_level(&stack[0], digest, m);
	free(stack);
	if (m)
		mtc_manifest_sort(m);
}

void mtc_wire_manifest(struct mtc_wire_list *l, struct mtc_manifest *m, char digest[66])
{
	struct mtc_wire_item *items = xcalloc(l->n + 1, sizeof *items);

	if (l->n)
		qsort(l->e, l->n, sizeof *l->e, by_entry_path);
	for (size_t i = 0; i < l->n; i++)
		items[i] = (struct mtc_wire_item){ l->e[i].path, l->e[i].digest, l->e[i].size,
						   l->e[i].is_dir };
	compose(items, l->n, m, digest, 1);
	free(items);
}

void mtc_wire_compose_dirs(struct mtc_wire_item *items, size_t n, struct mtc_manifest *m,
			   char digest[66])
{
	compose(items, n, m, digest, 0);
}

/*
 * The receiving side over a socket: file contents are read into a large
 * buffer, hashed there while it is hot and written out from it. (Measured
 * against splicing socket -> pipe -> file and hashing the pages back from
 * the page cache, this costs the daemon about a third less CPU.) Large
 * buffers come from a pool shared by all uploads, so the daemon's memory
 * stays bounded however many connections it serves; an upload that finds
 * none free uses a small one.
 */
#define RECV_BIG (4 << 20)
#define RECV_SMALL (128 << 10)
#define RECV_POOL 6
#define SOCK_POLL_MS 250
#define PAX_MAX (64 << 10)

static pthread_mutex_t recv_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static char *recv_pool[RECV_POOL];
static int recv_pool_free, recv_pool_made;

static char *recv_buffer(size_t *len)
{
	char *b = NULL;
	int make = 0;

	pthread_mutex_lock(&recv_pool_mu);
	if (recv_pool_free)
		b = recv_pool[--recv_pool_free];
	else if (recv_pool_made < RECV_POOL)
		make = ++recv_pool_made;
	pthread_mutex_unlock(&recv_pool_mu);
	*len = b || make ? RECV_BIG : RECV_SMALL;
	return b ? b : xmalloc(*len);
}

static void recv_buffer_done(char *b, size_t len)
{
	if (len != RECV_BIG) {
		free(b);
		return;
	}
	pthread_mutex_lock(&recv_pool_mu);
	recv_pool[recv_pool_free++] = b;
	pthread_mutex_unlock(&recv_pool_mu);
}

struct sock_in {
	int fd;
	const char *pre; /* bytes of the stream already read */
	size_t pre_len;
	int timeout_s;
	const int *stop;
	char *buf;
	size_t buf_len;
	long long consumed;
};

/* 0 when fd has data; -1 with why after timeout_s without any, or when stopping. */
static int sock_wait(struct sock_in *in, char *why, size_t whylen)
{
	int waited = 0;
	for (;;) {
		struct pollfd p = { .fd = in->fd, .events = POLLIN };
		int n = poll(&p, 1, SOCK_POLL_MS);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return mtc_fail(why, whylen, "waiting for the stream: %s", strerror(errno));
		if (in->stop && __atomic_load_n(in->stop, __ATOMIC_RELAXED))
			return mtc_fail(why, whylen, "shutting down");
		if ((waited += SOCK_POLL_MS) >= in->timeout_s * 1000)
			return mtc_fail(why, whylen, "no data for %d s", in->timeout_s);
	}
}

static int sock_read(struct sock_in *in, char *dst, size_t len, char *why, size_t whylen)
{
	while (len) {
		ssize_t n;
		if (in->pre_len) {
			n = (ssize_t)(len < in->pre_len ? len : in->pre_len);
			memcpy(dst, in->pre, (size_t)n);
			in->pre += n;
			in->pre_len -= (size_t)n;
		} else {
			n = recv(in->fd, dst, len, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				if (sock_wait(in, why, whylen) < 0)
					return -1;
				continue;
			}
			if (n < 0)
				return mtc_fail(why, whylen, "reading the stream: %s", strerror(errno));
			if (n == 0)
				return mtc_fail(why, whylen, "the stream ended early");
		}
		dst += n;
		len -= (size_t)n;
		in->consumed += n;
	}
	return 0;
}

static int sock_skip(struct sock_in *in, size_t len, char *why, size_t whylen)
{
	char pad[512];
	while (len) {
		size_t k = len < sizeof pad ? len : sizeof pad;
		if (sock_read(in, pad, k, why, whylen) < 0)
			return -1;
		len -= k;
	}
	return 0;
}

/* size bytes of the stream into fd, hashed into digest. */
static int sock_file(struct sock_in *in, int fd, const char *path, long long size,
		     char digest[66], char *why, size_t whylen)
{
	struct mtc_blake3 h;
	uint8_t out[MTC_BLAKE3_OUT_LEN];

	mtc_blake3_init(&h);
	for (long long off = 0; off < size;) {
		size_t k = size - off < (long long)in->buf_len ? (size_t)(size - off) : in->buf_len;
		if (sock_read(in, in->buf, k, why, whylen) < 0)
			return -1;
		mtc_blake3_update(&h, in->buf, k);
		if (mtc_write_all(fd, in->buf, k) < 0)
			return mtc_fail(why, whylen, "'%.200s': %s", path, strerror(errno));
		off += (long long)k;
	}
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, digest);
	return 0;
}

/* A strict octal field (NUL or space terminated); -1 when it is not one. */
static long long octal(const char *f, size_t len)
{
	long long v = 0;
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	if (i == len || f[i] < '0' || f[i] > '7')
		return -1;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (LLONG_MAX >> 3))
			return -1;
		v = v * 8 + (f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	return v;
}

static int header_ok(const unsigned char *b)
{
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : b[i];
	return octal((const char *)b + 148, 8) == (long long)sum && !memcmp(b + 257, "ustar", 6) &&
	       !memcmp(b + 263, "00", 2);
}

/* The pax records of an 'x' header: path and size taken, sparse files refused, others ignored. */
static int pax_parse(char *p, size_t len, char *path, long long *size, char *why, size_t whylen)
{
	size_t off = 0;
	while (off < len) {
		char *end, *key, *eq;
		unsigned long rl = strtoul(p + off, &end, 10);
		if (end == p + off || *end != ' ' || rl < 5 || rl > len - off || p[off + rl - 1] != '\n')
			return mtc_fail(why, whylen, "bad pax header");
		key = end + 1;
		p[off + rl - 1] = '\0';
		if (!(eq = strchr(key, '=')))
			return mtc_fail(why, whylen, "bad pax header");
		*eq = '\0';
		if (!strcmp(key, "path")) {
			if (strlen(eq + 1) >= MTC_WIRE_PATH_MAX)
				return mtc_fail(why, whylen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
			strcpy(path, eq + 1);
		} else if (!strcmp(key, "size")) {
			char *e;
			errno = 0;
			*size = strtoll(eq + 1, &e, 10);
			if (errno || *e || e == eq + 1 || *size < 0)
				return mtc_fail(why, whylen, "bad pax size");
		} else if (!strncmp(key, "GNU.sparse", 10)) {
			return mtc_fail(why, whylen, "sparse files are not accepted");
		}
		off += rl;
	}
	return 0;
}

int mtc_wire_receive_file(int sock, const void *pre, size_t pre_len, int timeout_s,
			  const int *stop, int fd, long long size, char digest[66],
			  long long *consumed, char *why, size_t whylen)
{
	struct sock_in in = { .fd = sock, .pre = pre, .pre_len = pre_len, .timeout_s = timeout_s,
			      .stop = stop };
	int rc;

	in.buf = recv_buffer(&in.buf_len);
	rc = sock_file(&in, fd, "the body", size, digest, why, whylen);
	recv_buffer_done(in.buf, in.buf_len);
	if (consumed)
		*consumed = in.consumed;
	return rc;
}

int mtc_wire_extract_sock(int sock, const void *pre, size_t pre_len, int timeout_s,
			  const int *stop, const char *root, const struct mtc_wire_limits *lim,
			  const struct mtc_manifest *expected, struct mtc_wire_list *got,
			  long long *consumed, char *why, size_t whylen)
{
	struct sock_in in = { .fd = sock, .pre = pre, .pre_len = pre_len, .timeout_s = timeout_s,
			      .stop = stop };
	unsigned char hdr[512];
	char *path = xmalloc(MTC_WIRE_PATH_MAX), *pax = NULL;
	struct admission ad = { .lim = lim, .expected = expected, .got = got };
	int rootfd = -1, rc = -1, have_pax = 0;
	long long pax_size = -1;

	if ((rootfd = ad.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		mtc_fail(why, whylen, "'%s': %s", root, strerror(errno));
		goto out;
	}
	in.buf = recv_buffer(&in.buf_len);
	for (;;) {
		const struct mtc_manifest_entry *x;
		struct mtc_wire_entry *w;
		long long size;
		char type, *name;
		int is_dir, fd, c;

		if (sock_read(&in, (char *)hdr, 512, why, whylen) < 0)
			goto out;
		if (!memcmp(hdr, zero_block, 512)) {
			if (have_pax) {
				mtc_fail(why, whylen, "pax header without an entry");
				goto out;
			}
			if (sock_read(&in, (char *)hdr, 512, why, whylen) < 0)
				goto out;
			if (memcmp(hdr, zero_block, 512)) {
				mtc_fail(why, whylen, "data after the end of the archive");
				goto out;
			}
			rc = 0;
			break;
		}
		if (!header_ok(hdr)) {
			mtc_fail(why, whylen, "bad tar header (not ustar, or its checksum does not match)");
			goto out;
		}
		type = (char)hdr[156];
		size = octal((const char *)hdr + 124, 12);
		if (type == 'x') {
			if (have_pax || size < 0 || size > PAX_MAX) {
				mtc_fail(why, whylen, "bad pax header");
				goto out;
			}
			pax = xrealloc(pax, (size_t)size + 1);
			if (sock_read(&in, pax, (size_t)size, why, whylen) < 0 ||
			    sock_skip(&in, (size_t)((512 - size % 512) % 512), why, whylen) < 0)
				goto out;
			path[0] = '\0';
			pax_size = -1;
			if (pax_parse(pax, (size_t)size, path, &pax_size, why, whylen) < 0)
				goto out;
			have_pax = 1;
			continue;
		}
		if (type == '1') {
			mtc_fail(why, whylen, "hard links are not accepted");
			goto out;
		}
		if (type == '2') {
			mtc_fail(why, whylen, "symbolic links are not accepted");
			goto out;
		}
		if (type != '0' && type != '\0' && type != '5') {
			mtc_fail(why, whylen, "only regular files and directories are accepted");
			goto out;
		}
		if (!have_pax || !path[0]) {
			char *p = path;
			if (hdr[345]) {
				p += snprintf(p, 157, "%.155s", (const char *)hdr + 345);
				*p++ = '/';
			}
			snprintf(p, 101, "%.100s", (const char *)hdr);
		}
		if (have_pax && pax_size >= 0)
			size = pax_size;
		have_pax = 0;
		if (size < 0) {
			mtc_fail(why, whylen, "'%.200s': no size", path);
			goto out;
		}
		is_dir = type == '5';
		name = path;
		while (name[0] == '.' && name[1] == '/')
			name += 2;
		if (name != path)
			memmove(path, name, strlen(name) + 1);
		if (is_dir && (!strcmp(path, ".") || !*path))
			continue; /* the root itself */
		if (is_dir && strlen(path) > 1 && path[strlen(path) - 1] == '/')
			path[strlen(path) - 1] = '\0';
		if (mtc_wire_check_path(path, lim->max_depth, why, whylen) < 0)
			goto out;
		if (is_dir)
			size = 0;
		if ((c = admit(&ad, path, is_dir, size, &fd, &w, &x, why, whylen)) < 0)
			goto out;
		if (c > 0)
			continue;
		if (sock_file(&in, fd, path, size, w->digest, why, whylen) < 0) {
			close(fd);
			goto out;
		}
		close(fd);
		if (digest_matches(x, w, why, whylen) < 0) {
			rc = -2;
			goto out;
		}
		if (sock_skip(&in, (size_t)((512 - size % 512) % 512), why, whylen) < 0)
			goto out;
	}
out:
	if (consumed)
		*consumed = in.consumed;
	if (rootfd >= 0)
		close(rootfd);
	if (in.buf)
		recv_buffer_done(in.buf, in.buf_len);
	free(pax);
	free(path);
	return rc;
}

/*
 * The sending side: a pull-based ustar/pax writer, so the HTTP library
 * reads file contents straight into its own buffer (one copy, no thread).
 */
struct wire_file {
	char *abs, *rel;
	int is_dir;
	long long size;
};

struct mtc_wire_reader {
	int rootfd; /* the tree's root, every file opened beneath it; -1 for a file object */
	struct wire_file *files;
	size_t n, cap, cur;
	char hdr[3 * 512 + MTC_WIRE_PATH_MAX + 64];
	size_t hdr_len, hdr_off;
	int fd;
	long long left, pad;
	int phase; /* 0 header, 1 data, 2 padding, 3 trailer, 4 done */
	int raw;   /* one file's bytes, no tar framing */
};

static long long stream_total(const struct mtc_wire_reader *r);

static const char *leave_reason(int e)
{
	return e == EXDEV || e == ELOOP ? "a symlink that leads out of the tree: refused"
					: strerror(e);
}

/* The type and size of rel, resolved beneath the root (fsutil.h). */
static int stat_beneath(struct mtc_wire_reader *r, const char *rel, struct stat *st)
{
	int fd = mtc_open_beneath(r->rootfd, rel, O_PATH), rc, e;
	if (fd < 0)
		return -1;
	rc = fstat(fd, st);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

struct scan {
	struct mtc_wire_reader *r;
	char *why;
	size_t whylen;
};

/* A walk's visit (walk.h): every file and directory below the root, in path order. */
static int scan_entry(const struct mtc_walk_entry *e, void *arg)
{
	struct scan *sc = arg;
	struct mtc_wire_reader *r = sc->r;
	int is_dir;

	if (e->error == ELOOP && e->reading)
		return mtc_fail(sc->why, sc->whylen, "'%s': too deep", e->path);
	if (e->error)
		return mtc_fail(sc->why, sc->whylen, "'%s': %s", e->path, leave_reason(e->error));
	if (!S_ISREG(e->st.st_mode) && !S_ISDIR(e->st.st_mode))
		return mtc_fail(sc->why, sc->whylen, "'%s': neither a file nor a directory", e->path);
	if (strlen(e->rel) >= MTC_WIRE_PATH_MAX)
		return mtc_fail(sc->why, sc->whylen, "'%s': path too long", e->path);
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->files = xrealloc(r->files, r->cap * sizeof *r->files);
	}
	is_dir = S_ISDIR(e->st.st_mode);
	r->files[r->n++] = (struct wire_file){ xstrdup(e->path), xstrdup(e->rel), is_dir,
						is_dir ? 0 : e->st.st_size };
	return 0;
}

static int scan(struct mtc_wire_reader *r, const char *root, char *why, size_t whylen)
{
	struct scan sc = { r, why, whylen };
	struct mtc_walk w = { .root = root,
			      .flags = MTC_WALK_SORTED | MTC_WALK_BENEATH,
			      .max_depth = 256,
			      .rootfd = r->rootfd,
			      .visit = scan_entry,
			      .arg = &sc };
	return mtc_walk(&w);
}

/* A reader of the tree at root, which must not itself be a symlink; NULL with why. */
static struct mtc_wire_reader *reader_at(const char *root, char *why, size_t whylen)
{
	struct mtc_wire_reader *r = xcalloc(1, sizeof *r);
	r->fd = -1;
	r->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->rootfd < 0) {
		mtc_fail(why, whylen, "'%s': %s", root,
			 errno == ELOOP ? "a symlink: refused" : strerror(errno));
		free(r);
		return NULL;
	}
	return r;
}

/* Opens the reader's current file f: beneath the root, or the file object itself. */
static int open_file(struct mtc_wire_reader *r, const struct wire_file *f)
{
	if (r->rootfd < 0)
		return open(f->abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return mtc_open_beneath(r->rootfd, f->rel, O_RDONLY);
}

struct mtc_wire_reader *mtc_wire_reader_open(const char *root, long long *total, char *why,
					     size_t whylen)
{
	struct mtc_wire_reader *r = reader_at(root, why, whylen);
	if (!r)
		return NULL;
	if (scan(r, root, why, whylen) < 0) {
		mtc_wire_reader_close(r);
		return NULL;
	}
	if (total)
		*total = stream_total(r);
	return r;
}

struct mtc_wire_reader *mtc_wire_reader_open_list(const char *root, char *const *paths, size_t n,
						  long long *total, char *why, size_t whylen)
{
	struct mtc_wire_reader *r = reader_at(root, why, whylen);
	if (!r)
		return NULL;
	r->files = xcalloc(n ? n : 1, sizeof *r->files);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char *abs = xasprintf("%s/%s", root, paths[i]);
		errno = 0;
		if (stat_beneath(r, paths[i], &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) ||
		    strlen(paths[i]) >= MTC_WIRE_PATH_MAX) {
			mtc_fail(why, whylen, "'%s': %s", abs,
			     errno ? leave_reason(errno) : "neither a file nor a directory");
			free(abs);
			mtc_wire_reader_close(r);
			return NULL;
		}
		r->files[r->n++] = (struct wire_file){ abs, xstrdup(paths[i]), S_ISDIR(st.st_mode),
							S_ISDIR(st.st_mode) ? 0 : st.st_size };
	}
	if (total)
		*total = stream_total(r);
	return r;
}

struct mtc_wire_reader *mtc_wire_reader_open_file(const char *path, long long *total, char *why,
						  size_t whylen)
{
	struct mtc_wire_reader *r;
	struct stat st;

	errno = 0;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		mtc_fail(why, whylen, "'%s': %s", path,
			 errno ? strerror(errno) : S_ISLNK(st.st_mode) ? "a symlink: refused" : "not a file");
		return NULL;
	}
	r = xcalloc(1, sizeof *r);
	r->fd = -1;
	r->rootfd = -1;
	r->files = xcalloc(1, sizeof *r->files);
	r->files[0] = (struct wire_file){ xstrdup(path), xstrdup(""), 0, st.st_size };
	r->n = 1;
	r->raw = 1;
	r->phase = 1;
	r->left = st.st_size;
	if (total)
		*total = st.st_size;
	return r;
}

void mtc_wire_reader_close(struct mtc_wire_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->rootfd >= 0)
		close(r->rootfd);
	for (size_t i = 0; i < r->n; i++) {
		free(r->files[i].abs);
		free(r->files[i].rel);
	}
	free(r->files);
	free(r);
}

static void ustar_header(char *h, const char *name, char type, long long size)
{
	unsigned sum = 0;
	memset(h, 0, 512);
	snprintf(h, 100, "%s", name);
	memcpy(h + 100, type == '5' ? "0000755" : "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	snprintf(h + 124, 12, "%011llo", size);
	memcpy(h + 136, "00000000000", 12);
	h[156] = type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
}

static size_t pax_record(char *out, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, len = body + 1;
	while (snprintf(NULL, 0, "%zu", len) + body != len)
		len++;
	return (size_t)sprintf(out, "%zu %s=%s\n", len, key, value);
}

/* Header(s) of files[cur] into hdr: a pax 'x' header first when ustar cannot hold it. */
static void make_header(struct mtc_wire_reader *r)
{
	const struct wire_file *f = &r->files[r->cur];
	char type = f->is_dir ? '5' : '0', rec[MTC_WIRE_PATH_MAX + 64], num[32];
	size_t rl = 0;

	r->hdr_len = r->hdr_off = 0;
	if (strlen(f->rel) >= 100)
		rl += pax_record(rec + rl, "path", f->rel);
	if (f->size > 077777777777LL) {
		snprintf(num, sizeof num, "%lld", f->size);
		rl += pax_record(rec + rl, "size", num);
	}
	if (rl) {
		ustar_header(r->hdr, "././@PaxHeader", 'x', (long long)rl);
		memcpy(r->hdr + 512, rec, rl);
		memset(r->hdr + 512 + rl, 0, (512 - rl % 512) % 512);
		r->hdr_len = 512 + (rl + 511) / 512 * 512;
	}
	ustar_header(r->hdr + r->hdr_len, f->rel, type, f->size > 077777777777LL ? 0 : f->size);
	r->hdr_len += 512;
}

static long long stream_total(const struct mtc_wire_reader *r)
{
	char rec[MTC_WIRE_PATH_MAX + 64], num[32];
	long long total = 1024;
	for (size_t i = 0; i < r->n; i++) {
		const struct wire_file *f = &r->files[i];
		size_t rl = 0;
		total += 512 + (f->size + 511) / 512 * 512;
		if (strlen(f->rel) >= 100)
			rl += pax_record(rec, "path", f->rel);
		if (f->size > 077777777777LL) {
			snprintf(num, sizeof num, "%lld", f->size);
			rl += pax_record(rec, "size", num);
		}
		if (rl)
			total += 512 + (long long)(rl + 511) / 512 * 512;
	}
	return total;
}

ssize_t mtc_wire_reader_read(struct mtc_wire_reader *r, char *buf, size_t len, char *why,
			     size_t whylen)
{
	size_t done = 0;

	while (done < len && r->phase != 4) {
		if (r->phase == 0 && r->cur == r->n) {
			memset(r->hdr, 0, 1024);
			r->hdr_len = 1024;
			r->hdr_off = 0;
			r->phase = 3;
		} else if (r->phase == 0 && r->hdr_len == 0) {
			make_header(r);
		}
		if (r->phase == 0 || r->phase == 3) {
			size_t k = r->hdr_len - r->hdr_off;
			if (k > len - done)
				k = len - done;
			memcpy(buf + done, r->hdr + r->hdr_off, k);
			done += k;
			r->hdr_off += k;
			if (r->hdr_off < r->hdr_len)
				continue;
			r->hdr_len = 0;
			if (r->phase == 3) {
				r->phase = 4;
				continue;
			}
			if (r->files[r->cur].is_dir) {
				r->cur++;
				continue;
			}
			r->fd = open_file(r, &r->files[r->cur]);
			if (r->fd < 0)
				return mtc_fail(why, whylen, "'%s': %s", r->files[r->cur].abs,
						leave_reason(errno));
			r->left = r->files[r->cur].size;
			r->pad = (512 - r->left % 512) % 512;
			r->phase = 1;
		}
		if (r->phase == 1) {
			size_t want = len - done;
			ssize_t n;
			if (r->fd < 0 && (r->fd = open_file(r, &r->files[r->cur])) < 0)
				return mtc_fail(why, whylen, "'%s': %s", r->files[r->cur].abs,
						leave_reason(errno));
			if ((long long)want > r->left)
				want = (size_t)r->left;
			if (want) {
				n = read(r->fd, buf + done, want);
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0)
					return mtc_fail(why, whylen, "'%s': %s", r->files[r->cur].abs,
						    n < 0 ? strerror(errno) : "shrank while being sent");
				done += (size_t)n;
				r->left -= n;
			}
			if (r->left == 0) {
				close(r->fd);
				r->fd = -1;
				r->phase = 2;
			}
		}
		if (r->phase == 2) {
			size_t k = (size_t)r->pad < len - done ? (size_t)r->pad : len - done;
			memset(buf + done, 0, k);
			done += k;
			r->pad -= (long long)k;
			if (r->pad == 0) {
				r->phase = r->raw ? 4 : 0;
				r->cur++;
			}
		}
	}
	return (ssize_t)done;
}

#define SEGMENT_MAX (64LL << 20)

ssize_t mtc_wire_reader_peek(struct mtc_wire_reader *r, const char **mem, int *fd, off_t *off,
			     char *why, size_t whylen)
{
	static const char zeros[512];

	*fd = -1;
	for (;;) {
		if (r->phase == 4)
			return 0;
		if (r->phase == 0 && r->hdr_len == 0) {
			if (r->cur == r->n) {
				memset(r->hdr, 0, 1024);
				r->hdr_len = 1024;
				r->hdr_off = 0;
				r->phase = 3;
			} else {
				make_header(r);
			}
		}
		if (r->phase == 0 || r->phase == 3) {
			*mem = r->hdr + r->hdr_off;
			return (ssize_t)(r->hdr_len - r->hdr_off);
		}
		if (r->phase == 1) {
			const struct wire_file *f = &r->files[r->cur];
			if (r->fd < 0 && (r->fd = open_file(r, f)) < 0)
				return mtc_fail(why, whylen, "'%s': %s", f->abs, leave_reason(errno));
			if (r->left > 0) {
				*fd = r->fd;
				*off = (off_t)(f->size - r->left);
				return (ssize_t)(r->left < SEGMENT_MAX ? r->left : SEGMENT_MAX);
			}
			close(r->fd);
			r->fd = -1;
			r->phase = 2;
		}
		if (r->phase == 2) {
			if (r->pad > 0) {
				*mem = zeros;
				return (ssize_t)r->pad;
			}
			r->phase = r->raw ? 4 : 0;
			r->cur++;
		}
	}
}

void mtc_wire_reader_advance(struct mtc_wire_reader *r, size_t n)
{
	if (r->phase == 0 || r->phase == 3) {
		r->hdr_off += n;
		if (r->hdr_off < r->hdr_len)
			return;
		r->hdr_len = 0;
		if (r->phase == 3) {
			r->phase = 4;
		} else if (r->files[r->cur].is_dir) {
			r->cur++;
		} else {
			r->left = r->files[r->cur].size;
			r->pad = (512 - r->left % 512) % 512;
			r->phase = 1;
		}
	} else if (r->phase == 1) {
		r->left -= (long long)n;
	} else if (r->phase == 2) {
		r->pad -= (long long)n;
	}
}
