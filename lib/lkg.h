#ifndef MTC_LKG_H
#define MTC_LKG_H

#include <stddef.h>

#include <jansson.h>

#include "naming.h"

/*
 * The last known good step (mtc(7) §7), a pure function: the gathered
 * inventories in, the restore plan out. Nothing here touches the disk or the
 * network.
 *
 * Inventory (the reference's restore-message fields):
 *   {"job-name": S, "nodes": N, "workers-per-node": W (default 1),
 *    "assume-data-parallelism": D?, "restore-version": NAME?,
 *    "peers-per-node": P?,                   (for replication-peers)
 *    "ranks": [{"node-rank": R, "node-address": URL?, "peer-ranks": [..]?,
 *               "meta-files": [[step, node, worker, hash], …],
 *               "data-files": [hash, …]}, …],
 *    "backups": [{"name": "YYYY-MM-DD_HH-MM",
 *                 "meta-files": [[step, node, worker, hash], …],
 *                 "data-files": [hash, …]}, …]?}
 * A rank missing from "ranks" has reported nothing (it holds no data); its
 * metas may still be known from the copies its peers hold.
 *
 * The rule: walk the cluster's steps newest first; a step is valid when
 * every node x worker has a meta whose hash some rank holds. A node's own
 * meta stands for it; without one, its copies on other ranks do (the first
 * whose data is held, when they disagree). With D > 1 dividing N, nodes form
 * D rows of P = N/D columns: a node x worker with no meta takes its column's.
 * A column whose replicas' metas of a worker differ is skipped, as the
 * reference does: none of its metas is inferred, so a node of it with no
 * meta (a new replica) makes the step invalid. A node whose data nobody
 * holds makes the step invalid. Disagreements (copies of one meta, or replicas of one column) are
 * errors in the plan and counted in "conflicts". First valid step wins; if
 * none, the backups newest first by name, each judged on its own metas and
 * data only. With "restore-version" only that backup is considered, and if
 * it is missing or not valid the plan is empty: no fallback.
 *
 * Plan:
 *   {"job-name", "nodes", "workers-per-node",
 *    "step": S | null, "source": "cluster" | "backup" | "none",
 *    "backup": NAME (source backup only), "restore-version": NAME (if given),
 *    "reason": why nothing is valid (source none only),
 *    "errors": ["step 9: column 0 worker 0: replicas disagree …", …],   always present
 *    "conflicts": disagreements in the chosen step (0 when none),
 *    "rejected": [{"source": "cluster"|"backup", "backup"?, "step", "reason"}, …],
 *    "ranks": [{"node-rank", "node-address" (null when unknown), "reported",
 *               "replication-peers": [rank, …] (when peers are known),
 *               "metas": [{"worker", "hash", "inferred"}, …],
 *                                                     (empty when step null)
 *               "fetch": [{"hash", "from": [rank, …], "holders", "backup",
 *                          "alternatives"?: [{"hash", "from", "backup"}, …]}, …]}
 *              … one per rank 0 … N-1]}
 * "fetch" lists the hashes a rank needs and does not hold; "from" names up
 * to MTC_LKG_MAX_SOURCES ranks that hold it, the first one preferred, the
 * preferred sources spread so that each holder serves about as many fetches
 * as the others; "holders" counts every rank that has it; "backup" is true
 * when the plan's backup holds it (source backup only). A fetch with an
 * empty "from" comes from the backup only. With data parallelism,
 * "alternatives" lists the column's other data the source holds (row order):
 * a restore whose every copy of "hash" fails verification takes the first of
 * those it can fetch and verify instead.
 */

#define MTC_LKG_MAX_SOURCES 8

/*
 * The plan for an inventory. NULL with a one-line reason in err only when
 * the inventory is malformed (a missing or mistyped field, a rank out of
 * range or reported twice, a hash not in the grammar); an inventory with
 * nothing valid yields a plan whose step is null.
 */
json_t *mtc_lkg_plan(json_t *inventory, char *err, size_t errlen);

/*
 * A hash in MTC_LKG_HASH_BYTES: 'D' (or 0 for a hash without it), then the
 * 32 bytes its 64 hex digits spell. pack: -1 when text is not a hash.
 */
#define MTC_LKG_HASH_BYTES 33
int mtc_lkg_hash_pack(const char *text, unsigned char out[MTC_LKG_HASH_BYTES]);
void mtc_lkg_hash_text(const unsigned char in[MTC_LKG_HASH_BYTES], char out[MTC_HASH_MAX + 1]);

/*
 * The lists of an inventory held compactly (the coordinator's, mtc(7) §5.1):
 * mtc_lkg_plan_listed plans as mtc_lkg_plan would for the same inventory with
 * ranks[r]'s lists as rank r's "meta-files" and "data-files" and backups[i]'s
 * as those of the inventory's i-th backup; the inventory's entries hold no
 * lists of their own. ranks has nodes entries.
 */
struct mtc_lkg_meta {
	long long step;
	int node, worker;
	unsigned char hash[MTC_LKG_HASH_BYTES];
};
struct mtc_lkg_list {
	struct mtc_lkg_meta *metas;
	size_t n_metas;
	unsigned char (*data)[MTC_LKG_HASH_BYTES];
	size_t n_data;
};
struct mtc_lkg_listing {
	const struct mtc_lkg_list *ranks, *backups;
	size_t n_backups;
};
json_t *mtc_lkg_plan_listed(json_t *inventory, const struct mtc_lkg_listing *listing, char *err,
			    size_t errlen);

/*
 * What one rank acts on, in the shape of the reference's restore answer:
 *   {"step": S | null, "source", "backup"?, "errors",
 *    "replication-peers": [address, …],
 *    "metas": [{"worker", "hash"}, …],
 *    "fetch": [{"hash", "peers": [address, …], "backup": bool,
 *               "alternatives"?: [{"hash", "peers", "backup"}, …]}, …]}
 * with ranks turned into their node-address (ranks with no address are
 * left out of "peers"). NULL when rank is not in the plan.
 */
json_t *mtc_lkg_rank_view(json_t *plan, int rank);

#endif
