#include "peer_wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "blake3.h"
#include "xalloc.h"

#define BLOCK (1 << 20)
#define TRAILING_MAX (1 << 20)

static int fail(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

int mtc_wire_check_path(const char *path, int max_depth, char *why, size_t whylen)
{
	const char *p = path, *comp = path;
	int depth = 1;

	if (!*path)
		return fail(why, whylen, "empty path");
	if (*path == '/')
		return fail(why, whylen, "'%.200s': absolute path", path);
	if (strlen(path) >= MTC_WIRE_PATH_MAX)
		return fail(why, whylen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
	for (;; p++) {
		if (*p == '/' || !*p) {
			size_t len = (size_t)(p - comp);
			if (len == 0 || (len == 1 && comp[0] == '.') ||
			    (len == 2 && comp[0] == '.' && comp[1] == '.'))
				return fail(why, whylen, "'%.200s': path component '%.*s' not allowed",
					    path, (int)len, comp);
			if (len > 255)
				return fail(why, whylen, "'%.200s': path component too long", path);
			if (!*p)
				break;
			if (++depth > max_depth)
				return fail(why, whylen, "'%.200s': deeper than %d", path, max_depth);
			comp = p + 1;
		} else if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			return fail(why, whylen, "'%.200s': control character in path", path);
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

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int extract_file(struct archive *a, int rootfd, char *path, long long size,
			char digest[66], char *why, size_t whylen)
{
	struct mtc_blake3 h;
	uint8_t out[MTC_BLAKE3_OUT_LEN];
	char *leaf;
	int dfd = open_parent(rootfd, path, &leaf), fd;
	long long done = 0;
	const void *buf;
	size_t len;
	la_int64_t off;
	int rc;

	if (dfd < 0)
		return fail(why, whylen, "'%.200s': cannot create parent: %s", path, strerror(errno));
	fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(dfd);
	if (fd < 0)
		return fail(why, whylen, "'%.200s': %s", path,
			    errno == EEXIST ? "duplicate entry" : strerror(errno));
	mtc_blake3_init(&h);
	while ((rc = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off != done || done + (long long)len > size) {
			close(fd);
			return fail(why, whylen, "'%.200s': data does not match its size", path);
		}
		if (write_all(fd, buf, len) < 0) {
			int e = errno;
			close(fd);
			return fail(why, whylen, "'%.200s': %s", path, strerror(e));
		}
		mtc_blake3_update(&h, buf, len);
		done += (long long)len;
	}
	close(fd);
	if (rc != ARCHIVE_EOF)
		return fail(why, whylen, "'%.200s': %s", path, archive_error_string(a));
	if (done != size)
		return fail(why, whylen, "'%.200s': %lld of %lld bytes", path, done, size);
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
		return fail(why, whylen, "'%.200s': cannot create parent: %s", path, strerror(errno));
	if (mkdirat(dfd, leaf, 0755) < 0 &&
	    (errno != EEXIST || fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	     !S_ISDIR(st.st_mode))) {
		int e = errno;
		close(dfd);
		return fail(why, whylen, "'%.200s': %s", path, strerror(e));
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
		return fail(why, whylen, "entry without a path");
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (type == AE_IFDIR && (!strcmp(name, ".") || !*name)) {
		*path = '\0';
		return 1;
	}
	len = strlen(name);
	if (len >= MTC_WIRE_PATH_MAX)
		return fail(why, whylen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
	memcpy(path, name, len + 1);
	if (type == AE_IFDIR && len > 1 && path[len - 1] == '/')
		path[len - 1] = '\0';
	if (mtc_wire_check_path(path, lim->max_depth, why, whylen) < 0)
		return -1;
	if (archive_entry_hardlink(e))
		return fail(why, whylen, "'%.200s': hard links are not accepted", path);
	if (type == AE_IFLNK || archive_entry_symlink(e))
		return fail(why, whylen, "'%.200s': symbolic links are not accepted", path);
	if (type != AE_IFREG && type != AE_IFDIR)
		return fail(why, whylen, "'%.200s': only regular files and directories are accepted",
			    path);
	if (type == AE_IFREG && (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0))
		return fail(why, whylen, "'%.200s': no size", path);
	if (archive_entry_sparse_count(e) > 0)
		return fail(why, whylen, "'%.200s': sparse files are not accepted", path);
	return 0;
}

static int drain_trailer(int fd, char *why, size_t whylen)
{
	char buf[65536];
	long long total = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(why, whylen, "reading the stream: %s", strerror(errno));
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i])
				return fail(why, whylen, "data after the end of the archive");
		if ((total += n) > TRAILING_MAX)
			return fail(why, whylen, "too much padding after the end of the archive");
	}
	return 0;
}

static struct mtc_wire_entry *add_entry(struct mtc_wire_entry **list, size_t *n, size_t *cap,
					const char *path, int is_dir)
{
	struct mtc_wire_entry *e;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*list = xrealloc(*list, *cap * sizeof **list);
	}
	e = &(*list)[(*n)++];
	e->path = xstrdup(path);
	e->is_dir = is_dir;
	e->digest[0] = '\0';
	return e;
}

int mtc_wire_extract(int fd, const char *root, const struct mtc_wire_limits *lim,
		     char digest[66], char *why, size_t whylen)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	char *path = xmalloc(MTC_WIRE_PATH_MAX);
	long long files = 0, bytes = 0;
	struct mtc_wire_entry *list = NULL;
	size_t n = 0, cap = 0;
	int rootfd, rc = -1, r;

	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		fail(why, whylen, "'%s': %s", root, strerror(errno));
		goto out;
	}
	archive_read_support_format_tar(a);
	if (archive_read_open_fd(a, fd, BLOCK) != ARCHIVE_OK) {
		fail(why, whylen, "not a tar stream: %s", archive_error_string(a));
		goto out;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		int c = check_entry(e, lim, path, why, whylen);
		if (c < 0)
			goto out;
		if (c > 0)
			continue; /* the root itself, as "tar -C dir ." writes it */
		if (++files > lim->max_files) {
			fail(why, whylen, "more than %lld entries", lim->max_files);
			goto out;
		}
		if (archive_entry_filetype(e) == AE_IFDIR) {
			if (extract_dir(rootfd, path, why, whylen) < 0)
				goto out;
			add_entry(&list, &n, &cap, path, 1);
			continue;
		}
		bytes += archive_entry_size(e);
		if (bytes > lim->max_bytes) {
			fail(why, whylen, "more than %lld bytes", lim->max_bytes);
			goto out;
		}
		if (extract_file(a, rootfd, path, archive_entry_size(e),
				 add_entry(&list, &n, &cap, path, 0)->digest, why, whylen) < 0)
			goto out;
	}
	if (r != ARCHIVE_EOF) {
		fail(why, whylen, "bad tar stream: %s", archive_error_string(a));
		goto out;
	}
	rc = drain_trailer(fd, why, whylen);
	if (!rc)
		mtc_wire_tree_digest(list, n, digest);
out:
	if (rootfd >= 0)
		close(rootfd);
	archive_read_free(a);
	free(path);
	for (size_t i = 0; i < n; i++)
		free((char *)list[i].path);
	free(list);
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

static int by_string(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

struct level {
	const char *path;
	size_t len;
	char **kids;
	size_t n, cap;
};

static void add_kid(struct level *l, const char *digest)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->kids = xrealloc(l->kids, l->cap * sizeof *l->kids);
	}
	l->kids[l->n++] = xstrdup(digest);
}

