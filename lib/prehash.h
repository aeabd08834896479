#ifndef MTC_PREHASH_H
#define MTC_PREHASH_H

#include "config.h"
#include "digest_cache.h"
#include "threads.h"

/*
 * Hashing a step while the framework writes it, so that its commit after the
 * framework's rename finds its files' digests known (mtc(7) §3.6). A thread
 * looks at the local dir every MTC_PREHASH_PASS_S (or less often, so that
 * looking takes at most a fifth of its time): at what a framework is
 * writing or has just saved there (Orbax's <step>.orbax-checkpoint-tmp*,
 * NeMo's step=<step>, a step dir <step>, this node's .save) and hashes every
 * regular file of it that is quiet (digest_cache.h) into the cache, one file
 * at a time, read and never mapped (a file cut short under it is skipped).
 * Of an OCDBT data file still growing (orbax), whose bytes tensorstore never
 * writes twice, it hashes the whole segments written so far. It yields to a
 * commit that holds the cache before each piece (a segment, a file), and in
 * the idle class hashes a piece only on a CPU nothing else wants, waiting for
 * one up to MTC_PREHASH_SPARE_WAIT_S (then it stops till the next pass).
 */
#define MTC_PREHASH_PASS_S 0.1
#define MTC_PREHASH_SPARE_WAIT_S 1.0

/* The most segments of a growing file hashed at once (256 MiB): a commit waits for no more. */
#define MTC_PREHASH_BATCH 64

struct mtc_prehash;

/* Starts the thread, and its hashing threads, in class bg; NULL (with an error logged) when it cannot be. */
struct mtc_prehash *mtc_prehash_start(const char *dir, const struct mtc_config *cfg, int threads,
				      enum mtc_background bg, struct mtc_digest_cache *cache);

/* Stops it after the file it is hashing, and frees it. NULL is a no-op. */
void mtc_prehash_stop(struct mtc_prehash *p);

/* One pass, on the calling thread and in its class: the bytes it hashed. For tests. */
long long mtc_prehash_pass(const char *dir, const struct mtc_config *cfg, int threads,
			   struct mtc_digest_cache *cache);

#endif
