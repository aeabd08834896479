#ifndef MTC_BACKUPS_H
#define MTC_BACKUPS_H

#include <stddef.h>
#include <time.h>

#include "naming.h"
#include "store/store.h"

/* In a backup beside its steps: the shape of the job that wrote it (mtc(7) §5.9). */
#define MTC_BACKUP_SHAPE "shape.json"

/*
 * A job's backup root (mtc(7) §6.2), read through a store opened at that
 * root (<location>/<job-name>):
 *
 *   restore.version                      optional: one backup name
 *   <backup>/<job>-s<step>-n<rank>-w<w>.meta   the hash, no newline
 *   <backup>/<hash>.data[/...]           a file, or a directory's files
 *
 * Validity (mtc(7) §6.5): a backup is valid when every node x worker has a
 * .meta of the backup's step whose <hash>.data exists in the backup. Without
 * a config, nodes = highest rank + 1 and workers = highest worker + 1. A
 * backup with no .meta at all is empty: incomplete, or still being written.
 *
 * Deletion keeps that rule safe against a crash: the .meta of node 0 worker 0
 * goes first (from then on the backup reads as incomplete whatever else
 * remains, since (0, 0) is always required), then mtc_store_delete_prefix
 * removes every other .meta and then the data, each group in parallel (both
 * backends delete the .meta before the rest). A .meta therefore never
 * outlives the data it names.
 */

enum mtc_backup_state {
	MTC_BACKUP_VALID,
	MTC_BACKUP_INCOMPLETE, /* some .meta, but not every node x worker with its data */
	MTC_BACKUP_EMPTY,      /* no .meta at all */
	MTC_BACKUP_DAMAGED, /* valid by its metas, but its data differs from its manifests (backup_check.h) */
};

struct mtc_backup_meta {
	int rank;
	int worker;
	long long step;
	char hash[MTC_HASH_MAX + 1]; /* "" when the .meta does not hold a hash */
	int has_data;		     /* <hash>.data exists in the backup */
};

struct mtc_backup_info {
	char *name;
	enum mtc_backup_state state;
	char reason[640]; /* why it is not valid; "" when valid */
	char job[MTC_JOB_MAX + 1];
	long long step;		       /* the newest step among its .meta; -1 when empty */
	int nodes, workers;	       /* what it was judged against */
	struct mtc_backup_meta *metas; /* of that step, sorted by (rank, worker) */
	size_t n_metas;
	int shape_nodes, shape_dp; /* its shape.json (mtc(7) §5.9); 0 when it has none */
};

/* A backup directory named YYYY-MM-DD_HH-MM (lib/naming.h). */
struct mtc_backup_entry {
	char *name;
	time_t when;
};

/* The names of every directory (prefix) at the root, sorted by name. */
int mtc_backups_list_dirs(struct mtc_store *s, char ***names, size_t *n);
void mtc_backups_free_names(char **names, size_t n);

/* The directories whose names are backup names, newest first. */
int mtc_backups_list(struct mtc_store *s, struct mtc_backup_entry **out, size_t *n);
void mtc_backups_free_list(struct mtc_backup_entry *l, size_t n);

/*
 * restore.version: 1 and the name (whitespace trimmed) in buf, 0 when there
 * is no such file, -1 on error.
 */
int mtc_backups_restore_version(struct mtc_store *s, char *buf, size_t len);

/*
 * Judges one backup; nodes/workers <= 0: inferred. One listing, then every
 * .meta of the newest step: on gs:// all at once (mtc_store_get_many through
 * a private directory under $TMPDIR). -1 only when storage fails: a .meta
 * that cannot be read is an error, one that is gone reads as holding no hash.
 */
int mtc_backup_inspect(struct mtc_store *s, const char *name, int nodes, int workers,
		       struct mtc_backup_info *out);
void mtc_backup_info_free(struct mtc_backup_info *info);
const char *mtc_backup_state_name(enum mtc_backup_state st);

/* 1 when the backup holds at least one .meta (one listing, no reads). */
int mtc_backup_has_meta(struct mtc_store *s, const char *name);

/* Deletes a backup in the crash-safe order above. A missing backup is not an error. */
int mtc_backup_delete(struct mtc_store *s, const char *name);

#endif
