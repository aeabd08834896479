#ifndef MTC_RANK_SERVER_H
#define MTC_RANK_SERVER_H

#include <stddef.h>

/*
 * The rank server (mtc(7) §5.7): the coordinator's round that hands out node
 * ranks (= JAX process ids) before the training job starts. Each node posts
 * to /v1/coord/ranks
 *   {"index": its pod index in [0, nodes), "session", "host": where JAX can
 *    reach it, "holds": [[step, rank], ...] the ranks whose .meta and .data
 *    its RAM holds (at most MTC_RANK_HOLDS_MAX)}
 * and, once every index has reported, is answered
 *   {"status": "done", "process-id", "coordinator-host": the host of process
 *    0, "step": the step the locality is judged by (null: none), "on-data":
 *    nodes given a rank they hold, "moved": [[rank, index], ...] for every
 *    rank that is not at the pod of its own index, "nodes": the job's nodes}
 * The ranks come from mtc_rank_assign over the newest step every rank is held
 * at (else the newest held anywhere) and hold for the coordinator's life: a
 * later report of an index gets its rank again. A round that is not complete
 * round_s after its first report fails every waiting node ("failed" and why).
 * A second session reporting for an index replaces the first, whose waiting
 * report is answered 409 at once, as is any later report of that session.
 * Every function runs under the coordinator's lock.
 */
#define MTC_RANK_HOLDS_MAX 256

struct mtc_rank_server;

struct mtc_rank_server *mtc_rank_server_new(int nodes, double round_s);
void mtc_rank_server_free(struct mtc_rank_server *rs);

/*
 * A report: its HTTP status and answer, or 0 when it waits for the round, with
 * its index and session in *index and session[64]. *superseded is the session
 * it replaced ("" when none): that session's wait must be woken.
 */
int mtc_rank_server_report(struct mtc_rank_server *rs, const char *body, size_t len, int *index,
			   char session[64], char superseded[64], char **answer);
/* The answer of a woken or expired wait of index and session, and its HTTP status. */
int mtc_rank_server_answer(struct mtc_rank_server *rs, int index, const char *session, char **answer);
/* Nodes that reported to the open round, or every node once assigned. */
int mtc_rank_server_reported(const struct mtc_rank_server *rs);
/* Fails a round open longer than round_s; 1 when it did (the waits must be woken). */
int mtc_rank_server_check(struct mtc_rank_server *rs, double now);

#endif
