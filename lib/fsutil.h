#ifndef MTC_FSUTIL_H
#define MTC_FSUTIL_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * Crash safety: a write that must survive goes to a temporary (tmpname.h)
 * beside it, is fsynced, renamed over its final name, and the directory is
 * fsynced. On failure the temporary is removed and errno is kept.
 */
int mtc_write_atomic(const char *path, const void *buf, size_t len);
int mtc_fsync_dir(const char *dir);
int mtc_fsync_parent(const char *path);

/* write(2) until all of buf is written, retrying on EINTR. */
int mtc_write_all(int fd, const void *buf, size_t len);
/* pwrite(2) of all of buf at off, retrying on EINTR. */
int mtc_pwrite_all(int fd, const void *buf, size_t len, long long off);

/* pread(2) of len bytes at off, retrying on EINTR: 0, or -1 with errno (ENODATA: the file ends first). */
int mtc_pread_all(int fd, void *buf, size_t len, long long off);

/* Reads a whole file of at most max bytes; EFBIG if larger. buf is NUL-terminated. */
int mtc_read_file(const char *path, size_t max, char **buf, size_t *len);
/* The same, refusing (ELOOP) a path that is a symlink: for what the local dir holds. */
int mtc_read_file_nofollow(const char *path, size_t max, char **buf, size_t *len);
int mtc_read_fd(int fd, size_t max, char **buf, size_t *len);

/* mkdir -p */
int mtc_mkdir_p(const char *path, unsigned mode);

#endif
