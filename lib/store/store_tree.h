#ifndef MTC_STORE_TREE_H
#define MTC_STORE_TREE_H

#include <stddef.h>

#include "store.h"

/*
 * A file or a directory tree as objects: a file is the object KEY; a
 * directory's files are KEY/<relative path>, and each empty directory the
 * object KEY/<relative path>/ (so an empty directory survives the trip).
 */
struct mtc_tree {
	struct mtc_store_xfer *x; /* key, path and digest malloc'd */
	size_t n;
	long long bytes;
};

/* Collects path (a file, or a directory walked without following symlinks out of it). */
int mtc_tree_collect(const char *path, const char *key, struct mtc_tree *t, char *err, size_t errlen);
void mtc_tree_free(struct mtc_tree *t);

/*
 * Downloads every object under prefix (which ends in '/') into dir, keeping
 * the relative paths, each file made visible only when whole. Refuses names
 * that would leave dir. done lists what was fetched.
 */
int mtc_tree_download(struct mtc_store *s, const char *prefix, const char *dir, struct mtc_tree *done);

/*
 * A resumable fetch of objects into a staging dir that outlives the process
 * (a killed run continues where it stopped). Invariant: every file under dir
 * holds bytes of the generation that dir/.mtc-generations records for its
 * key; an item's file at dir/<rel> is whole once its size is the listed one;
 * dir/.partial/<rel> holds the first bytes of an interrupted get, or, when
 * dir/.slices/<rel> exists, the byte ranges of a sliced get that file records
 * as whole (mtc_store_xfer.slice_state). Nothing here
 * checks content: the caller verifies the whole tree afterwards.
 */
struct mtc_fetch_item {
	char *key; /* the object */
	char *rel; /* its path under dir ("<hash>.data/a/b"); ends in '/' for a directory */
	long long size, generation; /* as listed */
	int kept;		    /* out: already whole in dir */
};

struct mtc_fetch {
	struct mtc_fetch_item *v;
	size_t n;
	long long bytes; /* the sum of the listed sizes */
};

void mtc_fetch_add(struct mtc_fetch *f, const char *key, const char *rel, long long size,
		   long long generation);
/* Adds the directory rel_dir/ and every object under prefix (ending in '/') as rel_dir/<rest>. */
int mtc_fetch_add_prefix(struct mtc_store *s, const char *prefix, const char *rel_dir,
			 struct mtc_fetch *f);
void mtc_fetch_free(struct mtc_fetch *f);

/*
 * Decides what dir already holds: whole files of the listed size and
 * generation are kept, partial ones of the same generation continued, the
 * rest removed; then records the generations. *already: bytes kept or
 * continued (for a progress line).
 */
int mtc_fetch_prepare(struct mtc_store *s, const char *dir, struct mtc_fetch *f, long long *already);
/* Gets every item not kept, in parallel, each continued from its partial file. */
int mtc_fetch_run(struct mtc_store *s, const char *dir, struct mtc_fetch *f);

#endif
