#ifndef MTC_NODE_STATUS_H
#define MTC_NODE_STATUS_H

/*
 * What a node's steady loop tells its daemon, for the operator's metrics:
 * a small JSON file in the local dir, written atomically when it changes
 * and read by GET /metrics. The handshake's cleanup removes it at each start
 * of the job, so no figure outlives the job it describes.
 */
#define MTC_NODE_STATUS_FILE ".mtc-status.json"

struct mtc_node_status {
	int rank;
	long long committed, replicated; /* steps, -1: none yet */
	long long backup_step;		 /* the last backup this node finished, -1: none */
	long long backup_time;		 /* its end, UTC seconds */
	long long backups_failed;
};

int mtc_node_status_write(const char *dir, const struct mtc_node_status *st);
/* 0, or -1 when there is none (or it is not a regular file). */
int mtc_node_status_read(const char *dir, struct mtc_node_status *st);

#endif
