#ifndef MTC_NODE_STATUS_H
#define MTC_NODE_STATUS_H

/*
 * What a node's steady loop tells its daemon, for the operator's metrics:
 * a small JSON file in the local dir, written atomically when it changes
 * and read by GET /metrics. The handshake's cleanup removes it at each start
 * of the job, so no figure outlives the job it describes.
 */

#include "metrics.h"

/*
 * Time to safety, per step: seconds from the step's appearance (the last
 * change the framework made to it, its rename for Orbax) to committed, to on
 * every peer, and to in a backup (mtc(7) §5).
 */
enum mtc_safe_stage { MTC_SAFE_COMMIT, MTC_SAFE_PEERS, MTC_SAFE_BACKUP, MTC_SAFE_STAGES };

struct mtc_node_status {
	int rank;
	long long committed, replicated; /* steps, -1: none yet */
	long long backup_step;		 /* the last backup this node finished, -1: none */
	long long backup_time;		 /* its end, UTC seconds */
	long long backups_failed;
	struct mtc_histogram safe[MTC_SAFE_STAGES];
};

/* Every figure unknown; the time-to-safety histograms empty. */
void mtc_node_status_init(struct mtc_node_status *st, int rank);
const char *mtc_safe_stage_name(enum mtc_safe_stage stage); /* "commit", "peers", "backup" */
/* The figures for GET /metrics. */
void mtc_node_status_metrics(struct mtc_node_status *st, struct mtc_buf *t);
/* 1 when the figures a write would carry differ. */
int mtc_node_status_changed(const struct mtc_node_status *a, const struct mtc_node_status *b);

int mtc_node_status_write(const char *dir, const struct mtc_node_status *st);
/* 0, or -1 when there is none (or it is not a regular file); st is initialised either way. */
int mtc_node_status_read(const char *dir, struct mtc_node_status *st);

#endif
