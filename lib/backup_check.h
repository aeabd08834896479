#ifndef MTC_BACKUP_CHECK_H
#define MTC_BACKUP_CHECK_H

#include <stddef.h>

#include "backups.h"
#include "store.h"

/*
 * Whether a backup's data is intact (mtc(7) §6.5), in two depths. Both
 * look at the data of the newest step's metas, each <hash>.data once, against
 * the <hash>.manifest beside it.
 *
 * mtc_backup_check_sizes, cheap: one recursive listing; every file the
 * manifest names must be there with its size. A valid backup that fails
 * becomes MTC_BACKUP_DAMAGED with the first difference as its reason. Data
 * with no manifest (written by the reference replicator, or --no-verify)
 * cannot be checked this way and passes. bytes gets the backup's total.
 * -1 only when storage fails.
 *
 * mtc_backup_verify, deep: re-hashes every byte, streamed from the store
 * with parallel readers and written nowhere, against the manifest and the
 * name. A logical name (Orbax) or data without a manifest needs the tree
 * itself: that data is fetched into a private directory under $TMPDIR,
 * checked, and removed. 0 intact, 1 damaged (why names the first file that
 * differs), -1 storage error (why).
 */
int mtc_backup_check_sizes(struct mtc_store *s, struct mtc_backup_info *info, long long *bytes);

struct mtc_verify_stats {
	long long objects, files, bytes;
};

int mtc_backup_verify(struct mtc_store *s, const struct mtc_store_options *opt,
		      const struct mtc_backup_info *info, int threads, mtc_store_progress_fn progress,
		      void *arg, struct mtc_verify_stats *stats, char *why, size_t whylen);

#endif
