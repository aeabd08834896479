/*
 * gs:// uploads (gcs.h): one request, one resumable upload, or a parallel
 * composite upload. Invariants: every create is create-only
 * (ifGenerationMatch=0) unless MTC_STORE_REPLACE, carries the CRC32C of its
 * bytes, and is done only when the server reports that size and CRC32C; a
 * resumable upload after a dropped connection asks the server what it holds
 * and goes on from there; a composite upload's parts are removed whatever
 * the outcome.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "crc32c.h"
#include "fault.h"
#include "gcs.h"
#include "log.h"
#include "xalloc.h"

#define SIMPLE_MAX (8LL << 20)

/*
 * A file below the slice threshold goes in one request (U_SIMPLE) or as one
 * resumable upload (U_INIT, U_CHUNK, U_QUERY). A bigger one is a parallel
 * composite upload: its parts are uploaded at once as temporary objects
 * <name>.mtc-parts/<i> (U_PARTS; each part looks first whether an earlier,
 * killed run left it whole with the same CRC32C, U_PROBE), composed into the
 * object create-only (U_COMPOSE), and deleted, also when anything failed
 * (U_CLEAN). U_CHECK looks at what a 412 found.
 */
enum { U_SIMPLE, U_INIT, U_CHUNK, U_QUERY, U_CHECK, U_PROBE, U_PARTS, U_COMPOSE, U_CLEAN };

static void spawn_parts(struct op *p);
static char *compose_json(struct op *p);

