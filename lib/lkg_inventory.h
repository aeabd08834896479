#ifndef MTC_LKG_INVENTORY_H
#define MTC_LKG_INVENTORY_H

#include <jansson.h>

#include "inventory.h"
#include "store/store.h"

/*
 * Pieces of the LKG inventory (lkg.h) gathered from where they live: a
 * local dir's or a peer's inventory (inventory.h), and a backup read through
 * its store (backups.h).
 */

/*
 * The head of an LKG inventory, the one place that decides what a plan
 * sees of the job: {"job-name" (omitted when NULL), "nodes",
 * "workers-per-node", "assume-data-parallelism" (when > 1), "peers-per-node"
 * (when > 0), "ranks": []}. The coordinator, a standalone restore and
 * mtc-lkg --dir build theirs with it, so a preview plans as a restart does.
 */
json_t *mtc_lkg_inventory_head(const char *job, int nodes, int workers, int data_parallelism,
			       int peers_per_node);

/*
 * {"node-rank", "node-address", "meta-files": [[step, node, worker, hash], …],
 *  "data-files": [hash, …]} for one rank; only the metas of job (every meta
 * when job is NULL); address may be NULL.
 */
json_t *mtc_lkg_rank_entry(const struct mtc_inventory *inv, int rank, const char *address,
			   const char *job);

/*
 * {"name", "meta-files", "data-files"} for one backup: the metas of its
 * newest step, and the hashes of those whose data the backup holds.
 * nodes/workers <= 0: inferred. valid (may be NULL) says whether the backup
 * is valid. NULL only when storage fails (the reason is mtc_store_error(s)).
 */
json_t *mtc_lkg_backup_entry(struct mtc_store *s, const char *name, int nodes, int workers, int *valid);

#endif
