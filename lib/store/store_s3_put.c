/*
 * s3:// uploads (s3.h): PutObject, or a multipart upload whose parts go in
 * parallel. Invariants: a create is create-only (If-None-Match: *) unless
 * MTC_STORE_REPLACE, and a 412 is checked against the stored object; every
 * body carries its CRC32C (x-amz-checksum-crc32c), checked by the server; a
 * multipart upload that fails is aborted, and one whose completion's answer
 * was lost is recognised by the object it made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "buf.h"
#include "crc32c.h"
#include "fault.h"
#include "log.h"
#include "s3.h"
#include "s3_xml.h"
#include "xalloc.h"

#define PART_MIN (5LL << 20) /* S3's smallest part but the last */
#define PARTS_MAX 10000

/*
 * U_PUT sends the object in one request. A big file is a multipart upload:
 * U_FIND looks for one that a killed run of ours left for this object, and
 * U_LIST for its parts that are whole (the same size, and the same CRC32C
 * or MD5), which are kept; else U_CREATE starts one; U_PARTS uploads its parts as children (U_PART) at
 * once, U_COMPLETE makes the object of them, U_ABORT drops them after a
 * failure. U_CHECK looks at what a 412, or a completion whose upload is
 * gone, found.
 */
enum { U_PUT, U_CHECK, U_FIND, U_LIST, U_CREATE, U_PARTS, U_PART, U_COMPLETE, U_ABORT };

static const struct op_type upload_type;

static void crc_header(struct req *r, uint32_t crc)
{
	char b64[9];
	mtc_crc32c_base64(crc, b64);
	xfer_header(r, "x-amz-sdk-checksum-algorithm: CRC32C");
	xfer_header(r, "x-amz-checksum-crc32c: %s", b64);
}

static void spawn_parts(struct op *p)
{
	if (!p->tags)
		p->tags = xcalloc(p->n_sl, sizeof *p->tags);
	for (size_t i = 0; i < p->n_sl; i++)
		if (!p->tags[i])
			xfer_add_part(p, i, xstrdup(p->name), U_PART);
}

static char *complete_xml(struct op *p)
{
	struct mtc_buf b = MTC_BUF_INIT(1 << 24);
	char b64[9];

	mtc_buf_appendf(&b, "<CompleteMultipartUpload>");
	for (size_t i = 0; i < p->n_sl; i++) {
		mtc_crc32c_base64(p->sl[i].crc, b64);
		mtc_buf_appendf(&b,
				"<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag>"
				"<ChecksumCRC32C>%s</ChecksumCRC32C></Part>",
				i + 1, p->tags[i], b64);
	}
	mtc_buf_appendf(&b, "</CompleteMultipartUpload>");
	return mtc_buf_take(&b);
}

/* An upload of op->name that a killed run left (the newest listed), in op->session. */
static void find_upload(struct op *op, struct req *r)
{
	const char *at = r->mem.p, *e;
	size_t len;

	if (r->status != 200 || !at)
		return; /* none, or not ours to list: start one */
	while ((e = s3_element(&at, r->mem.p + r->mem.len, "Upload", &len))) {
		char *key = mtc_s3_xml_text(e, len, "Key"), *id = mtc_s3_xml_text(e, len, "UploadId");
		if (key && id && !strcmp(key, op->name)) {
			free(op->session);
			op->session = id;
			id = NULL;
		}
		free(key);
		free(id);
	}
}

/* Keeps the listed parts that hold our bytes; -1 when the answer is not a listing. */
static int keep_parts(struct op *op, struct req *r)
{
	const char *at = r->mem.p, *e;
	size_t len, kept = 0;

	if (!at || !strstr(at, "<ListPartsResult"))
		return -1;
	op->tags = xcalloc(op->n_sl, sizeof *op->tags);
	while ((e = s3_element(&at, r->mem.p + r->mem.len, "Part", &len))) {
		char *num = mtc_s3_xml_text(e, len, "PartNumber"),
		     *size = mtc_s3_xml_text(e, len, "Size");
		char *tag = mtc_s3_xml_text(e, len, "ETag"),
		     *crc = mtc_s3_xml_text(e, len, "ChecksumCRC32C");
		long long i = num ? atoll(num) - 1 : -1;
		char b64[9], md5[35];
		if (i >= 0 && i < (long long)op->n_sl && size && tag && atoll(size) == op->sl[i].len &&
		    !op->tags[i]) {
			mtc_crc32c_base64(op->sl[i].crc, b64);
			md5[0] = '"';
			for (int k = 0; k < 16; k++)
				snprintf(md5 + 1 + 2 * k, 3, "%02x", op->sl[i].md5[k]);
			strcpy(md5 + 33, "\"");
			if ((crc && !strcmp(crc, b64)) || !strcmp(tag, md5)) {
				op->tags[i] = tag;
				tag = NULL;
				kept++;
				mtc_store_progress_add(op->s, op->sl[i].len);
			}
		}
		free(num);
		free(size);
		free(tag);
		free(crc);
	}
	mtc_debug("'%s': an earlier run uploaded %zu of %zu parts; keeping them", op->name, kept,
		  op->n_sl);
	return 0;
}

