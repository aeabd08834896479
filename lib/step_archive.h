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
 * The compression tar -a gives a file name by its suffix (x.tar.zst, x.tgz,
 * x.tar.xz...), as a libarchive filter name; NULL for none (x.tar, "-").
 */
const char *mtc_archive_filter_of(const char *path);

/*
 * Writes a node's step as one tar stream (pax, compressed by the libarchive
 * filter named, or not for NULL) to path, or to standard output for "-".
 * step >= 0: the step as its framework saved it, <step>/ (with several
 * workers w<worker>/<step>/), as --layout step restores it; step < 0: each
 * <hash>.data from dir (a duplicate once), then the .meta files, as a local
 * dir holds them. A file is written to a temporary beside path and renamed
 * over it when whole, so a failure (a full disk) leaves no partial archive.
 * 0, or -1 with err.
 */
int mtc_step_archive(const char *path, const char *filter, long long step, const char *dir,
		     const struct mtc_step_part *parts, size_t n, char *err, size_t errlen);

#endif
