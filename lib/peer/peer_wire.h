#ifndef MTC_PEER_WIRE_H
#define MTC_PEER_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "blake3/blake3.h"
#include "digest.h"
#include "result.h"

/*
 * The wire form of a directory <hash>.data between peers: a tar stream
 * (pax) of its regular files and directories, paths relative to the root.
 * The receiving side accepts only that: no links, devices, fifos, absolute
 * or escaping paths, duplicate entries, or anything past the limits, and
 * creates everything itself below a fresh root, so nothing can point
 * outside it. A file <hash>.data travels as its raw bytes.
 *
 * The receiver hashes every file while it writes it and lists what arrived
 * (path, type, size, digest); mtc_wire_manifest composes the manifest and
 * the directory digest of digest.h from that list, so what arrived is
 * verified against its name and the sender's manifest without reading it
 * back.
 */

struct mtc_bg_pool;
struct mtc_wire_limits {
	long long max_bytes;	  /* file content in total */
	long long max_files;	  /* files and directories */
	int max_depth;		  /* path components */
	struct mtc_bg_pool *pool; /* where what arrives is written and hashed (threads.h; NULL: here) */
};

#define MTC_WIRE_PATH_MAX 4096

/* 0 when path is a clean relative path of at most max_depth components; else -1 and err. */
int mtc_wire_check_path(const char *path, int max_depth, char *err, size_t errlen);

/*
 * A file larger than one connection should carry travels as ranges, each in
 * a piece of its own: an entry of the file's path with a pax record
 * SCHILY.xattr.mtc.range = "<offset> <file size>", its data the range's
 * bytes. Ranges start at multiples of MTC_WIRE_UNIT and, but for the file's
 * last, hold whole units; the receiver hashes each unit apart as a BLAKE3
 * subtree and mtc_wire_join makes the file's digest of them once every
 * range has arrived.
 */
#define MTC_WIRE_UNIT (64 << 10)
#define MTC_WIRE_RANGE_XATTR "mtc.range" /* as libarchive names the record */
#define MTC_WIRE_RANGE_KEY "SCHILY.xattr." MTC_WIRE_RANGE_XATTR

/* A part of a tree to send: a file or directory whole (len < 0), or a range of a file. */
struct mtc_wire_part {
	const char *path;
	long long off, len;
};

/* What arrived, one entry per file, directory or range; the list owns what they point to. */
struct mtc_wire_entry {
	char *path; /* relative, '/'-separated */
	int is_dir;
	long long size;	 /* a range's: its length */
	char digest[66]; /* whole files */
	/* a range: where it starts, its file's size, its units' chaining values, and the
	   file's last unit when the range ends the file */
	long long off, file_size;
	uint8_t *cvs, *tail;
	size_t ncv, tail_len;
};
struct mtc_wire_list {
	struct mtc_wire_entry *e;
	size_t n, cap;
};
struct mtc_wire_entry *mtc_wire_list_add(struct mtc_wire_list *l, const char *path, int is_dir,
					 long long size);
void mtc_wire_list_free(struct mtc_wire_list *l);
/* Moves every entry of from to the end of to; from is left empty. */
void mtc_wire_list_take(struct mtc_wire_list *to, struct mtc_wire_list *from);

/*
 * Hashing an entry's data as it arrives: a whole file into its digest, a
 * range into its units' chaining values (and the file's last unit kept).
 */
struct mtc_wire_hash {
	struct mtc_wire_entry *w;
	struct mtc_blake3 *whole;
	uint8_t *unit; /* a unit gathering, for a range */
	size_t have;   /* its bytes */
	uint64_t next; /* the file's unit the range is at */
	size_t cv_cap; /* the range's chaining values w->cvs has room for */
};
void mtc_wire_hash_start(struct mtc_wire_hash *h, struct mtc_wire_entry *w);
void mtc_wire_hash_update(struct mtc_wire_hash *h, const void *data, size_t len);
void mtc_wire_hash_end(struct mtc_wire_hash *h);

/*
 * len bytes of h's entry that arrived after its first at bytes: written into
 * fd (a range at its place, a whole file where fd is) and hashed into h
 * (NULL: only written), on one of pool's threads (threads.h) unless it is a
 * few KiB. 0, or -1 with errno.
 */
int mtc_wire_put(struct mtc_bg_pool *pool, int fd, struct mtc_wire_hash *h, const void *buf, size_t len,
		 long long at);

/*
 * Joins the ranges in l into one entry per file with its digest: the ranges
 * of a file must cover it exactly once, with no whole entry of it beside
 * them. 0, or -1 with err (what arrived is to be rejected).
 */
int mtc_wire_join(struct mtc_wire_list *l, char *err, size_t errlen);

/*
 * The manifest (digest.h, root "" included) of the tree a list describes:
 * directories that only appear as parents count as directories, a
 * directory listed twice counts once. m may be NULL; digest gets the
 * root's digest. Sorts the list.
 */
