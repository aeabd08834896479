#ifndef MTC_PEER_WIRE_H
#define MTC_PEER_WIRE_H

#include <stddef.h>
#include <sys/types.h>

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
 * The same from a source of blocks: next returns the length of the next
 * block with *buf pointing at it (valid until the following call), 0 at
 * the end, -1 with errno.
 */
typedef ssize_t mtc_wire_source(void *arg, const void **buf);
int mtc_wire_extract_from(mtc_wire_source *next, void *arg, const char *root,
			  const struct mtc_wire_limits *lim, char digest[66], char *why,
			  size_t whylen);

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

/*
 * The tree below root as a tar stream, produced as it is read: open scans
 * the tree (total: the exact stream length), read fills buf and returns the
 * bytes written, 0 at the end, -1 with why (a file vanished or shrank).
 */
struct mtc_wire_reader;
struct mtc_wire_reader *mtc_wire_reader_open(const char *root, long long *total, char *why,
					     size_t whylen);
ssize_t mtc_wire_reader_read(struct mtc_wire_reader *r, char *buf, size_t len, char *why,
			     size_t whylen);
void mtc_wire_reader_close(struct mtc_wire_reader *r);

#endif
