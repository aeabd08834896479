#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xalloc.h"

/* The walk for kernels without openat2: every component opened without following a symlink. */
static int open_walk(int dirfd, const char *rel, int flags)
{
	char *copy = xstrdup(rel), *save = NULL, *comp = strtok_r(copy, "/", &save);
	int fd = dup(dirfd), e;

	while (fd >= 0 && comp) {
		char *next = strtok_r(NULL, "/", &save);
		int nfd;
		if (!strcmp(comp, "..")) {
			close(fd);
			fd = -1;
			errno = EXDEV;
			break;
		}
		nfd = openat(fd, comp, (next ? O_RDONLY | O_DIRECTORY : flags) | O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		close(fd);
		errno = e;
		fd = nfd;
		comp = next;
	}
	free(copy);
	return fd;
}

int mtc_open_beneath(int dirfd, const char *rel, int flags)
{
	struct open_how how = { .flags = (unsigned long long)(flags | O_CLOEXEC),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	long fd;

	if (!*rel)
		return openat(dirfd, ".", flags | O_CLOEXEC);
	if (*rel == '/') {
		errno = EXDEV;
		return -1;
	}
	fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return (int)fd;
	return open_walk(dirfd, rel, flags);
}

int mtc_stat_beneath(int dirfd, const char *rel, struct stat *st)
{
	int fd = mtc_open_beneath(dirfd, rel, O_PATH), rc, e;
	if (fd < 0)
		return -1;
	rc = fstat(fd, st);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}
