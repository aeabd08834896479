#ifndef MTC_COMMIT_H
#define MTC_COMMIT_H

#include "config.h"
#include "digest.h"

/*
 * The local commit of mtc(7) §3.5: a saved step becomes <hash>.data and
 * <job>-s<step>-n<rank>-w<w>.meta. See commit.c for the crash-safe order.
 */

struct mtc_commit_result {
	long long step;
	int worker;
	char hash[MTC_DIGEST_LEN];
	long long bytes;
	double seconds;
	int redundant;	 /* <hash>.data existed: the new copy was deleted */
	long long known; /* bytes whose digests the cache knew (hashed before the commit) */
	double appeared; /* when the framework last changed the step (its ctime), 0: unknown */
};

typedef void mtc_commit_cb(const struct mtc_commit_result *r, void *arg);

/*
 * A step a scan saw but did not take: a step dir (or, for pytorch, a save)
 * written to within the quiet time, a pytorch step whose workers' saves
 * are not all there yet (saves < workers), or a save that kept changing
 * while it was hashed (saves -1).
 */
struct mtc_commit_pending {
	long long step;
	int saves, workers; /* pytorch; 0 and 0 for a step dir */
};

struct mtc_commit_pendings {
	struct mtc_commit_pending *v;
	size_t n;
};

struct mtc_commit_opts {
	const char *dir;
	const struct mtc_config *cfg;
	int threads;	/* hashing threads, 0: one per CPU */
	double quiet_s; /* a created step dir / .save is taken after this long unchanged */
	mtc_commit_cb *cb;
	void *arg;
	struct mtc_digest_cache *cache; /* digests known before the commit (prehash.h), or NULL */
};

/* One pass: finishes interrupted commits, commits every ready step. Count, or -1. */
int mtc_commit_scan(const struct mtc_commit_opts *o);

/* mtc_commit_scan, and the steps it left pending in p (emptied first; the caller frees p->v). */
int mtc_commit_scan_pending(const struct mtc_commit_opts *o, struct mtc_commit_pendings *p);

/* Scans, then keeps committing as steps arrive (inotify) until timeout_s (< 0: never). */
int mtc_commit_watch(const struct mtc_commit_opts *o, double timeout_s);

/* Renames dir/name into the trash, then deletes it: no half-deleted entry keeps its name. */
int mtc_trash(const char *dir, const char *name);

#endif
