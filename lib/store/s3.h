#ifndef MTC_STORE_S3_H
#define MTC_STORE_S3_H

/* What store_s3.c and store_s3_put.c share; not for programs. */

#include "s3_auth.h"
#include "s3_endpoint.h"
#include "transfer.h"

struct s3 {
	struct xfer xf; /* first: s->impl is a struct xfer */
	char *bucket;
	struct mtc_s3_target t;
	struct mtc_s3_auth *auth;
};

/*
 * States in r a request for object name (NULL: the bucket) with the query
 * printf makes of fmt (NULL: none), its parameters "name=value" (or "name")
 * one a line, neither encoded; it is signed at its start.
 */
void s3_request(struct req *r, const char *method, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Each <tag>...</tag> of an answer in turn: *at moves past it; NULL after the last. */
const char *s3_element(const char **at, const char *end, const char *tag, size_t *len);

/*
 * The multipart uploads under prefix whose newest part or start is
 * stale_s old (every one when stale_s < 0): each passed to fn, aborted
 * when remove. How many, or -1 (store_s3_uploads.c).
 */
long s3_uploads(struct mtc_store *s, const char *prefix, long long stale_s, int remove,
		mtc_store_leftover_fn *fn, void *arg);

extern const struct xfer_upload s3_upload;

#endif
