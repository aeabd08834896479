#ifndef MTC_DATA_NAME_H
#define MTC_DATA_NAME_H

#include <stddef.h>

#include "digest.h"

/*
 * Whether the data at path may go by `name` (mtc(7) §3.6): name is its
 * merkle digest (digest.h), or name is the Orbax logical digest of the tree
 * (orbax_digest.h), which replicas that wrote different bytes share. merkle
 * is the merkle digest of what is at path, already computed by the caller
 * (while checking it against its manifest). The logical digest binds the
 * name to the OCDBT key/values; the manifest binds every file's bytes, so
 * callers check both.
 *
 * 0 it may; 1 it may not (err says what, including a store that cannot be
 * read: the caller has just read the same tree whole).
 */
int mtc_data_name_check(const char *path, const char *name, const char *merkle, int threads, char *err,
			size_t errlen);

#endif
