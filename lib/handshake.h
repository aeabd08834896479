#ifndef MTC_HANDSHAKE_H
#define MTC_HANDSHAKE_H

#include "config.h"

/*
 * Both sides of the replicator.yaml handshake (mtc(7) §3.2). The
 * replicator deletes the yaml only after cleaning the local dir: that
 * deletion is the "accepted" signal the training job waits for.
 */

enum mtc_yaml_style { MTC_STYLE_ORBAX, MTC_STYLE_NEMO };

/*
 * Waits until replicator.yaml is whole: it arrived by rename, its writer closed
 * it, no process has it open for writing (a read lease is granted), or (found
 * without an event where leases are not to be had) it has not changed for a
 * second. 0; 1 at once when it is there but not a regular file (a directory,
 * a symlink, a FIFO: no writer will ever finish it); -1 with errno ETIMEDOUT
 * after the deadline.
 */
int mtc_wait_config(const char *dir, double deadline);

/* Deletes every entry but *.meta, *.data, jax-init-info.txt and replicator.yaml. */
int mtc_clean_local_dir(const char *dir);

/* Waits until dir/name no longer exists. */
int mtc_wait_gone(const char *dir, const char *name, double deadline);

/*
 * Waits for a *.restore entry as Orbax and NeMo do; returns its name (malloc'd)
 * and step (0 for the empty "nothing to restore" marker).
 */
int mtc_wait_restore_marker(const char *dir, double deadline, char **name, long long *step);

/* The exact bytes Orbax (tmp + rename, no final newline) or NeMo (yaml.dump) write. */
char *mtc_render_config_yaml(const struct mtc_config *cfg, enum mtc_yaml_style style);

#endif