static void close_level(struct level *l, char out[66])
{
	size_t total = 0, off = 0;
	uint8_t h[MTC_BLAKE3_OUT_LEN];
	char *buf;

	if (l->n)
		qsort(l->kids, l->n, sizeof *l->kids, by_string);
	for (size_t i = 0; i < l->n; i++)
		total += strlen(l->kids[i]) + 1;
	buf = xmalloc(total + 1);
	for (size_t i = 0; i < l->n; i++) {
		size_t k = strlen(l->kids[i]);
		memcpy(buf + off, l->kids[i], k);
		off += k;
		buf[off++] = '\n';
		free(l->kids[i]);
	}
	mtc_blake3(buf, off ? off - 1 : 0, h);
	out[0] = 'D';
	mtc_hex(h, sizeof h, out + 1);
	free(buf);
	free(l->kids);
	memset(l, 0, sizeof *l);
}

static int inside(const struct level *l, const char *path)
{
	return l->len == 0 || (!strncmp(path, l->path, l->len) && path[l->len] == '/');
}

void mtc_wire_tree_digest(struct mtc_wire_entry *e, size_t n, char out[66])
{
	struct level *stack = xcalloc(16, sizeof *stack);
	size_t depth = 1, cap = 16;
	char d[66];

	if (n)
		qsort(e, n, sizeof *e, by_entry_path);
	for (size_t i = 0; i < n; i++) {
		const char *p = e[i].path;
		size_t plen = strlen(p);
		while (depth > 1 && !inside(&stack[depth - 1], p)) {
			close_level(&stack[--depth], d);
			add_kid(&stack[depth - 1], d);
		}
		if (e[i].is_dir && depth > 1 && stack[depth - 1].len == plen)
			continue; /* the same directory twice */
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
		if (!e[i].is_dir)
			add_kid(&stack[depth - 1], e[i].digest);
	}
	while (depth > 1) {
		close_level(&stack[--depth], d);
		add_kid(&stack[depth - 1], d);
	}
	close_level(&stack[0], out);
	free(stack);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int write_entry(struct archive *a, const char *abs, const char *rel, int depth, char *buf,
		       char *why, size_t whylen);

static int write_children(struct archive *a, const char *abs, const char *rel, int depth,
			  char *buf, char *why, size_t whylen)
{
	struct dirent **names;
	int n = scandir(abs, &names, NULL, by_name), rc = 0;

	if (n < 0)
		return fail(why, whylen, "'%s': %s", abs, strerror(errno));
	for (int i = 0; i < n; i++) {
		const char *d = names[i]->d_name;
		if (!rc && strcmp(d, ".") && strcmp(d, "..")) {
			char *cabs = xasprintf("%s/%s", abs, d);
			char *crel = *rel ? xasprintf("%s/%s", rel, d) : xstrdup(d);
			rc = write_entry(a, cabs, crel, depth + 1, buf, why, whylen);
			free(cabs);
			free(crel);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

static int write_file(struct archive *a, const char *abs, const char *rel, char *buf, char *why,
		      size_t whylen)
{
	int fd = open(abs, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return fail(why, whylen, "'%s': %s", abs, strerror(errno));
	while ((n = read(fd, buf, BLOCK)) > 0)
		if (archive_write_data(a, buf, (size_t)n) != n) {
			close(fd);
			return fail(why, whylen, "'%s': %s", rel, archive_error_string(a));
		}
	if (n < 0) {
		int e = errno;
		close(fd);
		return fail(why, whylen, "'%s': %s", abs, strerror(e));
	}
	close(fd);
	return 0;
}

static int write_entry(struct archive *a, const char *abs, const char *rel, int depth, char *buf,
		       char *why, size_t whylen)
{
	struct archive_entry *e;
	struct stat st;
	int rc = 0;

	if (depth > 256)
		return fail(why, whylen, "'%s': too deep", abs);
	if (stat(abs, &st) < 0)
		return fail(why, whylen, "'%s': %s", abs, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return fail(why, whylen, "'%s': neither a file nor a directory", abs);
	e = archive_entry_new();
	archive_entry_set_pathname(e, rel);
	archive_entry_set_filetype(e, S_ISDIR(st.st_mode) ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(e, S_ISDIR(st.st_mode) ? 0755 : 0644);
	archive_entry_set_size(e, S_ISDIR(st.st_mode) ? 0 : st.st_size);
	if (archive_write_header(a, e) != ARCHIVE_OK)
		rc = fail(why, whylen, "'%s': %s", rel, archive_error_string(a));
	archive_entry_free(e);
	if (!rc)
		rc = S_ISDIR(st.st_mode) ? write_children(a, abs, rel, depth, buf, why, whylen)
					 : write_file(a, abs, rel, buf, why, whylen);
	return rc;
}

int mtc_wire_write_tree(int fd, const char *root, char *why, size_t whylen)
{
	struct archive *a = archive_write_new();
	char *buf = xmalloc(BLOCK);
	int rc;

	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_per_block(a, BLOCK);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_fd(a, fd) != ARCHIVE_OK)
		rc = fail(why, whylen, "%s", archive_error_string(a));
	else
		rc = write_children(a, root, "", 0, buf, why, whylen);
	if (archive_write_close(a) != ARCHIVE_OK && !rc)
		rc = fail(why, whylen, "%s", archive_error_string(a));
	archive_write_free(a);
	free(buf);
	return rc;
}
