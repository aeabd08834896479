#ifndef MTC_STEADY_H
#define MTC_STEADY_H

#include <signal.h>

#include "config.h"
#include "threads.h"

/*
 * The steady state of a node (mtc-replicate run): commit new steps, push
 * them to the peers (in a thread of its own, one push at a time), sync with
 * the coordinator, GC to the agreed step, run mtc-backup in a child process
 * when the coordinator names a backup (one at a time), and delete
 * restore.version after the first new step that follows a pinned restore.
 * The loop itself waits on neither a peer nor the bucket. Failures are ERROR
 * lines (replicator.errors) and are retried at the next interval; only a
 * signal ends the loop.
 */
struct mtc_steady_opts {
	const char *dir;
	const struct mtc_config *cfg;
	const char *config_path; /* handed to mtc-backup */
	const char *backup;	 /* LOCATION, or NULL: no backups */
	const char *coordinator; /* URL, or NULL: decide alone (one node) */
	char *const *peers;	 /* peer URLs to push to */
	int n_peers;
	const char *token;	       /* peers and coordinator */
	const char *store_token_file;  /* handed to mtc-backup --token-file */
	const char *store_s3_endpoint; /* handed to mtc-backup --s3-endpoint */
	const char *backup_prog;       /* path of mtc-backup */
	double sync_s;		       /* between syncs (default 10) */
	double quiet_s;		       /* commit quiet time (default 5) */
	double heartbeat_s;	       /* default 5 */
	double timeout_s;	       /* return after this long; < 0: never */
	int threads;
	int no_prehash;			/* hash steps only at their commit (prehash.h) */
	enum mtc_background background; /* the class of prehash, pushes, backups, the seed (threads.h) */
	int json;			/* a line on stdout for each step's time to safety */
	volatile sig_atomic_t *stop;
};

/* Runs until *stop or the timeout; returns an exit code. */
int mtc_steady_run(const struct mtc_steady_opts *o);

/* Orbax asks for a backup of a step with this file in the step's directory. */
#define MTC_BACKUP_REQUESTED "_BACKUP_REQUESTED"

#endif
