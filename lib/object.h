#ifndef MTC_OBJECT_H
#define MTC_OBJECT_H

#include <stddef.h>

#include "digest.h"

/*
 * The one way a <hash>.data becomes visible (mtc(7) §9.5): it is staged in a
 * private directory on the destination's filesystem, checked against its name
 * and its manifest, made durable, renamed in without replacing anything, and
 * its manifest is kept beside it. Every receiver — a restore from a backup, a
 * node's restore at a job's start, a fetch from a peer, the daemon taking a
 * push — goes through these functions; nothing else renames data into place.
 */

/*
 * Whether staged data may go by name, from what the receiver computed as it
 * wrote the bytes: got (the manifest of what arrived, NULL for a file) against
 * expected (NULL when there is none), then the name against merkle (the digest
 * of what arrived), or the Orbax logical digest read from path. 0 it may; 1 it
 * may not, with err (a file that differs is named before a directory).
 */
int mtc_object_check(const char *path, const char *name, const struct mtc_manifest *expected,
		     const struct mtc_manifest *got, const char *merkle, int threads, char *err,
		     size_t errlen);

/* Reads path whole, then mtc_object_check. -1 on I/O error (errno). */
int mtc_object_verify(const char *path, const char *name, const struct mtc_manifest *expected,
		      int threads, char *err, size_t errlen);

/*
 * path (a file or a tree, on final's filesystem) made durable, then renamed
 * to final unless something is there already, then final's directory synced.
 * 0 published; 1 final was there, and path is left where it was; -1 errno.
 */
int mtc_publish(const char *path, const char *final);

/* What is kept beside a published <hash>.data: a text, or a staged file renamed in. */
struct mtc_object_manifest {
	const char *text;
	size_t len;
	const char *file;
};

/*
 * Publishes staged data as dir/<name>.data (mtc_publish), then keeps its
 * manifest as dir/<name>.manifest when m is not NULL. A manifest that cannot
 * be kept is a warning: it is recomputed when asked for. Once the data is
 * there and its manifest kept, a manifest a peer sent ahead of it
 * (MTC_PENDING_MANIFEST) goes.
 * Returns as mtc_publish.
 */
int mtc_object_publish(const char *path, const char *dir, const char *name,
		       const struct mtc_object_manifest *m);

#endif
