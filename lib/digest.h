#ifndef MTC_DIGEST_H
#define MTC_DIGEST_H

#include <stdatomic.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "manifest.h"

/*
 * The content digest of mtc(7) §3.5, bit-identical to the reference merkle.py:
 *   file       BLAKE3(content) as 64 lowercase hex
 *   directory  "D" + hex BLAKE3 of the children's digests, sorted bytewise
 *              (strcmp), joined by "\n" with no trailing newline; a child
 *              directory contributes its own "D…" digest; an empty directory
 *              is "D" + BLAKE3(""); names are not hashed.
 * Symlinks are followed, as the reference does (with a depth limit: ELOOP).
 * Anything that is neither a regular file nor a directory is EINVAL.
 */

/*
 * Digest of a file or directory tree. threads caps the hashing threads
 * (0: one per online CPU). manifest may be NULL; otherwise it is filled
 * (after mtc_manifest_init). Returns 0, or -1 with errno on I/O error.
 */
int mtc_digest_path(const char *path, int threads, char out[MTC_DIGEST_LEN],
		    struct mtc_manifest *manifest);

struct mtc_digest_cache;

/*
 * Every byte mtc_digest_path and mtc_digest_file hash from now on is added
 * to *bytes (NULL: none), whichever thread hashes it: a progress line's
 * count (progress.h) for a program that hashes one thing at a time.
 */
void mtc_digest_meter(atomic_llong *bytes);

/* A large file is hashed in segments: aligned BLAKE3 subtrees of this many bytes. */
#define MTC_DIGEST_SEG_CHUNKS 4096
#define MTC_DIGEST_SEG_BYTES (MTC_DIGEST_SEG_CHUNKS * 1024LL)

/*
 * mtc_digest_path, with each file's digest taken from cache where it is
 * known there (digest_cache.h), and a file's segments hashed while it was
 * appended to taken from it too; the bytes of whole files so found in
 * *cached (may be NULL). A single file as path is always hashed.
 */
int mtc_digest_path_cached(const char *path, int threads, struct mtc_digest_cache *cache,
			   char out[MTC_DIGEST_LEN], struct mtc_manifest *manifest, long long *cached);

/* The digest of one regular file (64 hex), and its size when size is not NULL. */
int mtc_digest_file(const char *path, int threads, char out[MTC_DIGEST_LEN], long long *size);

/*
 * Hashing ahead of a commit (prehash.h) asks may_go(arg) before each piece
 * of work, a segment or a file, and stops there when it says 0.
 */
struct mtc_digest_gate {
	int (*may_go)(void *arg);
	void *arg;
};

/*
 * The digest of the open regular file fd, of the size st gives, read with
 * pread and never mapped, so that a file cut short under it is an error
 * (EAGAIN), not a SIGBUS: for files still being written. The segments the
 * cache (may be NULL) holds for it are not read again. A gate (may be NULL)
 * that stops it makes it EAGAIN.
 */
int mtc_digest_fd_read(int fd, const struct stat *st, int threads, struct mtc_digest_cache *cache,
		       const struct mtc_digest_gate *gate, char out[MTC_DIGEST_LEN]);

/*
 * The chaining values of segments [from, to) of the open file fd into cvs
 * (32 bytes each, at their index), read with pread on up to `threads`
 * threads: the end of those done, to unless the gate (may be NULL) stopped
 * them first; -1 with errno (EAGAIN: the file is shorter) when one cannot be.
 */
long long mtc_digest_fd_segments(int fd, size_t from, size_t to, int threads, uint8_t *cvs,
				 const struct mtc_digest_gate *gate);

/*
 * The digest of a directory whose children have the digests kids (n of
 * them, sorted here, in place): the rule above, in its one place.
 */
void mtc_digest_dir(char **kids, size_t n, char out[MTC_DIGEST_LEN]);

#endif
