#ifndef MTC_BACKUP_CHECK_H
#define MTC_BACKUP_CHECK_H

#include <stddef.h>

#include "backups.h"
#include "digest.h"
#include "store/store.h"

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
 * checked, and removed. 0 intact, 1 damaged (err names the first file that
 * differs), -1 storage error (err).
 */
int mtc_backup_check_sizes(struct mtc_store *s, struct mtc_backup_info *info, long long *bytes);

/*
 * mtc_backup_inspect and then the size check: a backup's state as the
 * programs show it. bytes NULL: the size check runs only for a backup that
 * reads as valid (the others have nothing to lose). -1 when storage fails.
 */
int mtc_backup_judge(struct mtc_store *s, const char *name, int nodes, int workers,
		     struct mtc_backup_info *info, long long *bytes);

/*
 * The files of manifest m that a listing lacks or holds at another size,
 * data being the data's key (a file) or its files' key prefix without the
 * '/' (a tree): returns how many. bytes (may be NULL) gets the bytes of the
 * files that are whole; first (may be NULL) the first that is not, and
 * found its listed size (-1: not listed).
 */
size_t mtc_backup_data_missing(const struct mtc_store_list *l, const char *data,
			       const struct mtc_manifest *m, long long *bytes,
			       const struct mtc_manifest_entry **first, long long *found);

struct mtc_verify_stats {
	long long objects, files, bytes;
};

int mtc_backup_verify(struct mtc_store *s, const struct mtc_store_options *opt,
		      const struct mtc_backup_info *info, int threads, mtc_store_progress_fn progress,
		      void *arg, struct mtc_verify_stats *stats, char *err, size_t errlen);

#endif
