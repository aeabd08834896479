/* The tar extractor over libarchive (peer_wire.h: mtc_wire_extract, mtc_wire_extract_from). */
#include "peer_wire_admit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "blake3/blake3.h"
#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

#define BLOCK (1 << 20)
#define TRAILING_MAX (1 << 20)

/* The entry's data from the archive into fd (closed here), hashed into w on pool's threads. */
static int extract_file(struct archive *a, struct mtc_bg_pool *pool, int fd, const char *path,
			struct mtc_wire_entry *w, char *err, size_t errlen)
{
	struct mtc_wire_hash h;
	long long done = 0, size = w->size;
	const void *buf;
	size_t len;
	la_int64_t off;
	int rc;

	mtc_wire_hash_start(&h, w);
	while ((rc = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off != done || done + (long long)len > size) {
			rc = mtc_fail(err, errlen, "'%.200s': data does not match its size", path);
			break;
		}
		if (mtc_wire_put(pool, fd, &h, buf, len, done) < 0) {
			rc = mtc_fail(err, errlen, "'%.200s': %s", path, strerror(errno));
			break;
		}
		done += (long long)len;
	}
	close(fd);
	mtc_wire_hash_end(&h);
	if (rc == -1)
		return -1;
	if (rc != ARCHIVE_EOF)
		return mtc_fail(err, errlen, "'%.200s': %s", path, archive_error_string(a));
	if (done != size)
		return mtc_fail(err, errlen, "'%.200s': %lld of %lld bytes", path, done, size);
	return 0;
}

/* The entry's range record, if it has one (0 with *file_size 0 if not); -1 with err. */
static int entry_range(struct archive_entry *e, long long *off, long long *file_size, char *err,
		       size_t errlen)
{
	const char *name;
	const void *value;
	size_t len;
	*off = *file_size = 0;
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &value, &len) == ARCHIVE_OK) {
		char text[64];
		if (strcmp(name, MTC_WIRE_RANGE_XATTR))
			continue;
		if (len >= sizeof text)
			return mtc_fail(err, errlen, "bad range record");
		memcpy(text, value, len);
		text[len] = '\0';
		return mtc_wire_parse_range(text, off, file_size, err, errlen);
	}
	return 0;
}

/* 0: extract into path; 1: the root entry, skip; -1: rejected. */
static int check_entry(struct archive_entry *e, const struct mtc_wire_limits *lim, char *path, char *err,
		       size_t errlen)
{
	const char *name = archive_entry_pathname(e);
	mode_t type = archive_entry_filetype(e);
	size_t len;

	if (!name)
		return mtc_fail(err, errlen, "entry without a path");
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (type == AE_IFDIR && (!strcmp(name, ".") || !*name)) {
		*path = '\0';
		return 1;
	}
	len = strlen(name);
	if (len >= MTC_WIRE_PATH_MAX)
		return mtc_fail(err, errlen, "path longer than %d bytes", MTC_WIRE_PATH_MAX - 1);
	memcpy(path, name, len + 1);
	if (type == AE_IFDIR && len > 1 && path[len - 1] == '/')
		path[len - 1] = '\0';
	if (mtc_wire_check_path(path, lim->max_depth, err, errlen) < 0)
		return -1;
	if (archive_entry_hardlink(e))
		return mtc_fail(err, errlen, "'%.200s': hard links are not accepted", path);
	if (type == AE_IFLNK || archive_entry_symlink(e))
		return mtc_fail(err, errlen, "'%.200s': symbolic links are not accepted", path);
	if (type != AE_IFREG && type != AE_IFDIR)
		return mtc_fail(err, errlen, "'%.200s': only regular files and directories are accepted",
				path);
	if (type == AE_IFREG && (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0))
		return mtc_fail(err, errlen, "'%.200s': no size", path);
	if (archive_entry_sparse_count(e) > 0)
		return mtc_fail(err, errlen, "'%.200s': sparse files are not accepted", path);
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

static int drain_trailer(struct source *src, char *err, size_t errlen)
{
	const void *buf;
	long long total = 0;
	ssize_t n;

	while ((n = src->next(src->arg, &buf)) != 0) {
		if (n < 0)
			return mtc_fail(err, errlen, "reading the stream: %s", strerror(errno));
		for (ssize_t i = 0; i < n; i++)
			if (((const char *)buf)[i])
				return mtc_fail(err, errlen, "data after the end of the archive");
		if ((total += n) > TRAILING_MAX)
			return mtc_fail(err, errlen, "too much padding after the end of the archive");
	}
	return 0;
}

enum mtc_result mtc_wire_extract_from(mtc_wire_source *next, void *arg, const char *root,
				      const struct mtc_wire_limits *lim,
				      const struct mtc_manifest *expected, struct mtc_wire_list *got,
				      char *err, size_t errlen)
{
	struct source src = { next, arg };
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	char *path = xmalloc(MTC_WIRE_PATH_MAX);
	struct mtc_wire_admission ad = { .lim = lim, .expected = expected, .got = got };
	enum mtc_result rc = MTC_FAILURE;
	int rootfd, r;

	rootfd = ad.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		mtc_fail(err, errlen, "'%s': %s", root, strerror(errno));
		goto out;
	}
	archive_read_support_format_tar(a);
	if (archive_read_open(a, &src, NULL, source_read, NULL) != ARCHIVE_OK) {
		mtc_fail(err, errlen, "not a tar stream: %s", archive_error_string(a));
		goto out;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const struct mtc_manifest_entry *x;
		struct mtc_wire_entry *w;
		int c = check_entry(e, lim, path, err, errlen), is_dir, fd;
		long long size, off, file_size;
		if (c < 0)
			goto out;
		if (c > 0)
			continue; /* the root itself, as "tar -C dir ." writes it */
		is_dir = archive_entry_filetype(e) == AE_IFDIR;
		size = is_dir ? 0 : archive_entry_size(e);
		if (entry_range(e, &off, &file_size, err, errlen) < 0 ||
		    (c = mtc_wire_admit(&ad, path, is_dir, size, off, file_size, &fd, &w, &x, err,
					errlen)) < 0)
			goto out;
		if (c > 0)
			continue;
		if (extract_file(a, lim->pool, fd, path, w, err, errlen) < 0)
			goto out;
		if (mtc_wire_digest_matches(x, w, err, errlen) < 0) {
			rc = MTC_INTEGRITY;
			goto out;
		}
	}
	if (r != ARCHIVE_EOF) {
		mtc_fail(err, errlen, "bad tar stream: %s", archive_error_string(a));
		goto out;
	}
	rc = drain_trailer(&src, err, errlen) < 0 ? MTC_FAILURE : MTC_OK;
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

enum mtc_result mtc_wire_extract(int fd, const char *root, const struct mtc_wire_limits *lim,
				 const struct mtc_manifest *expected, struct mtc_wire_list *got,
				 char *err, size_t errlen)
{
	struct fd_source f = { fd, xmalloc(BLOCK) };
	enum mtc_result rc = mtc_wire_extract_from(fd_next, &f, root, lim, expected, got, err, errlen);
	free(f.buf);
	return rc;
}
