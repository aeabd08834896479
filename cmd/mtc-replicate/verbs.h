#ifndef MTC_REPLICATE_VERBS_H
#define MTC_REPLICATE_VERBS_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "blake3/blake3.h"
#include "../common/cli.h"
#include "clock.h"
#include "commit.h"
#include "config.h"
#include "digest.h"
#include "exitcode.h"
#include "fsutil.h"
#include "gc.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "node_status.h"
#include "ocdbt/orbax_digest.h"
#include "coord/coord_client.h"
#include "peer_cmd.h"
#include "peers.h"
#include "steady.h"
#include "token_file.h"
#include "xalloc.h"

/* The local verbs of mtc-replicate (argv[0] is the verb), one file each: their exit codes. */
#define DIGEST_USAGE "digest [--json] [--threads N] [--framework F] PATH..."
#define COMMIT_USAGE "commit --dir DIR --config CFG [--watch | --wait SEC] [--quiet-time SEC] [--json]"
#define GC_USAGE "gc --dir DIR --config CFG --keep STEP[,STEP...] [--dry-run] [--json]"
#define RUN_USAGE                                                                 \
	"run --dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL] " \
	"[--peer-url-template T | --peers-file FILE] [--json]"

int mtc_replicate_digest(int argc, const char **argv);
int mtc_replicate_commit(int argc, const char **argv);
int mtc_replicate_gc(int argc, const char **argv);
int mtc_replicate_run(int argc, const char **argv);

#endif