/* The CRC32C and MD5 of a range of fd; -1 with errno. */
static int sums_of_range(int fd, long long off, long long size, uint32_t *crc, unsigned char md5[16])
{
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	char *buf = xmalloc(4 << 20);
	int rc = 0;

	*crc = 0;
	EVP_DigestInit_ex(m, EVP_md5(), NULL);
	for (long long end = off + size; off < end;) {
		long long want = end - off < (4 << 20) ? end - off : (4 << 20);
		ssize_t n = pread(fd, buf, (size_t)want, off);
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			rc = -1;
			break;
		}
		*crc = mtc_crc32c(*crc, buf, (size_t)n);
		EVP_DigestUpdate(m, buf, (size_t)n);
		off += n;
	}
	EVP_DigestFinal_ex(m, md5, NULL);
	EVP_MD_CTX_free(m);
	free(buf);
	return rc;
}

static int up_prepare(struct op *op, struct req *r)
{
	int create_only = !(op->flags & MTC_STORE_REPLACE);

	switch (op->state) {
	case U_PARTS:
		spawn_parts(op);
		op->now = op->pending ? V_WAIT : V_AGAIN;
		if (!op->pending)
			op->state = U_COMPLETE;
		return 1;
	case U_PUT:
		s3_request(r, "PUT", op->name, NULL);
		xfer_header(r, "Content-Type: application/octet-stream");
		if (create_only)
			xfer_header(r, "If-None-Match: *");
		crc_header(r, op->crc);
		if (op->fd >= 0) {
			xfer_put_body(r, op->fd, 0, op->size);
		} else {
			r->body = op->body;
			r->body_len = op->body_len;
		}
		break;
	case U_CHECK:
		s3_request(r, "HEAD", op->name, NULL);
		xfer_header(r, "x-amz-checksum-mode: ENABLED");
		break;
	case U_FIND: s3_request(r, "GET", NULL, "uploads\nprefix=%s", op->name); break;
	case U_LIST: s3_request(r, "GET", op->name, "uploadId=%s", op->session); break;
	case U_CREATE:
		s3_request(r, "POST", op->name, "uploads");
		xfer_header(r, "Content-Type: application/octet-stream");
		xfer_header(r, "x-amz-checksum-algorithm: CRC32C");
		r->body = "";
		break;
	case U_PART:
		s3_request(r, "PUT", op->name, "partNumber=%zu\nuploadId=%s", op->slot + 1,
			   op->parent->session);
		crc_header(r, op->crc);
		xfer_put_body(r, op->fd, op->off, op->size);
		break;
	case U_COMPLETE:
		mtc_fault_stall("s3-complete", op->name);
		s3_request(r, "POST", op->name, "uploadId=%s", op->session);
		xfer_header(r, "Content-Type: application/xml");
		if (create_only)
			xfer_header(r, "If-None-Match: *");
		free(op->body);
		op->body = complete_xml(op);
		r->body = op->body;
		r->body_len = (long long)strlen(op->body);
		break;
	case U_ABORT: s3_request(r, "DELETE", op->name, "uploadId=%s", op->session); break;
	}
	return 0;
}

/* What a HEAD found where we meant to create: ours if its size and CRC32C are. */
static enum verdict check_stored(struct op *op, struct req *r)
{
	if (r->status == 404)
		return V_AGAIN;
	if (r->status != 200)
		return xfer_fail_with(op, r, "cannot check");
	if (r->total != op->size || (r->have_crc && r->srv_crc != op->crc) ||
	    (!r->have_crc && !op->n_sl))
		return xfer_fail(op, EEXIST, "object exists '%s'", op->name);
	return V_DONE;
}

static enum verdict up_finish(struct op *op, struct req *r)
{
	enum verdict v;
	char *id;

