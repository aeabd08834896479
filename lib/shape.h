#ifndef MTC_SHAPE_H
#define MTC_SHAPE_H

#include <stddef.h>

#include "config.h"

/*
 * The shape of the job whose steps a local dir holds (mtc(7) §5.9): its
 * nodes and assume-data-parallelism, in DIR/.mtc-shape-JOB.json, written
 * after each restore that let the job run. A data-parallel job's ranks form
 * a D x P grid (rank = replica * P + column); a restart may change D, never
 * P, the columns the data was cut into.
 */
struct mtc_shape {
	int nodes, dp; /* dp >= 1 */
};

static inline int mtc_shape_columns(const struct mtc_shape *s)
{
	return s->nodes / s->dp;
}

/* The shape a config declares (dp 1 when absent or when it does not divide nodes). */
void mtc_shape_of_config(const struct mtc_config *cfg, struct mtc_shape *s);

/* 1 with *s read, 0 when DIR holds none for job; -1 with a one-line reason. */
int mtc_shape_read(const char *dir, const char *job, struct mtc_shape *s, char *err, size_t errlen);

/* Writes the config's shape, atomically; -1 with a one-line reason. */
int mtc_shape_write(const char *dir, const struct mtc_config *cfg, char *err, size_t errlen);

/* 0 when a job of shape now may restore steps saved as saved (same columns); else -1 and why. */
int mtc_shape_check(const struct mtc_shape *saved, const struct mtc_shape *now, int rank, char *err,
		    size_t errlen);

#endif
