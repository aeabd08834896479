#ifndef MTC_BACKUP_WRITE_H
#define MTC_BACKUP_WRITE_H

#include "config.h"
#include "store/store.h"

/* What mtc-backup is asked to do (mtc(7) §6.3). */
struct mtc_backup_write {
	const struct mtc_config *cfg; /* the accepted config: job, rank, workers, D */
	const char *dir;	      /* the local dir */
	const char *location;	      /* the bucket root */
	const char *name;	      /* NULL: now, UTC */
	struct mtc_store_options store;
	int threads;   /* hashing threads (0: one per CPU) */
	int no_verify; /* no check against the name, no manifest uploaded */
	int progress;  /* a progress line on stderr */
	int stall_s;   /* the longest wait for data another node uploads without growing */
};

struct mtc_backup_written {
	char name[17];
	char *location; /* the store's URL */
	long long bytes, objects, skipped;
	double seconds;
};

/*
 * This node's part of step into LOCATION/<job>/<name>/, in the order of
 * mtc(7) §6.3: its .meta files read, a name bound to another step refused,
 * the data checked against its name, its manifest claimed (create-only), the
 * data objects not already there uploaded (one copy per column, §6.4), data
 * another node uploads waited for, and the .meta files last. An exit code;
 * out is filled on MTC_EXIT_OK (free its location).
 */
int mtc_backup_write(const struct mtc_backup_write *o, long long step, struct mtc_backup_written *out);

#endif
