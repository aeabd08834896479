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
 * The local state of a restore pinned by restore.version: {"backup", "step"};
 * mtc-restore writes it, mtc-replicate's steady state reads it.
 */
#define MTC_PINNED_FILE ".mtc-pinned"

/*
 * Makes dir usable as the local dir: creates it when missing, with its
 * missing parents (mkdir -p, the parents as the umask says), the dir itself
 * exactly MTC_LOCAL_DIR_MODE, and checks that it is a directory this process
 * may write and enter. 0, with *created 1 when this call created it; -1 with
 * a one-line reason naming the path.
 */
int mtc_local_dir_prepare(const char *dir, int *created, char *err, size_t errlen);

#endif
