#ifndef MTC_PEER_WIRE_H
#define MTC_PEER_WIRE_H

#include <stddef.h>

/*
 * The wire form of a directory <hash>.data between peers: a tar stream
 * (pax) of its regular files and directories, paths relative to the root.
 * The receiving side accepts only that: no links, devices, fifos, absolute
 * or escaping paths, duplicate entries, or anything past the limits, and
 * creates everything itself below a fresh root, so nothing can point
 * outside it. A file <hash>.data travels as its raw bytes.
 *
 * The receiver hashes every file while it writes it and composes the
 * directory digest of digest.h from those (mtc_wire_tree_digest), so what
 * arrived is verified without reading it back.
 */

struct mtc_wire_limits {
	long long max_bytes; /* file content in total */
	long long max_files; /* files and directories */
	int max_depth;	     /* path components */
};

#define MTC_WIRE_PATH_MAX 4096

/* 0 when path is a clean relative path of at most max_depth components; else -1 and why. */
int mtc_wire_check_path(const char *path, int max_depth, char *why, size_t whylen);

/*
 * Extracts a tar stream read from fd into root, an existing empty directory,
 * and puts the digest of the extracted tree (digest.h) into digest.
 * 0 ok; -1 with why (the stream is rejected; root may hold partial files,
 * the caller removes it). Stops reading at the first error.
 */
int mtc_wire_extract(int fd, const char *root, const struct mtc_wire_limits *lim,
		     char digest[66], char *why, size_t whylen);

/*
 * The directory digest of digest.h from a flat list: paths relative to the
 * root ('/'-separated, no duplicates), is_dir, and for files their digest.
 * Directories that only appear as parents count as directories. Sorts the
 * arrays in place (paths are not copied).
 */
struct mtc_wire_entry {
	const char *path;
	int is_dir;
	char digest[66];
};
void mtc_wire_tree_digest(struct mtc_wire_entry *e, size_t n, char out[66]);

/* Writes the tree below root as a tar stream to fd. 0 ok, -1 with why. */
int mtc_wire_write_tree(int fd, const char *root, char *why, size_t whylen);

#endif
