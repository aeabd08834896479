#ifndef MTC_WALK_H
#define MTC_WALK_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * The one directory walker. It visits every entry below a root directory,
 * depth first, each directory before its contents; a directory's names are
 * read whole (and closed) before any is visited, so an open directory never
 * waits on its children and a walk holds one descriptor whatever the depth.
 * The paths it hands out live in one buffer: no allocation per entry.
 */

enum {
	MTC_WALK_SORTED = 1,  /* a directory's names by strcmp; else in readdir order */
	MTC_WALK_PHYS = 2,    /* lstat: a symlink is an entry, never followed */
	MTC_WALK_BENEATH = 4, /* resolved beneath rootfd (beneath.h) */
	MTC_WALK_POST = 8,    /* each directory visited again after its contents */
};

struct mtc_walk_entry {
	const char *path; /* root/rel */
	const char *rel;  /* below the root, '/'-separated; "" is the root */
	const char *name; /* the last component */
	int depth;	  /* 1 for the root's children */
	struct stat st;
	int post; /* MTC_WALK_POST's second visit; kids: how many names it held */
	size_t kids;
	/*
	 * Not 0: the errno of an entry that could not be stat'ed (reading 0,
	 * st not valid) or of a directory that could not be read (reading 1;
	 * ELOOP when it is deeper than max_depth); the walk goes on past it
	 * unless the visit stops it.
	 */
	int error;
	int reading;
};

/*
 * What a visit returns: 0 to go on (into a directory's contents), 1 to go on
 * without entering this directory, -1 to stop the walk (which then returns
 * -1 with the visit's errno).
 */
typedef int mtc_walk_visit(const struct mtc_walk_entry *e, void *arg);

struct mtc_walk {
	const char *root;
	int flags;
	int max_depth; /* the deepest directory read; the root is 0 */
	int rootfd;    /* MTC_WALK_BENEATH: root's open directory */
	mtc_walk_visit *visit;
	void *arg;
};

/* 0 when every visit went on; -1 when one stopped the walk (errno kept). */
int mtc_walk(const struct mtc_walk *w);

/* rm -rf without following symlinks; a missing path is not an error. */
int mtc_remove_tree(const char *path);

#endif
