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
	struct mtc_store_xfer *x; /* key and path malloc'd */
	size_t n;
	long long bytes;
};

/* Collects path (a file, or a directory walked without following symlinks out of it). */
int mtc_tree_collect(const char *path, const char *key, struct mtc_tree *t, char *err,
		     size_t errlen);
void mtc_tree_free(struct mtc_tree *t);

/*
 * Downloads every object under prefix (which ends in '/') into dir, keeping
 * the relative paths, each file made visible only when whole. Refuses names
 * that would leave dir. done lists what was fetched.
 */
int mtc_tree_download(struct mtc_store *s, const char *prefix, const char *dir,
		      struct mtc_tree *done);

#endif
