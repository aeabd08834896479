#ifndef MTC_REPLICATE_VERBS_H
#define MTC_REPLICATE_VERBS_H

#include "config.h"

/* The local verbs of mtc-replicate (argv[0] is the verb), one file each: their exit codes. */
#define DIGEST_USAGE "digest [--json] [--threads N] [--framework F] PATH..."
#define COMMIT_USAGE "commit --dir DIR --config CFG [--watch | --wait SEC] [--quiet-time SEC] [--json]"
#define GC_USAGE "gc --dir DIR --config CFG --keep STEP[,STEP...] [--dry-run] [--json]"
#define RUN_USAGE                                                                              \
	"run --dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL] "              \
	"[--peer-url-template T | --peers-file FILE] [--json]"

int mtc_replicate_digest(int argc, const char **argv);
int mtc_replicate_commit(int argc, const char **argv);
int mtc_replicate_gc(int argc, const char **argv);
int mtc_replicate_run(int argc, const char **argv);

/* --config of a local verb, loaded into cfg: MTC_EXIT_OK, or the exit code after the error. */
int load_config(const char *path, struct mtc_config *cfg);

#endif
