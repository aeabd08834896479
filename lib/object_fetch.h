#ifndef MTC_OBJECT_FETCH_H
#define MTC_OBJECT_FETCH_H

#include <stddef.h>

#include "object.h"
#include "store/store.h"

/* What a fetch from a backup brought. */
struct mtc_object_fetched {
	long long bytes, kept;		       /* listed, and already in staging */
	int started;			       /* bytes began to move into staging */
	struct mtc_object_manifest *manifests; /* [i] for hashes[i]: the text, or none */
	size_t n;
};

/*
 * Each <hash>.data of hashes (a duplicate fetched once) from the backup whose
 * objects are <prefix><hash>.data in s, into staging/<hash>.data: what staging
 * holds already is kept (a killed run continues, store_tree.h), the rest is
 * fetched in parallel, with a progress bar on stderr when progress is set;
 * then each is checked against its name and the backup's <hash>.manifest
 * (mtc_object_verify), ready for mtc_object_publish. Nothing is fetched
 * when staging's filesystem has no room for it (MTC_FAILURE).
 * MTC_OK; MTC_NOTFOUND when a hash is not in the backup;
 * MTC_INTEGRITY when a copy is not what its name or manifest says, or a
 * manifest does not parse; else the storage error's code. err says which.
 */
enum mtc_result mtc_object_fetch(struct mtc_store *s, const char *prefix, char *const *hashes, size_t n,
				 const char *staging, int threads, int progress,
				 struct mtc_object_fetched *out, char *err, size_t errlen);
void mtc_object_fetched_free(struct mtc_object_fetched *f);

#endif
