#ifndef MTC_LKG_MODES_H
#define MTC_LKG_MODES_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "backup_check.h"
#include "backup_location.h"
#include "backups.h"
#include "../common/cli.h"
#include "config.h"
#include "exitcode.h"
#include "fsutil.h"
#include "http.h"
#include "inventory.h"
#include "json_out.h"
#include "lkg.h"
#include "lkg_inventory.h"
#include "log.h"
#include "peers.h"
#include "naming.h"
#include "peer/peer_client.h"
#include "progress.h"
#include "store/store.h"
#include "token_file.h"
#include "units.h"
#include "xalloc.h"

/*
 * The modes of mtc-lkg: cmd/mtc-lkg.c parses the options into these globals
 * and runs one; list.c lists the job's backups, plan.c shows a plan,
 * gather.c asks the peers and the backups. Each returns an exit code.
 */

#define INVENTORY_MAX_BYTES (1024L * 1024 * 1024)

extern char *backups_root, *token_file, *s3_endpoint, *inventory_path, *dir, *config_path, *job_opt,
	*peer_template, *peer_token_file, **peer_urls;
extern int json_out, parallel, nodes_opt, workers_opt, rank_opt, verify;
extern double peer_timeout;

struct mtc_store *open_backups(const char *job, int missing_ok, int *rc);
int list_backups(const char *job, int nodes, int workers);
int plan_and_show(json_t *inv);
int from_inventory(void);
int gather(void);

#endif
