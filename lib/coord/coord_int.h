#ifndef MTC_COORD_INT_H
#define MTC_COORD_INT_H

/*
 * The coordinator's parts, shared by its files and by no one else:
 * coord.c makes and ends the coordinator and routes its requests;
 * coord_reports.c takes a report (checked, whom it speaks for, its round and
 * its wait); coord_rounds.c runs a round's life (the watcher, timeouts,
 * vanished ranks, failure, completion, the waits woken); coord_plan.c is
 * what a round that completes answers (the restore plan, the restore-done
 * barrier, the sync's agreed step and the backup due); coord_status.c
 * answers status and /metrics.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "clock.h"
#include "coord_report.h"
#include "fsutil.h"
#include "json_atoms.h"
#include "json_parse.h"
#include "lkg.h"
#include "lkg_inventory.h"
#include "log.h"
#include "metrics.h"
#include "naming.h"
#include "peer/peer_auth.h"
#include "rank_server.h"
#include "shape.h"
#include "xalloc.h"

#include "coord.h"

enum kind { K_RESTORE, K_DONE, K_SYNC, NKINDS };
/* not rounds of reports by rank: NKINDS is the heartbeat; the rank server keys by pod index */
#define K_RANKS (NKINDS + 1)

struct slot {
	json_t *report; /* without its lists, which are in list */
	struct mtc_lkg_list list;
	json_t *answer; /* waiting to be collected */
	char session[64];
};

struct round {
	double opened; /* 0: no report yet */
	int n_reported;
	struct slot *s;
	struct mtc_json_atoms *atoms; /* the reports' strings and integers in arrays, one of each value */
	struct mtc_lkg_list backups[MTC_COORD_BACKUPS_MAX]; /* rank 0's, as its "backups" names them */
};

/*
 * A report waiting for its round: in the coordinator's list until it is
 * woken (its round ended, its wait is over, or stopping), then its owner's.
 */
struct mtc_coord_wait {
	LIST_ENTRY(mtc_coord_wait) link;
	int kind, rank; /* K_RANKS: rank is the pod index */
	double until;
	int woken;
	int superseded; /* another process reported for its rank: refused */
	char session[64];
	void (*wake)(void *); /* NULL: a thread waits on cv */
	void *arg;
};

struct mtc_coord {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* a wait without a wake function was woken */
	pthread_cond_t tick; /* the watcher's, so that stopping ends its wait */
	LIST_HEAD(, mtc_coord_wait) waits;
	pthread_t watcher;
	int watching;
	struct mtc_coord_opts o;
	struct round rounds[NKINDS];
	double *last_seen;	       /* 0: never heard from */
	unsigned char *refusal_logged; /* per rank: a report for it was refused (403) */
	unsigned char *ignored_logged; /* per rank: a field only rank 0 may state was dropped */
	char (*stale)[64];	       /* per rank: the session a newer process's report replaced */
	struct mtc_rank_server *ranks;
	char job[MTC_JOB_MAX + 1]; /* the job served: --job, else the first report's; "" until then */
	json_t *job_cfg;	   /* rank 0's last config: the job's settings, the reports' limits */
	struct mtc_json_keep keys[NKINDS + 1][16], config_keys[16], backup_keys[5], last_keys[3],
		shape_keys[3];
	int stopping;
	long long last_backup_time, last_backup_step, last_agreed;
	char last_backup_name[17];
	int scheduled;				/* the last backup was named by this coordinator */
	long long done[NKINDS], failed[NKINDS]; /* rounds, for the metrics */
};

/* coord_rounds.c */
extern const char *crd_kind_names[NKINDS];
void crd_complete(struct mtc_coord *c, enum kind k);
void crd_wait_until(struct mtc_coord *c, pthread_cond_t *cv, double until);
void crd_wake(struct mtc_coord *c, struct mtc_coord_wait *w);
void crd_wake_kind(struct mtc_coord *c, int k);
void *crd_watch_main(void *arg);

/* coord_plan.c */
void crd_complete_done(struct mtc_coord *c, struct round *rd);
int crd_complete_restore(struct mtc_coord *c, struct round *rd, char *err, size_t errlen);
void crd_complete_sync(struct mtc_coord *c, struct round *rd);

/* coord_reports.c */
int crd_answer_now(struct mtc_coord *c, int k, int rank, const char *session, char **answer);
int crd_kind_of(const char *kind);
int crd_other_job(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *cfg_job, char *why,
		  size_t len);
int crd_start(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *kind, const char *body,
	      size_t len, char **answer, void (*wake_fn)(void *), void *arg, void **wait_out);
char *crd_superseded_answer(int rank);

/* coord_status.c */
char *crd_status_json(struct mtc_coord *c);

#endif
