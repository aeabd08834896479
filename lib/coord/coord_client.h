#ifndef MTC_COORD_CLIENT_H
#define MTC_COORD_CLIENT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>

#include <jansson.h>

/*
 * A node's side of the coordinator (coord.h): reports carry the rank and a
 * session id chosen once per process; a background thread sends heartbeats
 * so that the coordinator can tell a busy node from a vanished one.
 * Results are enum mtc_result (result.h) with a one-line reason in err.
 */
struct mtc_coord_client {
	char *url; /* base, e.g. http://host:7070 */
	char *token;
	int rank;
	char session[40];
	pthread_t heartbeat;
	int heartbeat_running;
	double heartbeat_s;
	atomic_int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/*
	 * Once the coordinator has answered, silence (no request answered) for
	 * lost_s means it is lost: reports fail at once with FAILURE instead of
	 * retrying until their deadline. Default: 6 heartbeats, at least 3 s.
	 */
	double lost_s;
	_Atomic double last_ok;	       /* mtc_now() of the last answer; 0: never */
	atomic_int said_unreachable;   /* warned that it refuses connections; 0 again on an answer */
	volatile sig_atomic_t *cancel; /* when set and non-zero, reports stop with FAILURE */
};

/* The coordinator URL: url when given, else $MTC_COORDINATOR; NULL when neither. */
const char *mtc_coord_url(const char *url);

void mtc_coord_client_init(struct mtc_coord_client *cc, const char *url, const char *token, int rank);
/* 1 when the coordinator answered once and has been silent for lost_s since. */
int mtc_coord_client_lost(struct mtc_coord_client *cc);
/* Starts the heartbeat thread: one POST /v1/coord/heartbeat every interval_s. */
void mtc_coord_client_heartbeat(struct mtc_coord_client *cc, double interval_s);
void mtc_coord_client_close(struct mtc_coord_client *cc);

/*
 * One report to a round: 0 with the answer when the round is done, 0 with
 * *answer NULL when still waiting after wait_s (the report stands), or an
 * result (result.h):
 * FAILURE (the round failed, the coordinator refused the report or was
 * lost, or *cancel was set: err says why) or TIMEOUT (coordinator never
 * reached). Connection errors are retried until deadline (mtc_now() based)
 * or until the coordinator counts as lost; a refused connection is warned
 * about once, not at each retry, and again only after an answer.
 */
enum mtc_result mtc_coord_post(struct mtc_coord_client *cc, const char *kind, json_t *report,
			       double wait_s, double deadline, json_t **answer, char *err,
			       size_t errlen);

/* Reports until the round is done (0 and the answer), it fails, or deadline passes (TIMEOUT). */
enum mtc_result mtc_coord_call(struct mtc_coord_client *cc, const char *kind, json_t *report,
			       double deadline, json_t **answer, char *err, size_t errlen);

#endif
