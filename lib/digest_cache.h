#ifndef MTC_DIGEST_CACHE_H
#define MTC_DIGEST_CACHE_H

#include <stdint.h>
#include <sys/stat.h>

/*
 * Digests worked out before they are needed: a file's BLAKE3 (64 hex), kept
 * under the file's identity and the figures every write changes (size, mtime and ctime to the ns). It is
 * git's racy-clean rule with a margin: an entry is put only for a file whose
 * ctime was MTC_DIGEST_QUIET_S old when its hashing began and whose figures
 * were the same when it ended. A later write stamps a newer ctime (the
 * kernel's clock for it lags by at most one tick, 10 ms at HZ=100), so an
 * entry is never found for a file that changed. The one write it cannot see
 * is a single write call that began before the margin and still overwrites
 * bytes in place (an extending one changes the size); a digest it got wrong
 * would be refused downstream, where every copy is verified. Thread-safe.
 */
#define MTC_DIGEST_QUIET_S 0.05

struct mtc_digest_cache;

struct mtc_digest_cache *mtc_digest_cache_new(void);
void mtc_digest_cache_free(struct mtc_digest_cache *c);

/*
 * st, taken after mtc_wall_now() (clock.h, the clock of ctimes) read `since`,
 * is of a regular file unchanged for MTC_DIGEST_QUIET_S.
 */
int mtc_digest_cache_quiet(const struct stat *st, double since);

/*
 * The digest of the file st describes: 1 with hex filled when known, else 0.
 * A hit marks the file used now (mtc_digest_cache_sweep).
 */
int mtc_digest_cache_get(struct mtc_digest_cache *c, const struct stat *st, char hex[65]);

/*
 * Keeps hex as the file's digest. before is the file's stat taken before the
 * hashing began and after mtc_wall_now() read `since`, after one taken after
 * it ended; nothing is kept unless before is quiet and they agree.
 */
void mtc_digest_cache_put(struct mtc_digest_cache *c, double since, const struct stat *before,
			  const struct stat *after, const char *hex);

/*
 * The start of a file still being appended to, whose bytes once written are
 * never written again (an OCDBT data file): the chaining values of its first
 * n segments (digest.h's MTC_DIGEST_SEG_BYTES, BLAKE3 subtrees at their place
 * in the file), kept under the file's identity alone: device, inode and birth
 * time (statx), so that a new file given a deleted one's inode is another
 * file. A filesystem that keeps no birth time keeps no prefix.
 * prefix gives n and, in *cvs (32 * n bytes, malloc'd; NULL when n is 0),
 * their values, for the file st describes, open as fd (or, when fd < 0, at
 * path); 0 for a file now shorter than them. put_prefix adds segments
 * [from, n) of cvs (which holds all n) when the prefix known is [0, from).
 */
size_t mtc_digest_cache_prefix(struct mtc_digest_cache *c, const struct stat *st, int fd,
			       const char *path, uint8_t **cvs);
void mtc_digest_cache_put_prefix(struct mtc_digest_cache *c, const struct stat *st, int fd, size_t from,
				 size_t n, const uint8_t *cvs);

/*
 * Drops every file not found or put for keep_s. MTC_DIGEST_KEEP_S is long
 * enough for a step renamed twice between two looks at it, or waiting for
 * its commit.
 */
#define MTC_DIGEST_KEEP_S 60
void mtc_digest_cache_sweep(struct mtc_digest_cache *c, double keep_s);

/* How many files the cache holds entries for. */
size_t mtc_digest_cache_files(struct mtc_digest_cache *c);

/*
 * The cache's one worker slot, so that a digest that needs the answers now
 * does not hash again what a background hash is finishing. hold waits for
 * the slot's current work to end, MTC_DIGEST_HOLD_WAIT_S at most (then the
 * holder hashes beside it), and keeps new work out until release;
 * begin takes the slot for one piece of work (0 when it is held, and then
 * nothing may be done), end gives it back.
 */
#define MTC_DIGEST_HOLD_WAIT_S 0.05
void mtc_digest_cache_hold(struct mtc_digest_cache *c);
void mtc_digest_cache_release(struct mtc_digest_cache *c);
int mtc_digest_cache_begin(struct mtc_digest_cache *c);
void mtc_digest_cache_end(struct mtc_digest_cache *c);
/* Whether a hold is on: work in the slot should end at its next piece. */
int mtc_digest_cache_held(struct mtc_digest_cache *c);

#endif
