#ifndef MTC_RESTORE_RESTORE_H
#define MTC_RESTORE_RESTORE_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>

#include "backup_check.h"
#include "backup_location.h"
#include "backups.h"
#include "buf.h"
#include "../common/cli.h"
#include "clock.h"
#include "cluster_restore.h"
#include "config.h"
#include "coord/coord_client.h"
#include "data_name.h"
#include "digest.h"
#include "exitcode.h"
#include "fsutil.h"
#include "http.h"
#include "inventory.h"
#include "json_out.h"
#include "log.h"
#include "manifest_text.h"
#include "naming.h"
#include "object.h"
#include "object_fetch.h"
#include "progress.h"
#include "step_archive.h"
#include "store/store.h"
#include "store/store_tree.h"
#include "tmpname.h"
#include "token_file.h"
#include "units.h"
#include "xalloc.h"

/*
 * The parts of mtc-restore: cmd/mtc-restore.c parses the options into these
 * globals and runs a mode (modes.c); from.c brings one rank's step out of a
 * backup, choose.c picks and checks the backup. Each returns an exit code.
 */

extern char *from, *out_dir, *archive_path, *compress, *pin_root, *unpin_root, *token_file, *s3_endpoint,
	*rank_text, *job_opt, *name_opt, *layout;
extern char *slice_threshold_text;
extern int parallel, threads, force, json_out, no_progress, verify_only;
extern long long slice_threshold;
extern int slices;
extern char *dir, *config_file, *backup, *coordinator_url, *address, *peer_token_file;
extern int standalone;
extern int cmd_argc; /* the command line as given, for the command a message suggests */
extern const char **cmd_argv;
extern double timeout_s, heartbeat_s;

struct mtc_store_options store_options(void);
int restore_from(struct mtc_store *s, const char *job, const struct mtc_backup_info *info, int rank);
struct mtc_store *open_job(const char *location, const char *job, int *rc);
int judge(struct mtc_store *s, const char *name, struct mtc_backup_info *info);
int choose_backup(struct mtc_store *s, char *name, size_t len);
int state_exit(enum mtc_backup_state st);
int verify_backup(struct mtc_store *s, const char *job, const char *name);
void report_damaged(struct mtc_store *s, const char *name, const char *why);
int pick_rank(const struct mtc_backup_info *info, long long *rank);
int from_backup(const char *job);
int pin(const char *job, const char *name);
int unpin(const char *job);
int restore_cluster(void);
/* MTC_EXIT_OK, or the exit code after the one-line error. */
int load_job(char **job);

#endif
