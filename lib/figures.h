#ifndef MTC_FIGURES_H
#define MTC_FIGURES_H

#include <stdint.h>

/*
 * What every write below a path changes, in 32 bytes: each entry's path
 * below it, type, size, mtime and ctime to the ns, walked as the digest walks
 * (symlinks inside followed). Two takes that agree saw no write between them,
 * save one that began before the first and changed neither a size nor a time
 * (the clock of timestamps lags by at most one tick). The root's own ctime is
 * left out: renaming the root changes it, and nothing below.
 */
struct mtc_figures {
	uint8_t sum[32];
	long long entries;
};

/* 0, or -1 with errno (ENOENT: path is gone). */
int mtc_figures_take(const char *path, struct mtc_figures *f);

/* 1 when a and b are the figures of an unchanged tree. */
int mtc_figures_same(const struct mtc_figures *a, const struct mtc_figures *b);

#endif
