#ifndef MTC_GC_H
#define MTC_GC_H

#include <stddef.h>

#include "config.h"

/*
 * Local garbage collection (mtc(7) §3.9): keep the .meta of the kept steps
 * (this job; with own_only, only this node's), and the .data they or any
 * .restore marker reference; delete every other .meta, then every other .data.
 * With own_data, every node's .meta of a kept step stays but only this node's
 * own .meta keep their .data (the first gc after a data-parallel restore).
 * Metas go before data, and data is renamed into the trash before it is
 * deleted, so a crash leaves no .meta naming a missing or partial .data.
 * A .data published (renamed into place) less than grace_s ago is kept
 * whatever names it: a peer sends a .meta just after its data, and
 * deleting the data in between would refuse that .meta. A manifest a peer
 * sent ahead of its data goes once the data is here, and dead writers'
 * temporaries (tmpname.h) go too.
 */
struct mtc_gc_opts {
	const char *dir;
	const struct mtc_config *cfg;
	const long long *keep_steps;
	size_t n_keep;
	int own_only;
	int own_data;
	int dry_run;
	double grace_s;
};

struct mtc_gc_stats {
	size_t deleted_meta, deleted_data, kept_meta, kept_data;
};

int mtc_gc(const struct mtc_gc_opts *o, struct mtc_gc_stats *st);

/* mtc_gc; with dry_run, would_delete (if set) is called with each path that would go. */
typedef void mtc_gc_cb(const char *path, void *arg);
int mtc_gc_dry(const struct mtc_gc_opts *o, struct mtc_gc_stats *st, mtc_gc_cb *would_delete, void *arg);

#endif
