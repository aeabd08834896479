/*
 * s3://: the multipart uploads that dead writers left (store_s3_put.c
 * aborts its own on failure; a kill -9 leaves one). They are no objects:
 * ListMultipartUploads finds them, ListParts dates and weighs them, and
 * AbortMultipartUpload drops them.
 * Invariant: an upload's age is that of the newest of its start and its
 * parts, so one that a live writer is still sending parts to is never
 * stale; a server that misdates starts (moto says 2010-11-10 for all) is
 * judged by its parts' times alone. The next run of a killed upload resumes
 * it while it is younger than mtc_tmp_stale_s(), and sweeps it otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3.h"
#include "s3_auth.h"
#include "s3_xml.h"
#include "tmpname.h"
#include "xalloc.h"

enum { M_UPLOADS, M_PARTS, M_ABORT };

struct scan;

struct upload {
	struct scan *sc;
	long long newest, bytes; /* seconds since the epoch; what its parts hold */
	int stale;
};

struct scan {
	struct op **ops; /* M_PARTS ops, one an upload */
	size_t n, cap;
	long long stale_s; /* -1: every upload is stale */
	int remove;
};

static long long iso(const char *text)
{
	double t = text ? mtc_s3_parse_time(text) : -1;
	return t > 0 ? (long long)t : 0;
}

/* "name=value" for a query line, or "" when value is NULL. */
static char *param(const char *name, const char *value)
{
	return value ? xasprintf("\n%s=%s", name, value) : xstrdup("");
}

static int up_prepare(struct op *op, struct req *r)
{
	char *a = NULL, *b = NULL;

	switch (op->state) {
	case M_UPLOADS:
		a = param("key-marker", op->page_token);
		b = param("upload-id-marker", op->session);
		s3_request(r, "GET", NULL, "uploads\nprefix=%s%s%s%s", op->xf->prefix, op->lprefix, a,
			   b);
		break;
	case M_PARTS:
		a = param("part-number-marker", op->page_token);
		s3_request(r, "GET", op->name, "uploadId=%s%s", op->session, a);
		break;
	default: s3_request(r, "DELETE", op->name, "uploadId=%s", op->session); break;
	}
	free(a);
	free(b);
	return 0;
}

static int truncated(struct req *r)
{
	char *t = mtc_s3_xml_text(r->mem.p, r->mem.len, "IsTruncated");
	int yes = t && !strcmp(t, "true");
	free(t);
	return yes;
}

/* The listed uploads, each an M_PARTS op in the scan; V_AGAIN for the next page. */
static enum verdict uploads_page(struct op *op, struct req *r)
{
	struct scan *sc = op->arg;
	const char *at = r->mem.p, *e;
	size_t len;

	if (!at || !strstr(mtc_buf_str(&r->mem), "<ListMultipartUploadsResult"))
		return xfer_fail(op, EIO, "cannot list uploads in '%s': the answer is not a listing",
				 op->name);
	while ((e = s3_element(&at, r->mem.p + r->mem.len, "Upload", &len))) {
		char *key = mtc_s3_xml_text(e, len, "Key"), *id = mtc_s3_xml_text(e, len, "UploadId");
		char *when = mtc_s3_xml_text(e, len, "Initiated");
		if (key && id) {
			struct op *u = xfer_op_new(op->s, op->t);
			struct upload *up = xcalloc(1, sizeof *up);
			up->sc = sc;
			up->newest = iso(when);
			u->arg = up;
			u->name = key;
			u->session = id;
			u->state = M_PARTS;
			key = id = NULL;
			if (sc->n == sc->cap)
				sc->ops = xrealloc(sc->ops, (sc->cap = sc->cap ? 2 * sc->cap : 16) *
								    sizeof *sc->ops);
			sc->ops[sc->n++] = u;
		}
		free(key);
		free(id);
		free(when);
	}
	free(op->page_token);
	free(op->session);
	op->page_token = op->session = NULL;
	if (!truncated(r))
		return V_DONE;
	op->page_token = mtc_s3_xml_text(r->mem.p, r->mem.len, "NextKeyMarker");
	op->session = mtc_s3_xml_text(r->mem.p, r->mem.len, "NextUploadIdMarker");
	return op->page_token ? V_AGAIN : V_DONE;
}

/* The listed parts date and weigh the upload; after the last page, it is judged. */
static enum verdict parts_page(struct op *op, struct req *r)
{
	struct upload *up = op->arg;
	struct scan *sc = up->sc;
	const char *at = r->mem.p, *e;
	size_t len;

	if (!at || !strstr(mtc_buf_str(&r->mem), "<ListPartsResult"))
		return xfer_fail(op, EIO, "cannot list the parts of '%s': the answer is not a listing",
				 op->name);
	while ((e = s3_element(&at, r->mem.p + r->mem.len, "Part", &len))) {
		char *size = mtc_s3_xml_text(e, len, "Size"),
		     *when = mtc_s3_xml_text(e, len, "LastModified");
		long long t = iso(when);
		up->bytes += size ? atoll(size) : 0;
		if (t > up->newest)
			up->newest = t;
		free(size);
		free(when);
	}
	free(op->page_token);
	op->page_token = truncated(r) ? mtc_s3_xml_text(r->mem.p, r->mem.len, "NextPartNumberMarker")
				      : NULL;
	if (op->page_token)
		return V_AGAIN;
	up->stale = sc->stale_s < 0 || (up->newest && time(NULL) - up->newest >= sc->stale_s);
	if (!up->stale || !sc->remove)
		return V_DONE;
	op->state = M_ABORT;
	return V_AGAIN;
}

static enum verdict up_finish(struct op *op, struct req *r)
{
	if (xfer_transient(r))
		return V_RETRY;
	switch (op->state) {
	case M_UPLOADS:
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot list uploads in");
		return uploads_page(op, r);
	case M_PARTS:
		if (r->status == 404) /* finished or aborted meanwhile */
			return V_DONE;
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot list the parts of");
		return parts_page(op, r);
	default:
		if (r->status != 204 && r->status != 200 && r->status != 404)
			return xfer_fail_with(op, r, "cannot abort the upload of");
		return V_DONE;
	}
}

static const struct op_type uploads_type = { .prepare = up_prepare, .finish = up_finish };

/*
 * The uploads under prefix (keys under the location) that are stale (all
 * when stale_s < 0): each passed to fn, aborted when remove. How many, or -1.
 */
long s3_uploads(struct mtc_store *s, const char *prefix, long long stale_s, int remove,
		mtc_store_leftover_fn *fn, void *arg)
{
	struct scan sc = { .stale_s = stale_s, .remove = remove };
	struct op *op = xfer_op_new(s, &uploads_type);
	long n = 0;
	int rc;

	op->lprefix = prefix;
	op->arg = &sc;
	op->name = xasprintf("%s/%s", s->url, prefix);
	rc = xfer_run_one(s, op);
	if (rc == 0)
		rc = xfer_run(s, sc.ops, sc.n);
	for (size_t i = 0; i < sc.n; i++) {
		struct upload *up = sc.ops[i]->arg;
		if (rc == 0 && up->stale) {
			size_t plen = strlen(sc.ops[i]->xf->prefix);
			char *where = xasprintf("%s/%s (upload %s)", s->url, sc.ops[i]->name + plen,
						sc.ops[i]->session);
			if (fn)
				fn(where, up->bytes, arg);
			free(where);
			n++;
		}
		free(up);
		xfer_op_free(sc.ops[i]);
	}
	free(sc.ops);
	return rc < 0 ? -1 : n;
}
