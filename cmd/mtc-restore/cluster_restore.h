#ifndef MTC_CLUSTER_RESTORE_H
#define MTC_CLUSTER_RESTORE_H

#include <jansson.h>

#include "config.h"

/*
 * The restore of one node at a job's start (mtc(7) §5.4; §3.3, §3.8, §7):
 *   1. report the inventory (and, on rank 0, the backups and restore.version)
 *   2. get this rank's view of the LKG plan from the coordinator, or compute
 *      it alone (standalone)
 *   3. write replicator.prerestore
 *   4. fetch every missing <hash>.data: the plan's peers in order, then the
 *      backup; each copy verified against its name before it is renamed in
 *   5. write this node's .meta files of the step
 *   6. the restore-done barrier (every node fetched, or all fail)
 *   7. GC to the restored step
 *   8. the .restore markers, last: they wake the training job
 * A failure after step 1 is CRITICAL (replicator.failed) so the training job
 * stops with the reason instead of waiting for a marker.
 */
struct mtc_cluster_restore_opts {
	const char *dir;
	const struct mtc_config *cfg;
	const char *backup;	 /* LOCATION (the job name is added), or NULL */
	const char *coordinator; /* URL; NULL: decide alone */
	const char *address;	 /* this node's peer URL as the others reach it, or NULL */
	const char *token;	 /* bearer token for peers and coordinator, or NULL */
	const char *store_token_file;
	const char *store_s3_endpoint; /* s3:// endpoint (store.h), or NULL */
	long long slice_threshold;     /* gs:// sliced fetches (store.h); 0: default */
	int slices;
	double timeout_s;   /* for the whole restore (default 600) */
	double heartbeat_s; /* heartbeat interval (default 5) */
	int threads;
};

/*
 * Returns an exit code: 0 restored, NOTFOUND nothing to restore (the empty
 * markers are written), FAILURE/TIMEOUT/INTEGRITY otherwise. *summary (may
 * be NULL) gets {"step", "source", "backup"?, "fetched", "bytes", "seconds"}.
 */
int mtc_cluster_restore(const struct mtc_cluster_restore_opts *o, json_t **summary);

#endif
