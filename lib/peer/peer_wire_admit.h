#ifndef MTC_PEER_WIRE_ADMIT_H
#define MTC_PEER_WIRE_ADMIT_H

#include "peer_wire.h"

/*
 * What both extractors (the libarchive one and the socket one) share: how
 * an entry of a stream is admitted below the root, within the limits and
 * the expected manifest.
 */
struct mtc_wire_admission {
	int rootfd;
	const struct mtc_wire_limits *lim;
	const struct mtc_manifest *expected;
	struct mtc_wire_list *got;
	long long files, bytes;
};

/*
 * An entry whose clean path, type and size are known, against the limits
 * and the expected manifest: a directory is created and listed (1); a
 * file is listed and created, *fd open for writing, *w its list entry and
 * *x its manifest entry (NULL without one) (0); -1 with err. A range
 * (file_size > 0: size bytes from off of a file of file_size) opens its
 * file, made by whichever range comes first, at off.
 */
int mtc_wire_admit(struct mtc_wire_admission *ad, char *path, int is_dir, long long size, long long off,
		   long long file_size, int *fd, struct mtc_wire_entry **w,
		   const struct mtc_manifest_entry **x, char *err, size_t errlen);

/*
 * len bytes at off of a range's file fd. Ranges of one file arrive at once
 * over several connections, and their writes would take turns on the file's
 * lock, which spins on the CPU the writer needs: they take turns on a mutex
 * (one of a few, by inode) first, which sleeps. 0, or -1 with errno.
 */
int mtc_wire_write_range(int fd, const void *buf, size_t len, long long off);

/* The value of a MTC_WIRE_RANGE_KEY record into *off and *file_size: 0, or -1 with err. */
int mtc_wire_parse_range(const char *value, long long *off, long long *file_size, char *err,
			 size_t errlen);

/* A file that arrived against its manifest entry: 0, or -1 with err. */
int mtc_wire_digest_matches(const struct mtc_manifest_entry *x, const struct mtc_wire_entry *w,
			    char *err, size_t errlen);

#endif
