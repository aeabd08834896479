#ifndef MTC_SHAPE_H
#define MTC_SHAPE_H

#include <stddef.h>

#include <jansson.h>

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

static inline int mtc_shape_columns(const struct mtc_shape *s) { return s->nodes / s->dp; }

/* The shape a config declares (dp 1 when absent or when it does not divide nodes). */
void mtc_shape_of_config(const struct mtc_config *cfg, struct mtc_shape *s);

/* 1 with *s read, 0 when DIR holds none for job; -1 with a one-line reason. */
int mtc_shape_read(const char *dir, const char *job, struct mtc_shape *s, char *err, size_t errlen);

/* Writes the config's shape, atomically; -1 with a one-line reason. */
int mtc_shape_write(const char *dir, const struct mtc_config *cfg, char *err, size_t errlen);

/*
 * mtc_shape_check of the backup a plan (or a rank's view of it) restores
 * from, by the "shape" of its entry in backups (the restore report's list).
 */
int mtc_shape_check_backup(json_t *view, json_t *backups, const struct mtc_shape *now, char *err,
			   size_t errlen);

/* The config's shape as JSON text, as the dir and a backup (shape.json) hold it. */
void mtc_shape_text(const struct mtc_config *cfg, char *buf, size_t len);

/* 0 with *s from text (the JSON of mtc_shape_text), else -1. */
int mtc_shape_parse(const char *text, struct mtc_shape *s);

/*
 * 0 when a job of shape now may restore steps saved as saved (the same
 * columns); else -1 and why, naming where (a node, a backup) holds them.
 */
int mtc_shape_check(const struct mtc_shape *saved, const struct mtc_shape *now, const char *where,
		    char *err, size_t errlen);

#endif
