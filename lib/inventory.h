#ifndef MTC_INVENTORY_H
#define MTC_INVENTORY_H

#include <stddef.h>

#include <jansson.h>

#include "naming.h"

/*
 * What a local dir holds: its .meta entries (with the hash each names) and
 * its <hash>.data objects with their sizes. Names are parsed by naming.h
 * only; anything else in the dir is not part of the inventory. As JSON:
 *   {"metas": [{"name", "job", "step", "node", "worker", "hash"}, …],
 *    "data":  [{"hash", "size"}, …]}
 * both sorted by name.
 */
struct mtc_inv_meta {
	char name[MTC_JOB_MAX + 64];
	char job[MTC_JOB_MAX + 1];
	long long step;
	int node;
	int worker;
	char hash[MTC_HASH_MAX + 1];
};

struct mtc_inv_data {
	char hash[MTC_HASH_MAX + 1];
	long long size;
};

struct mtc_inventory {
	struct mtc_inv_meta *metas;
	size_t n_metas;
	struct mtc_inv_data *data;
	size_t n_data;
};

/* Reads a .meta file, never through a symlink: its content must be one hash (a trailing newline is tolerated). */
int mtc_read_meta(const char *path, char hash[MTC_HASH_MAX + 1]);

/*
 * Total bytes of the regular files of a file or tree; -1 when path is a
 * symlink or a symlink below it leads out of its directory (fsutil.h).
 */
long long mtc_tree_bytes(const char *path);

/* Scans dir. Metas whose content is not a hash are skipped. 0, or -1 with errno. */
int mtc_inventory_scan(const char *dir, struct mtc_inventory *inv);
json_t *mtc_inventory_to_json(const struct mtc_inventory *inv);
int mtc_inventory_from_json(json_t *obj, struct mtc_inventory *inv, char *err, size_t errlen);
void mtc_inventory_free(struct mtc_inventory *inv);

const struct mtc_inv_data *mtc_inventory_find_data(const struct mtc_inventory *inv, const char *hash);

#endif
