/* Admitting a stream's entries below the root (peer_wire_admit.h). */
#include "peer_wire_admit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

int mtc_wire_check_path(const char *path, int max_depth, char *err, size_t errlen)
{
	const char *p = path, *comp = path;
	int depth = 1;

	if (!*path)
		return mtc_fail(err, errlen, "empty path");
	if (*path == '/')
		return mtc_fail(err, errlen, "'%.200s': absolute path", path);
	if (strlen(path) >= MTC_WIRE_PATH_MAX)
		return mtc_fail(err, errlen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
	for (;; p++) {
		if (*p == '/' || !*p) {
			size_t len = (size_t)(p - comp);
			if (len == 0 || (len == 1 && comp[0] == '.') ||
			    (len == 2 && comp[0] == '.' && comp[1] == '.'))
				return mtc_fail(err, errlen,
						"'%.200s': path component '%.*s' not allowed", path,
						(int)len, comp);
			if (len > 255)
				return mtc_fail(err, errlen, "'%.200s': path component too long", path);
			if (!*p)
				break;
			if (++depth > max_depth)
				return mtc_fail(err, errlen, "'%.200s': deeper than %d", path,
						max_depth);
			comp = p + 1;
		} else if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			return mtc_fail(err, errlen, "'%.200s': control character in path", path);
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

static int extract_dir(int rootfd, char *path, char *err, size_t errlen)
{
	char *leaf;
	int dfd = open_parent(rootfd, path, &leaf);
	struct stat st;

	if (dfd < 0)
		return mtc_fail(err, errlen, "'%.200s': cannot create parent: %s", path,
				strerror(errno));
	if (mkdirat(dfd, leaf, 0755) < 0 &&
	    (errno != EEXIST || fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	     !S_ISDIR(st.st_mode))) {
		int e = errno;
		close(dfd);
		return mtc_fail(err, errlen, "'%.200s': %s", path, strerror(e));
	}
	close(dfd);
	return 0;
}

static const struct mtc_manifest_entry *expected_entry(const struct mtc_manifest *m, const char *path)
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

/* 0 when the entry is in the expected manifest with its type and size; else -1 and err. */
static int check_expected(const struct mtc_manifest *m, const char *path, int is_dir, long long size,
			  const struct mtc_manifest_entry **x, char *err, size_t errlen)
{
	if (!m)
		return 0;
	if (!(*x = expected_entry(m, path)))
		return mtc_fail(err, errlen, "'%.200s' is not in the manifest", path);
	if (((*x)->type == MTC_ENTRY_DIR) != is_dir)
		return mtc_fail(err, errlen, "'%.200s' is a %s, the manifest says a %s", path,
				is_dir ? "dir" : "file", is_dir ? "file" : "dir");
	if (!is_dir && (*x)->size != size)
		return mtc_fail(err, errlen, "'%.200s' has %lld bytes, the manifest says %lld", path,
				size, (*x)->size);
	return 0;
}

int mtc_wire_parse_range(const char *value, long long *off, long long *file_size, char *err,
			 size_t errlen)
{
	char *end;
	errno = 0;
	*off = strtoll(value, &end, 10);
	if (errno || end == value || *end != ' ' || *off < 0)
		return mtc_fail(err, errlen, "bad range record '%.60s'", value);
	value = end + 1;
	*file_size = strtoll(value, &end, 10);
	if (errno || end == value || *end || *file_size <= 0)
		return mtc_fail(err, errlen, "bad range record '%.60s'", value);
	return 0;
}

/* A range must lie in its file, start at a unit and hold whole units unless it ends the file. */
static int check_range(const char *path, long long size, long long off, long long file_size, char *err,
		       size_t errlen)
{
	if (size <= 0 || off % MTC_WIRE_UNIT || off > file_size || size > file_size - off ||
	    (off + size < file_size && size % MTC_WIRE_UNIT))
		return mtc_fail(err, errlen, "'%.200s': bad range of %lld bytes at %lld of %lld", path,
				size, off, file_size);
	return 0;
}

int mtc_wire_admit(struct mtc_wire_admission *ad, char *path, int is_dir, long long size, long long off,
		   long long file_size, int *fd, struct mtc_wire_entry **w,
		   const struct mtc_manifest_entry **x, char *err, size_t errlen)
{
	char *leaf, *copy;
	int dfd;

	*x = NULL;
	if (++ad->files > ad->lim->max_files)
		return mtc_fail(err, errlen, "more than %lld entries", ad->lim->max_files);
	if (file_size && (is_dir || check_range(path, size, off, file_size, err, errlen) < 0))
		return is_dir ? mtc_fail(err, errlen, "'%.200s': a range of a directory", path) : -1;
	if (check_expected(ad->expected, path, is_dir, file_size ? file_size : size, x, err, errlen) < 0)
		return -1;
	if (is_dir) {
		if (extract_dir(ad->rootfd, path, err, errlen) < 0)
			return -1;
		mtc_wire_list_add(ad->got, path, 1, 0);
		return 1;
	}
	if ((ad->bytes += size) > ad->lim->max_bytes)
		return mtc_fail(err, errlen, "more than %lld bytes", ad->lim->max_bytes);
	*w = mtc_wire_list_add(ad->got, path, 0, size);
	(*w)->off = off;
	(*w)->file_size = file_size;
	copy = xstrdup(path);
	dfd = open_parent(ad->rootfd, copy, &leaf);
	if (dfd < 0) {
		free(copy);
		return mtc_fail(err, errlen, "'%.200s': cannot create parent: %s", path,
				strerror(errno));
	}
	*fd = openat(dfd, leaf,
		     (file_size ? O_RDWR : O_WRONLY | O_EXCL) | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(dfd);
	free(copy);
	if (*fd < 0)
		return mtc_fail(err, errlen, "'%.200s': %s", path,
				errno == EEXIST ? "duplicate entry" : strerror(errno));
	return 0;
}

int mtc_wire_digest_matches(const struct mtc_manifest_entry *x, const struct mtc_wire_entry *w,
			    char *err, size_t errlen)
{
	if (!x || w->file_size || !strcmp(x->digest, w->digest))
		return 0; /* a range is checked once its file is joined */
	return mtc_fail(err, errlen, "'%.200s' has digest %s, the manifest says %s", w->path, w->digest,
			x->digest);
}

#define RANGE_LOCKS 16
static pthread_mutex_t range_locks[RANGE_LOCKS] = {
	[0 ... RANGE_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER,
};

int mtc_wire_write_range(int fd, const void *buf, size_t len, long long off)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -1;
	pthread_mutex_t *m = &range_locks[st.st_ino % RANGE_LOCKS];
	pthread_mutex_lock(m);
	int rc = mtc_pwrite_all(fd, buf, len, off);
	pthread_mutex_unlock(m);
	return rc;
}
