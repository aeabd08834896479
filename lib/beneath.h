#ifndef MTC_BENEATH_H
#define MTC_BENEATH_H

#include <sys/stat.h>

/*
 * Opens rel beneath the directory dirfd and never outside it: rel is
 * relative, and neither ".." nor a symlink may lead out (openat2 with
 * RESOLVE_BENEATH where the kernel has it, which follows a symlink that
 * stays inside; elsewhere a walk that follows no symlink at all). "" is
 * dirfd itself. EXDEV or ELOOP when the path would leave.
 */
int mtc_open_beneath(int dirfd, const char *rel, int flags);
/* The same for fstat: the type and size of what rel resolves to beneath dirfd. */
int mtc_stat_beneath(int dirfd, const char *rel, struct stat *st);

#endif
