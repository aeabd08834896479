#ifndef MTC_STORE_BACKENDS_H
#define MTC_STORE_BACKENDS_H

/* The backends mtc_store_open (store.c) chooses from; each fills s->ops and s->impl. */

#include <stddef.h>

struct mtc_store;

int mtc_store_dir_open(struct mtc_store *s, const char *root, char *err, size_t errlen);
int mtc_store_gcs_open(struct mtc_store *s, const char *bucket, const char *prefix, char *err,
		       size_t errlen);
int mtc_store_s3_open(struct mtc_store *s, const char *bucket, const char *prefix, char *err,
		      size_t errlen);

#endif
