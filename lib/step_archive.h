#ifndef MTC_STEP_ARCHIVE_H
#define MTC_STEP_ARCHIVE_H

#include <stddef.h>

/* One .meta of a node's step and the data it names. */
struct mtc_step_part {
	char *meta; /* <job>-s<step>-n<rank>-w<worker>.meta */
	const char *hash;
	int worker;
};

/*
 * Writes a node's step as one tar stream (pax, optionally zstd-compressed)
 * to path, or to standard output for "-": each <hash>.data from dir (a
 * duplicate once), then the .meta files, as a local dir holds them. 0, or -1
 * with err.
 */
int mtc_step_archive(const char *path, int zstd, const char *dir, const struct mtc_step_part *parts,
		     size_t n, char *err, size_t errlen);

#endif
