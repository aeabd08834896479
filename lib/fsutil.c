#define _XOPEN_SOURCE 700
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fault.h"
#include "tmpname.h"
#include "xalloc.h"

int mtc_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fsync(fd) < 0 && errno != EINVAL) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

int mtc_fsync_parent(const char *path)
{
	char *copy = xstrdup(path);
	char *slash = strrchr(copy, '/');
	int rc;

	if (!slash)
		rc = mtc_fsync_dir(".");
	else if (slash == copy)
		rc = mtc_fsync_dir("/");
	else {
		*slash = '\0';
		rc = mtc_fsync_dir(copy);
	}
	free(copy);
	return rc;
}

int mtc_write_all(int fd, const void *buf, size_t len)
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

int mtc_pwrite_all(int fd, const void *buf, size_t len, long long off)
{
	for (size_t put = 0; put < len;) {
		ssize_t n = pwrite(fd, (const char *)buf + put, len - put,
				   (off_t)(off + (long long)put));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		put += (size_t)n;
	}
	return 0;
}

int mtc_pread_all(int fd, void *buf, size_t len, long long off)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + (long long)got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENODATA;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

int mtc_write_atomic(const char *path, const void *buf, size_t len)
{
	struct mtc_tmp t;

	if (mtc_tmp_beside(path, &t) < 0)
		return -1;
	if (mtc_write_all(t.fd, buf, len) < 0 || fsync(t.fd) < 0 ||
	    (mtc_fault_stall("write-atomic", path), rename(t.path, path) < 0)) {
		mtc_tmp_discard(&t);
		return -1;
	}
	mtc_tmp_release(&t);
	return mtc_fsync_parent(path);
}

int mtc_read_fd(int fd, size_t max, char **out, size_t *outlen)
{
	struct mtc_buf b = MTC_BUF_INIT(max);
	char chunk[16384];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && mtc_buf_append(&b, chunk, (size_t)n) < 0)) {
			int e = errno;
			mtc_buf_free(&b);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
	}
	mtc_buf_append(&b, "", 0); /* an empty file reads as "" */
	if (outlen)
		*outlen = b.len;
	*out = mtc_buf_take(&b);
	return 0;
}

static int read_file(const char *path, int flags, size_t max, char **out, size_t *outlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return -1;
	int rc = mtc_read_fd(fd, max, out, outlen);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int mtc_read_file(const char *path, size_t max, char **out, size_t *outlen)
{
	return read_file(path, 0, max, out, outlen);
}

int mtc_read_file_nofollow(const char *path, size_t max, char **out, size_t *outlen)
{
	return read_file(path, O_NOFOLLOW, max, out, outlen);
}

int mtc_mkdir_p(const char *path, unsigned mode)
{
	char *copy = xstrdup(path);
	int rc = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			rc = -1;
		*p = '/';
		if (rc)
			break;
	}
	if (!rc && mkdir(copy, mode) < 0 && errno != EEXIST)
		rc = -1;
	int e = errno;
	free(copy);
	errno = e;
	return rc;
}