	if (xfer_transient(r))
		return V_RETRY;
	switch (op->state) {
	case U_PUT:
		if (r->status == 412) {
			/* an earlier attempt of ours may have made it: look before saying so */
			op->state = U_CHECK;
			return V_AGAIN;
		}
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot upload");
		mtc_store_progress_add(op->s, op->size);
		return V_DONE;
	case U_CHECK:
		v = check_stored(op, r);
		if (v == V_AGAIN) { /* nothing there: send it again */
			op->state = op->n_sl ? U_FIND : U_PUT;
			return V_RETRY;
		}
		if (op->n_sl && op->session && v != V_DONE) {
			op->failed_with = op->err;
			op->err = 0;
			op->state = U_ABORT;
			return V_AGAIN;
		}
		return v;
	case U_FIND:
		find_upload(op, r);
		op->state = op->session ? U_LIST : U_CREATE;
		return V_AGAIN;
	case U_LIST:
		if (r->status != 200 || keep_parts(op, r) < 0) {
			free(op->session);
			op->session = NULL;
			op->state = U_CREATE;
		} else {
			op->state = U_PARTS;
		}
		return V_AGAIN;
	case U_CREATE:
		id = r->status == 200 ? mtc_s3_xml_text(r->mem.p, r->mem.len, "UploadId") : NULL;
		if (!id)
			return xfer_fail_with(op, r, "cannot start uploading");
		free(op->session);
		op->session = id;
		op->state = U_PARTS;
		return V_AGAIN;
	case U_PART:
		if (r->status != 200 || !r->etag)
			return xfer_fail_with(op, r, "cannot upload a part of");
		op->parent->tags[op->slot] = xstrdup(r->etag);
		mtc_store_progress_add(op->s, op->size);
		return V_DONE;
	case U_COMPLETE:
		/* an error may come as a 200 whose body says so */
		if (r->status == 200 && r->mem.p && strstr(mtc_buf_str(&r->mem), "<Error>"))
			return V_RETRY;
		if (r->status == 200)
			return V_DONE;
		if (r->status == 412 || r->status == 404) {
			/* someone's object is there, or our completion's answer was lost */
			op->state = U_CHECK;
			return V_AGAIN;
		}
		xfer_fail_with(op, r, "cannot complete uploading");
		op->failed_with = op->err;
		op->err = 0;
		op->state = U_ABORT;
		return V_AGAIN;
	case U_ABORT:
		if (r->status != 204 && r->status != 200 && r->status != 404)
			mtc_warn("cannot abort the upload of '%s' (HTTP %ld)", op->name, r->status);
		op->err = op->failed_with ? op->failed_with : EIO;
		return V_FAIL;
	}
	return V_FAIL;
}

/* A part is over; the last one moves the upload on. */
static void notify_parent(struct op *op)
{
	struct op *p = op->parent;

	if (op->err && !p->child_err) {
		p->child_err = op->err;
		snprintf(p->lasterr, sizeof p->lasterr, "%s", op->lasterr);
	}
	if (--p->pending)
		return;
	if (p->child_err) {
		p->failed_with = p->child_err;
		p->child_err = 0;
		p->state = U_ABORT;
	} else {
		p->state = U_COMPLETE;
	}
	xfer_settle(p->xf->engine, p, V_AGAIN);
}

static void up_complete(struct op *op) { xfer_upload_complete(op, notify_parent); }

static const struct op_type upload_type = { .prepare = up_prepare,
					    .finish = up_finish,
					    .complete = up_complete };

/* Opens the file and computes its CRC32C, each part's for a multipart upload. */
static int up_file(struct op *op, const char *path)
{
	long long len;
	int e;

	op->state = U_PUT;
	if (op->size < op->xf->threshold || op->xf->slices < 2 || op->size <= PART_MIN) {
		if (xfer_crc_of_range(op->fd, 0, op->size, &op->crc) < 0) {
			e = errno;
			return xfer_fail(op, e, "cannot read '%s': %s", path, strerror(e)), -1;
		}
		return 0;
	}
	len = (op->size + op->xf->slices - 1) / op->xf->slices;
	if (len < PART_MIN)
		len = PART_MIN;
	if ((op->size + len - 1) / len > PARTS_MAX)
		len = (op->size + PARTS_MAX - 1) / PARTS_MAX;
	op->crc = 0;
	for (long long off = 0; off < op->size; off += len) {
		long long n = op->size - off < len ? op->size - off : len;
		uint32_t crc;
		unsigned char md5[16];
		if (sums_of_range(op->fd, off, n, &crc, md5) < 0) {
			e = errno;
			return xfer_fail(op, e, "cannot read '%s': %s", path, strerror(e)), -1;
		}
		xfer_add_slice(op, off, n, crc);
		memcpy(op->sl[op->n_sl - 1].md5, md5, 16);
		op->crc = mtc_crc32c_combine(op->crc, crc, (uint64_t)n);
	}
	op->state = U_FIND;
	return 0;
}

static void set_buf(struct op *op, const void *buf, size_t len)
{
	op->size = (long long)len;
	op->crc = mtc_crc32c(0, buf, len);
	op->body = xmalloc(len + 1);
	if (len)
		memcpy(op->body, buf, len);
	op->body_len = (long long)len;
	op->state = U_PUT;
}

const struct xfer_upload s3_upload = { &upload_type, up_file, set_buf };