static char *metadata_json(const char *name, uint32_t crc)
{
	char b64[9];
	json_t *j;
	char *s;

	mtc_crc32c_base64(crc, b64);
	j = json_pack("{s:s, s:s}", "name", name, "crc32c", b64);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

static int up_prepare(struct op *op, struct req *r)
{
	struct gcs *g = (struct gcs *)op->xf;
	int create_only = !(op->flags & MTC_STORE_REPLACE);

	switch (op->state) {
	case U_PARTS:
		spawn_parts(op);
		op->now = V_WAIT;
		return 1;
	case U_CLEAN:
		gcs_spawn_part_deletes(op);
		op->now = op->pending ? V_WAIT : op->failed_with ? V_FAIL : V_DONE;
		op->err = op->failed_with;
		return 1;
	case U_COMPOSE: {
		mtc_fault_stall("gcs-compose", op->name);
		char *b = gcs_enc(g->bucket), *n = gcs_enc(op->name);
		r->url = xasprintf("%s/storage/v1/b/%s/o/%s/compose%s", g->base, b, n,
				   create_only ? "?ifGenerationMatch=0" : "");
		free(b);
		free(n);
		free(op->body);
		op->body = compose_json(op);
		xfer_header(r, "Content-Type: application/json; charset=UTF-8");
		r->body = op->body;
		r->body_len = (long long)strlen(op->body);
		r->method = "POST";
		break;
	}
	case U_SIMPLE:
		r->url = gcs_upload_url(g, "multipart", create_only);
		xfer_header(r, "Content-Type: multipart/related; boundary=mtc-part-boundary-7f3a9c2e");
		r->body = op->body;
		r->body_len = op->body_len;
		r->method = "POST";
		break;
	case U_INIT: {
		char *json = metadata_json(op->name, op->crc);
		r->url = gcs_upload_url(g, "resumable", create_only);
		xfer_header(r, "Content-Type: application/json; charset=UTF-8");
		xfer_header(r, "X-Upload-Content-Type: application/octet-stream");
		xfer_header(r, "X-Upload-Content-Length: %lld", op->size);
		free(op->body);
		op->body = json;
		r->body = json;
		r->body_len = (long long)strlen(json);
		r->method = "POST";
		break;
	}
	case U_CHUNK: {
		long long len = op->size - op->done;
		if (len > g->chunk)
			len = g->chunk;
		r->url = xstrdup(op->session);
		xfer_header(r, "Content-Range: bytes %lld-%lld/%lld", op->done, op->done + len - 1,
			    op->size);
		xfer_put_body(r, op->fd, op->off + op->done, len);
		r->method = "PUT";
		break;
	}
	case U_QUERY:
		r->url = xstrdup(op->session);
		xfer_header(r, "Content-Range: bytes */%lld", op->size);
		r->body_len = 0;
		r->method = "PUT";
		break;
	case U_CHECK:
	case U_PROBE:
		r->url = gcs_object_url(g, op->name, NULL);
		r->method = "GET";
		break;
	}
	return 0;
}

static enum verdict up_check_stored(struct op *op, struct req *r, const char *what)
{
	long long size, gen;
	uint32_t crc;
	int have;

	if (gcs_parse_meta(r->mem.p, r->mem.len, &size, &gen, &crc, &have) < 0)
		return xfer_fail(op, EIO, "%s '%s': the server's answer is not object metadata", what,
				 op->name);
	if (size != op->size || (have && crc != op->crc))
		return xfer_fail(op, EIO,
				 "%s '%s': the server holds %lld bytes with crc32c %08x, sent %lld "
				 "with %08x",
				 what, op->name, size, have ? crc : 0, op->size, op->crc);
	if (!have)
		return xfer_fail(op, EIO, "%s '%s': the server reports no crc32c", what, op->name);
	op->generation = gen;
	return V_DONE;
}

static const char boundary[];
static void build_multipart(struct op *op, const char *data, size_t len);

/* Uploads afresh: a part's multipart body is read from its range of the file now. */
static int restart_upload(struct op *op)
{
	op->done = 0;
	op->state = op->size <= SIMPLE_MAX ? U_SIMPLE : U_INIT;
	if (op->state == U_SIMPLE && !op->body && op->fd >= 0) {
		char *buf = xmalloc((size_t)op->size + 1);
		for (long long got = 0; got < op->size;) {
			ssize_t n = pread(op->fd, buf + got, (size_t)(op->size - got), op->off + got);
			if (n <= 0) {
				int e = n < 0 ? errno : EIO;
				free(buf);
				return xfer_fail(op, e, "cannot read a part of '%s': %s", op->name,
						 n < 0 ? strerror(e) : "file shrank"),
				       -1;
			}
			got += n;
		}
		build_multipart(op, buf, (size_t)op->size);
		free(buf);
	}
	return 0;
}

/* The composite upload's own requests: the compose, and the look at what a 412 or 404 found. */
static enum verdict compose_finish(struct op *op, struct req *r)
{
	enum verdict v;

	if (xfer_transient(r))
		return V_RETRY;
	if (op->state == U_COMPOSE && (r->status == 412 || r->status == 404)) {
		/* an attempt whose answer was lost made it, or someone else did, or the parts are gone */
		op->state = U_CHECK;
		return V_AGAIN;
	}
	if (op->state == U_CHECK && r->status == 404) {
		op->state = U_PARTS; /* neither the object nor its parts: upload them again */
		return V_RETRY;
	}
	if (r->status != 200)
		v = xfer_fail_with(op, r, op->state == U_CHECK ? "cannot check" : "cannot compose");
	else if ((v = up_check_stored(op, r, "cannot compose")) != V_DONE && op->state == U_CHECK)
		v = xfer_fail(op, EEXIST, "object exists '%s'", op->name);
	op->failed_with = v == V_DONE ? 0 : op->err ? op->err : EIO;
	op->err = 0;
	op->state = U_CLEAN;
	return V_AGAIN;
}

static enum verdict up_finish(struct op *op, struct req *r)
{
	long long before = op->done;

	if (op->sl && (op->state == U_COMPOSE || op->state == U_CHECK))
		return compose_finish(op, r);
	if (op->state == U_PROBE && !xfer_transient(r)) {
		if (r->status == 404)
			return restart_upload(op) < 0 ? V_FAIL : V_AGAIN;
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot check");
		if (up_check_stored(op, r, "cannot reuse") != V_DONE) {
			op->err = EEXIST; /* a leftover of other bytes: the cleanup removes it */
			return V_FAIL;
		}
		mtc_debug("'%s': an earlier run uploaded this part; reusing it", op->name);
		mtc_store_progress_add(op->s, op->size);
		return V_DONE;
	}
	if (xfer_transient(r)) {
		if (op->state == U_CHUNK)
			op->state = U_QUERY;
		return V_RETRY;
	}
	if (r->status == 412 && op->state != U_CHECK) {
		/*
		 * An earlier attempt may have created it, ours or one libcurl resent
		 * on its own over a fresh connection: look before saying so.
		 */
		op->state = U_CHECK;
		return V_AGAIN;
	}
	switch (op->state) {
	case U_CHECK:
		if (r->status == 404)
			return restart_upload(op) < 0 ? V_FAIL : V_RETRY;
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot check");
		if (up_check_stored(op, r, "cannot upload") == V_DONE)
			return V_DONE;
		return xfer_fail(op, EEXIST, "object exists '%s'", op->name);
	case U_INIT:
		if (r->status != 200 || !r->location)
			return xfer_fail_with(op, r, "cannot start uploading");
		free(op->session);
		op->session = xstrdup(r->location);
		op->done = 0;
		op->state = op->size ? U_CHUNK : U_QUERY;
		return V_AGAIN;
	case U_CHUNK:
	case U_QUERY:
		if (r->status == 308) {
			op->done = r->range_end >= 0 ? r->range_end + 1 : 0;
			if (op->done < before)
				mtc_debug("'%s': the server holds %lld bytes, fewer than %lld", op->name,
					  op->done, before);
			if (op->done > before)
				mtc_store_progress_add(op->s, op->done - before);
			if (op->done > op->size)
				return xfer_fail(op, EIO,
						 "cannot upload '%s': the server claims %lld of %lld bytes",
						 op->name, op->done, op->size);
			op->state = U_CHUNK;
			if (op->done == op->size)
				op->state = U_QUERY; /* all sent and not finalised: ask again */
			return op->state == U_QUERY && before == op->size ? V_RETRY : V_AGAIN;
		}
		if (r->status == 404 || r->status == 410) {
			mtc_debug("'%s': the upload session is gone; starting again", op->name);
			op->done = 0;
			op->state = U_INIT;
			return V_AGAIN;
		}
		/* fall through */
	case U_SIMPLE:
		if (r->status != 200 && r->status != 201)
			return xfer_fail_with(op, r, "cannot upload");
		if (op->state == U_SIMPLE || op->done < op->size)
			mtc_store_progress_add(op->s, op->size - op->done);
		op->done = op->size;
		return up_check_stored(op, r, "cannot upload");
	}
	return V_FAIL;
}

void gcs_notify_parent(struct op *op)
{
	struct op *p = op->parent;

	if (op->err && p->state == U_PARTS && !p->child_err) {
		p->child_err = op->err;
		snprintf(p->lasterr, sizeof p->lasterr, "%s", op->lasterr);
	} else if (op->err && p->state == U_CLEAN) {
		mtc_warn("cannot remove a temporary part: %s", op->lasterr);
	}
	if (p->state == U_PARTS && !op->err)
		p->sl[op->slot].generation = op->generation;
	if (--p->pending)
		return;
	if (p->state == U_PARTS) {
		p->state = p->child_err ? U_CLEAN : U_COMPOSE;
		p->failed_with = p->child_err;
		p->child_err = 0;
		xfer_settle(p->xf->engine, p, V_AGAIN);
	} else {
		p->err = p->failed_with;
		xfer_settle(p->xf->engine, p, p->failed_with ? V_FAIL : V_DONE);
	}
}

#define PARTS ".mtc-parts/"

char *gcs_part_name(const struct op *p, size_t i) { return xasprintf("%s" PARTS "%02zu", p->name, i); }

int gcs_is_part(const char *name) { return strstr(name, PARTS) != NULL; }

static const struct op_type upload_type;

static void spawn_parts(struct op *p)
{
	for (size_t i = 0; i < p->n_sl; i++)
		xfer_add_part(p, i, gcs_part_name(p, i), U_PROBE);
}

static char *compose_json(struct op *p)
{
	json_t *src = json_array(), *j;
	char *text;

	for (size_t i = 0; i < p->n_sl; i++) {
		char *name = gcs_part_name(p, i), gen[32];
		snprintf(gen, sizeof gen, "%lld", p->sl[i].generation);
		json_array_append_new(src,
				      json_pack("{s:s, s:s, s:{s:s}}", "name", name, "generation", gen,
						"objectPreconditions", "ifGenerationMatch", gen));
		free(name);
	}
	j = json_pack("{s:o, s:{s:s}}", "sourceObjects", src, "destination", "contentType",
		      "application/octet-stream");
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return text;
}

static void up_complete(struct op *op) { xfer_upload_complete(op, gcs_notify_parent); }

static const struct op_type upload_type = { .prepare = up_prepare,
					    .finish = up_finish,
					    .complete = up_complete };

static const char boundary[] = "mtc-part-boundary-7f3a9c2e";

static void build_multipart(struct op *op, const char *data, size_t len)
{
	char *json = metadata_json(op->name, op->crc);
	char *head = xasprintf("--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n"
			       "--%s\r\nContent-Type: application/octet-stream\r\n\r\n",
			       boundary, json, boundary);
	char *tail = xasprintf("\r\n--%s--\r\n", boundary);
	size_t hl = strlen(head), tl = strlen(tail);

	op->body = xmalloc(hl + len + tl);
	memcpy(op->body, head, hl);
	if (len)
		memcpy(op->body + hl, data, len);
	memcpy(op->body + hl + len, tail, tl);
	op->body_len = (long long)(hl + len + tl);
	free(json);
	free(head);
	free(tail);
}

/* Opens the file, computes its CRC32C, and picks multipart or resumable. */
static int up_file(struct op *op, const char *path)
{
	char *buf;
	int e;

	if (op->size >= op->xf->threshold && op->xf->slices > 1) {
		/* a composite upload: each part's CRC32C, and the whole's from them */
		long long len = (op->size + op->xf->slices - 1) / op->xf->slices;
		op->crc = 0;
		for (long long off = 0; off < op->size; off += len) {
			long long n = op->size - off < len ? op->size - off : len;
			uint32_t crc;
			if (xfer_crc_of_range(op->fd, off, n, &crc) < 0) {
				e = errno;
				xfer_fail(op, e, "cannot read '%s': %s", path, strerror(e));
				return -1;
			}
			xfer_add_slice(op, off, n, crc);
			op->crc = mtc_crc32c_combine(op->crc, crc, (uint64_t)n);
		}
		op->state = U_PARTS;
		return 0;
	}
	buf = xmalloc(op->size <= SIMPLE_MAX ? (size_t)op->size + 1 : 8 << 20);
	op->crc = 0;
	for (long long off = 0; off < op->size;) {
		size_t want = op->size <= SIMPLE_MAX ? (size_t)(op->size - off) : 8 << 20;
		ssize_t n = pread(op->fd, op->size <= SIMPLE_MAX ? buf + off : buf, want, off);
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			free(buf);
			xfer_fail(op, e, "cannot read '%s': %s", path,
				  n < 0 ? strerror(e) : "file shrank");
			return -1;
		}
		op->crc = mtc_crc32c(op->crc, op->size <= SIMPLE_MAX ? buf + off : buf, (size_t)n);
		off += n;
	}
	if (op->size <= SIMPLE_MAX) {
		op->state = U_SIMPLE;
		build_multipart(op, buf, (size_t)op->size);
		close(op->fd);
		op->fd = -1;
	} else {
		op->state = U_INIT;
	}
	free(buf);
	return 0;
}

static void up_buf(struct op *op, const void *buf, size_t len)
{
	op->size = (long long)len;
	op->crc = mtc_crc32c(0, buf, len);
	op->state = U_SIMPLE;
	build_multipart(op, buf, len);
}

const struct xfer_upload gcs_upload = { &upload_type, up_file, up_buf };