void mtc_wire_manifest(struct mtc_wire_list *l, struct mtc_manifest *m, char digest[66]);
/*
 * The same over items that borrow their paths and digests (sorted here),
 * with the directories alone in m: checking a manifest this way costs a
 * fraction of a copy of its entries.
 */
struct mtc_wire_item {
	const char *path, *digest;
	long long size;
	int is_dir;
};
void mtc_wire_compose_dirs(struct mtc_wire_item *items, size_t n, struct mtc_manifest *m,
			   char digest[66]);

/*
 * Extracts a tar stream read from fd into root, an existing directory
 * (empty, or holding earlier pieces of the same tree), appending what it
 * extracted to got. With expected, every entry must be listed there with
 * its type and size (checked at its header) and digest (checked at its
 * end). MTC_OK; MTC_FAILURE with err (the stream is rejected; root may
 * hold partial files, the caller removes it), MTC_INTEGRITY when a file's
 * digest is not the manifest's. Stops reading at the first error.
 */
enum mtc_result mtc_wire_extract(int fd, const char *root, const struct mtc_wire_limits *lim,
				 const struct mtc_manifest *expected, struct mtc_wire_list *got,
				 char *err, size_t errlen);

/*
 * The same from a source of blocks: next returns the length of the next
 * block with *buf pointing at it (valid until the following call), 0 at
 * the end, -1 with errno.
 */
typedef ssize_t mtc_wire_source(void *arg, const void **buf);
enum mtc_result mtc_wire_extract_from(mtc_wire_source *next, void *arg, const char *root,
				      const struct mtc_wire_limits *lim,
				      const struct mtc_manifest *expected, struct mtc_wire_list *got,
				      char *err, size_t errlen);

/*
 * The same from a socket (the rest of the connection is the stream; pre:
 * its first bytes, already read), for the daemon's uploads and the
 * client's fetches: accepts only what mtc_wire_reader writes (ustar, and
 * pax 'x' headers for long paths and sizes) up to its end-of-archive
 * blocks. File contents are read into a
 * large buffer (a few are shared by all callers), hashed there and written
 * out. timeout_s without data, or *stop set, ends it (MTC_FAILURE). consumed: the
 * stream bytes read.
 */
enum mtc_result mtc_wire_extract_sock(int sock, const void *pre, size_t pre_len, int timeout_s,
				      const int *stop, const char *root,
				      const struct mtc_wire_limits *lim,
				      const struct mtc_manifest *expected, struct mtc_wire_list *got,
				      long long *consumed, char *err, size_t errlen);

/*
 * w's bytes of a socket (pre: its first bytes, already read) into fd, the
 * same way: a whole file of w->size bytes through a large buffer, hashed
 * there into w->digest; a range (w->file_size set) into its place in fd
 * (open for reading and writing), its units hashed into w. 0, or -1 with
 * err (timeout_s without data, *stop, a short stream, a failed write).
 * consumed: the bytes read.
 */
int mtc_wire_receive(int sock, const void *pre, size_t pre_len, int timeout_s, const int *stop, int fd,
		     struct mtc_wire_entry *w, long long *consumed, char *err, size_t errlen);

/*
 * The tree below root as a tar stream, produced as it is read: open scans
 * the tree (total: the exact stream length), read fills buf and returns the
 * bytes written, 0 at the end, -1 with err (a file vanished or shrank).
 * open_list sends only the given parts, in that order (their parents are
 * created by the receiver).
 */
struct mtc_wire_reader;
struct mtc_wire_reader *mtc_wire_reader_open(const char *root, long long *total, char *err,
					     size_t errlen);
struct mtc_wire_reader *mtc_wire_reader_open_list(const char *root, const struct mtc_wire_part *parts,
						  size_t n, long long *total, char *err, size_t errlen);
/*
 * A reader of one file's bytes as they are (a file <hash>.data travels raw):
 * all of them (len < 0), or len bytes from off.
 */
struct mtc_wire_reader *mtc_wire_reader_open_file(const char *path, long long off, long long len,
						  long long *total, char *err, size_t errlen);
ssize_t mtc_wire_reader_read(struct mtc_wire_reader *r, char *buf, size_t len, char *err, size_t errlen);
/*
 * The same stream as segments, for sendfile: the next one is either len
 * bytes at *mem (*fd is -1) or len bytes of the open file *fd from *off;
 * 0 at the end, -1 with err (a file vanished). advance consumes n bytes
 * of the segment just peeked; a file segment that cannot be read to its
 * size (sendfile returned 0) is reported by the caller.
 */
ssize_t mtc_wire_reader_peek(struct mtc_wire_reader *r, const char **mem, int *fd, off_t *off, char *err,
			     size_t errlen);
void mtc_wire_reader_advance(struct mtc_wire_reader *r, size_t n);
void mtc_wire_reader_close(struct mtc_wire_reader *r);

#endif
