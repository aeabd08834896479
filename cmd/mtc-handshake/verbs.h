#ifndef MTC_HANDSHAKE_VERBS_H
#define MTC_HANDSHAKE_VERBS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>

#include "../common/cli.h"
#include "config.h"
#include "dirwatch.h"
#include "exitcode.h"
#include "fsutil.h"
#include "handshake.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "coord/coord_client.h"
#include "token_file.h"
#include "xalloc.h"
#include "rank.h"

/*
 * The verbs of mtc-handshake: cmd/mtc-handshake.c parses the options into
 * these globals; accept.c holds accept, watch and check, offer.c offer,
 * rank.c rank. Each returns an exit code.
 */

extern char *dir;
extern double timeout_s;
extern int json;
extern char *o_job, *o_framework, *o_peers, *o_style;
extern int o_rank, o_nodes, o_ppn, o_dp, o_wpn;
extern int o_minutes, o_steps;
extern int o_wait_restore, o_rename, o_replace;
extern double o_restore_timeout;

int need_dir(void);
int timed_out(const char *what);
int do_accept(void);
int do_watch(void);
int do_check(const char *file);
int do_offer(void);

#endif
