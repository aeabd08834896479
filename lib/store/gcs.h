#ifndef MTC_STORE_GCS_H
#define MTC_STORE_GCS_H

/* What store_gcs.c and store_gcs_put.c share; not for programs. */

#include <stdint.h>

#include "transfer.h"

#define GCS_CHUNK (32LL << 20) /* a resumable upload's chunk: a multiple of 256 KiB */

struct gcs {
	struct xfer xf; /* first: s->impl is a struct xfer */
	char *bucket, *base;
	struct mtc_gcs_auth *auth;
	long long chunk;
};

/* Percent-encodes every byte but the unreserved ones (malloc'd). */
char *gcs_enc(const char *s);
char *gcs_object_url(struct gcs *g, const char *name, const char *query);
char *gcs_upload_url(struct gcs *g, const char *type, int create_only);
/* Object metadata JSON → size, generation, crc32c; -1 if it is not that. */
int gcs_parse_meta(const char *buf, size_t len, long long *size, long long *gen, uint32_t *crc,
		   int *have_crc);

/* "<p->name>.mtc-parts/<i>": the object that holds part i of a composite upload. */
char *gcs_part_name(const struct op *p, size_t i);
/* 1 when name is, or is under, a composite upload's parts: a temporary (tmpname.h). */
int gcs_is_part(const char *name);
/* Deletes p's composite parts as its children; one already gone is done. */
void gcs_spawn_part_deletes(struct op *p);
/* A part or a part's delete is over; the last one moves the composite upload on. */
void gcs_notify_parent(struct op *op);

extern const struct xfer_upload gcs_upload;

#endif
