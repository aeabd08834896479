#ifndef MTC_LOCAL_DIR_H
#define MTC_LOCAL_DIR_H

#include <stddef.h>

/*
 * The local dir's mode when a program creates it (mtc(7) §3): the caller's
 * user and group may read, write and enter it, others nothing; setgid, so a
 * training job of another uid that shares the group writes files of that
 * group, which the replicator may then move and delete.
 */
#define MTC_LOCAL_DIR_MODE 02770

/*
 * Every name the local dir holds besides the steps and their data
 * (mtc(7) §3.3): the one home of each. The protocol's files first, then the
 * state mtc keeps there for itself, all hidden.
 */
#define MTC_CONFIG_FILE "replicator.yaml" /* the handshake (mtc(7) §3.2) */
#define MTC_ERRORS_FILE "replicator.errors"
#define MTC_FAILED_FILE "replicator.failed"
#define MTC_PRERESTORE_FILE "replicator.prerestore"
#define MTC_JAX_INIT_INFO "jax-init-info.txt" /* the ranks' coordinator address (JAX) */
/* What the steady loop tells the daemon's /metrics (node_status.h). */
#define MTC_NODE_STATUS_FILE ".mtc-status.json"
/* A restore pinned by restore.version: {"backup", "step"}; mtc-restore writes it, the steady state reads it. */
#define MTC_PINNED_FILE ".mtc-pinned"
/* The private directory where entries are renamed before they are deleted. */
#define MTC_TRASH_DIR ".mtc-trash"
/* A manifest a peer sent ahead of its data: this prefix, then the hash. */
#define MTC_PENDING_MANIFEST ".mtc-upload-manifest-"
/* The job's shape (shape.h): the prefix, the job's name, the suffix. */
#define MTC_SHAPE_PREFIX ".mtc-shape-"
#define MTC_SHAPE_SUFFIX ".json"

/*
 * Makes dir usable as the local dir: creates it when missing, with its
 * missing parents (mkdir -p, the parents as the umask says), the dir itself
 * exactly MTC_LOCAL_DIR_MODE, and checks that it is a directory this process
 * may write and enter. 0, with *created 1 when this call created it; -1 with
 * a one-line reason naming the path.
 */
int mtc_local_dir_prepare(const char *dir, int *created, char *err, size_t errlen);

#endif
