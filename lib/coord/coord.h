#ifndef MTC_COORD_H
#define MTC_COORD_H

#include <stddef.h>

#include <jansson.h>

/*
 * The coordinator of mtc(7) §5, run by rank 0's daemon. Three kinds of
 * round, each answered when all N ranks have reported:
 *   restore       report: {"rank", "session", "address", "config", "meta-files",
 *                          "data-files", "backups"?, "restore-version"?}
 *                 answer: the rank's view of the LKG plan (lkg.h) plus "plan-step"
 *   restore-done  report: {"rank", "session", "ok", "error"?}
 *                 answer: {"ok"} (false when a rank failed: "error" says which)
 *   sync          report: {"rank", "session", "replicated-step", "backup-running",
 *                          "backup-requested"?, "last-backup": {"name", "step"}?,
 *                          "config"}
 *                 answer: {"agreed-step", "backup": {"name", "step"}?}
 *                 (a request counts once the agreed step is the requester's;
 *                 a newer last-backup than the coordinator's own is adopted)
 * and heartbeat: {"rank", "session"}, answered at once.
 *
 * Every answer carries "status": "done" | "waiting" | "failed" (HTTP 503
 * with "failed" while shutting down: report to the next coordinator). A report
 * waits at most poll_s (its "wait" when shorter) for its round; "waiting" asks the rank to report
 * again (a rank that reports twice replaces its earlier report). "failed"
 * comes with "error": the round timed out, or a rank that had been heard
 * from fell silent for heartbeat_s (it vanished), or a report was invalid.
 * A failed round is over for every rank that had reported to it; the next
 * report opens a new round. The agreed step is the minimum reported.
 *
 * A report for a rank must come with that rank's credential (peer_auth.h),
 * or the job's plain secret unless strict_ranks; else 403, logged once per
 * rank. GET /v1/coord/status reads with either. A credential or a config of
 * another job than the one served (opts.job, else the first a report names)
 * is 403 on every endpoint. The job's settings come from rank 0's config, and
 * "backups", "restore-version" and "last-backup" from rank 0 only: another
 * rank's are dropped, logged once per rank.
 *
 * A report that does not hold together is refused with 400 and logged, and
 * never joins a round: steps in [0, MTC_COORD_STEP_MAX], metas naming nodes
 * in [0, nodes) and hashes in the grammar, a "last-backup" whose name parses
 * and is not later than the coordinator's clock plus MTC_COORD_SKEW_S.
 */
#define MTC_COORD_STEP_MAX (1LL << 53)
#define MTC_COORD_SKEW_S 600

/*
 * A report is read into what the coordinator uses (mtc(7) §5.1): other keys
 * are dropped while it is parsed, a list longer than its cap is refused (400)
 * as it is read, and the lists are kept packed (coord_report.h), so that a
 * round's memory is bounded by nodes whatever the ranks send. With W the
 * job's workers-per-node and P its peers (peers-per-node, else the length of
 * peer-ranks; at least 1), both from rank 0's config (until rank 0 is heard,
 * the reporting rank's own): a rank lists at most
 * MTC_COORD_STEPS_HELD x W x (1 + P) metas (at least 32, at most
 * MTC_COORD_LIST_CAP) and as many data; rank 0 at most MTC_COORD_BACKUPS_MAX
 * backups of at most N x W metas each (at most
 * MTC_COORD_BACKUP_CAP), and twice that cap in all; a config at most
 * MTC_COORD_PEERS_MAX peer-ranks; a failure's reason is cut to
 * MTC_COORD_ERROR_MAX bytes.
 */
#define MTC_COORD_STEPS_HELD 8
#define MTC_COORD_LIST_CAP(nodes) \
	((size_t)(196608 / (nodes) < 192 ? 192 : 196608 / (nodes) > 4096 ? 4096 : 196608 / (nodes)))
#define MTC_COORD_BACKUPS_MAX 8
#define MTC_COORD_BACKUP_CAP(nodes) ((size_t)((nodes) >= 1024 ? 8 * (size_t)(nodes) : 8192))
#define MTC_COORD_PEERS_MAX 64
#define MTC_COORD_ERROR_MAX 1024

struct mtc_coord_opts {
	int nodes;
	double round_s;	    /* a round fails this long after it opened (default 300) */
	double heartbeat_s; /* a rank silent this long has vanished (default 30) */
	double poll_s;	    /* longest wait of one report (default 20) */
	int strict_ranks;   /* the job's plain secret may not report for a rank */
	const char *job;    /* the job served (NULL: the first a report names) */
};

void mtc_coord_defaults(struct mtc_coord_opts *o);

struct mtc_coord;

struct mtc_coord *mtc_coord_new(const struct mtc_coord_opts *o);
/*
 * Handles POST /v1/coord/<kind> with a JSON body; blocks up to poll_s. Returns
 * the HTTP status and the JSON answer (malloc'd text) in *answer. The report
 * is taken as from a daemon without a token; mtc_coord_route checks who sent it.
 */
int mtc_coord_handle(struct mtc_coord *c, const char *kind, const char *body, size_t len, char **answer);
/* Wakes every waiting report with "failed" and refuses new ones. */
void mtc_coord_shutdown(struct mtc_coord *c);
void mtc_coord_free(struct mtc_coord *c);

/*
 * The sync decision, a pure function: is a backup due? now is UTC seconds;
 * last_time/last_step describe the last backup named (-1: none yet).
 * Minutes and steps are the config's intervals (-1: absent). Returns 1 when
 * due, with the backup name in name.
 */
int mtc_coord_backup_due(long long agreed, int any_running, int requested, long long minutes,
			 long long steps, long long now, long long last_time, long long last_step,
			 const char *last_name, char name[17]);

/*
 * The routes the peer daemon hands to the coordinator (peer_server.h hooks).
 * mtc_coord_admit judges a request before its body is read: an unknown
 * endpoint is 404, a wrong method 405, and each endpoint takes a body sized
 * for its reports (a restore report lists a node's metas and data and the
 * backups' metas, so its limit grows with nodes; the others are small).
 */
#define MTC_COORD_PREFIX "/v1/coord/"
int mtc_coord_admit(void *coord, const char *method, const char *path, size_t *max_body, char *err,
		    size_t errlen);
struct mtc_peer_cred;
int mtc_coord_route(void *coord, const struct mtc_peer_cred *who, const char *method, const char *path,
		    const char *body, size_t len, char **answer);

/*
 * mtc_coord_route without blocking, for a server that holds a waiting
 * request without a thread: returns as mtc_coord_route does, or 0 with *wait
 * set when the report waits for its round. Then wake(arg) is called once,
 * from another thread, when its answer is ready, its wait is over or the
 * coordinator stops; it runs under the coordinator's lock, so it may take
 * no lock that is held while calling into the coordinator.
 * mtc_coord_collect gives a wait's answer ("waiting" when it is collected
 * before it is woken) and frees it.
 */
int mtc_coord_start(void *coord, const struct mtc_peer_cred *who, const char *method, const char *path,
		    const char *body, size_t len, char **answer, void (*wake)(void *arg), void *arg,
		    void **wait);
int mtc_coord_collect(void *coord, void *wait, char **answer);

/* The coordinator's figures for GET /metrics: ranks heard and silent, rounds by outcome. */
struct mtc_buf;
void mtc_coord_metrics(void *coord, struct mtc_buf *t);

#endif
