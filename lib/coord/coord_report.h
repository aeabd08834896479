#ifndef MTC_COORD_REPORT_H
#define MTC_COORD_REPORT_H

#include <stddef.h>

#include <jansson.h>

#include "lkg.h"

/* What a report may list (coord.h, mtc(7) §5.1), and its lists kept packed. */

/* The most a rank may list (metas, and as many data) and a backup may hold. */
struct mtc_coord_limits {
	size_t list, backup;
	int workers, copies; /* W and 1 + P, as they were found */
};

/* The limits for nodes and the job's config cfg (NULL when unknown: the caps). */
void mtc_coord_limits(int nodes, json_t *cfg, struct mtc_coord_limits *l);

/*
 * Why holder's "meta-files" or "data-files" (already checked for their form)
 * hold more than metas or data entries, written in buf; NULL when they do not.
 */
const char *mtc_coord_over(json_t *holder, size_t metas, size_t data, const char *who, char *buf,
			   size_t len);

/* Moves holder's "meta-files" and "data-files" (checked: hashes, steps, nodes) into out, packed. */
void mtc_coord_list_take(json_t *holder, struct mtc_lkg_list *out);
void mtc_coord_list_free(struct mtc_lkg_list *l);

/*
 * The largest body of a restore report for nodes: the longest lists allowed,
 * written as a client writes them, twice over for spacing and keys that are
 * dropped, plus 64 KiB.
 */
size_t mtc_coord_restore_body_max(int nodes);

/* j as compact JSON text (malloc'd); j is released. */
char *mtc_coord_dump(json_t *j);
/*
 * {"status":"failed","error":MSG}: the answer to a report refused or a round
 * that failed; MSG may quote what a peer sent, so only printable ASCII stays.
 */
char *mtc_coord_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
