/*
 * s3://bucket/prefix: the S3 REST API, signed with SigV4 (s3_sign.h), on
 * the transfer engine (transfer.h).
 * Invariants: every request is signed at its start with the credentials of
 * that moment (a 401 or an ExpiredToken refreshes them once per op); a
 * create sends If-None-Match: * and the CRC32C of its bytes, and a 412 is
 * checked against the stored object, never assumed; a GET asks for the
 * stored CRC32C (x-amz-checksum-mode), checked when the server has a whole
 * object's one. Uploads are in store_s3_put.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "backends.h"
#include "backoff.h"
#include "buf.h"
#include "crc32c.h"
#include "log.h"
#include "s3.h"
#include "s3_xml.h"
#include "tmpname.h"
#include "xalloc.h"

/* ---------------------------------------------------------------- the api */

void s3_request(struct req *r, const char *method, const char *name, const char *fmt, ...)
{
	va_list ap;

	r->method = method;
	r->path = name ? xasprintf("/%s", name) : xstrdup("");
	r->query = NULL;
	if (fmt) {
		va_start(ap, fmt);
		r->query = xvasprintf(fmt, ap);
		va_end(ap);
	}
}

/* "Name: value" lines → pairs (pointing into copies kept in *keep). */
static size_t header_pairs(struct curl_slist *h, struct mtc_s3_pair **out, char ***keep)
{
	size_t n = 0;

	for (struct curl_slist *l = h; l; l = l->next)
		n++;
	*out = xcalloc(n + 1, sizeof **out);
	*keep = xcalloc(n + 1, sizeof **keep);
	n = 0;
	for (struct curl_slist *l = h; l; l = l->next) {
		char *line = xstrdup(l->data), *colon = strchr(line, ':');
		size_t k = 0;
		while ((*keep)[k])
			k++;
		(*keep)[k] = line;
		if (!colon)
			continue;
		*colon++ = '\0';
		while (*colon == ' ')
			colon++;
		(*out)[n].name = line;
		(*out)[n].value = colon;
		n++;
	}
	return n;
}

/* "a=1\nb\n" → pairs, in place. */
static size_t query_pairs(char *q, struct mtc_s3_pair **out)
{
	size_t n = 0, cap = 4;

	*out = xcalloc(cap, sizeof **out);
	for (char *line = q, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *eq = strchr(line, '=');
		if (eq)
			*eq++ = '\0';
		if (n == cap)
			*out = xrealloc(*out, (cap *= 2) * sizeof **out);
		(*out)[n].name = line;
		(*out)[n++].value = eq;
	}
	return n;
}

static int s3_authorize(struct op *op, struct req *r, int refresh, char **token, char *err,
			size_t errlen)
{
	struct s3 *b = (struct s3 *)op->xf;
	struct mtc_s3_creds c;
	struct mtc_s3_signed sg;
	struct mtc_s3_pair *hp, *qp;
	char **keep, *q = r->query ? xstrdup(r->query) : NULL, *path;
	size_t nh, nq;
	int rc;

	*token = NULL;
	if (mtc_s3_auth_get(b->auth, refresh, &c, err, errlen) < 0) {
		free(q);
		return -1;
	}
	nh = header_pairs(r->headers, &hp, &keep);
	nq = query_pairs(q, &qp);
	path = xasprintf("%s%s", b->t.path_prefix, r->path);
	if (!*path) {
		free(path);
		path = xstrdup("/");
	}
	struct mtc_s3_request sr = {
		.method = r->method ? r->method : "GET",
		.host = b->t.host,
		.path = path,
		.params = qp,
		.n_params = nq,
		.headers = hp,
		.n_headers = nh,
		.payload_hash = r->body_len > 0 || r->body ? MTC_S3_UNSIGNED_PAYLOAD : NULL,
		.region = b->t.region,
		.service = "s3",
		.when = time(NULL),
	};
	rc = mtc_s3_sign(&sr, &c, &sg, err, errlen);
	if (rc == 0) {
		curl_slist_free_all(r->headers);
		r->headers = sg.headers;
		sg.headers = NULL;
		free(r->url);
		r->url = xasprintf("%s%s%s%s", b->t.base, sg.path, *sg.query ? "?" : "", sg.query);
		mtc_s3_signed_free(&sg);
	}
	for (size_t i = 0; keep[i]; i++)
		free(keep[i]);
	free(keep);
	free(hp);
	free(qp);
	free(q);
	free(path);
	mtc_s3_creds_free(&c);
	return rc;
}

static void s3_header(struct req *r, const char *name, char *v)
{
	if (!strcasecmp(name, "etag")) {
		free(r->etag);
		r->etag = xstrdup(v);
	} else if (!strcasecmp(name, "x-amz-checksum-crc32c")) {
		/* a multipart object's is a checksum of checksums ("...-N"): not the bytes' */
		if (!strchr(v, '-') && mtc_crc32c_from_base64(v, &r->srv_crc) == 0)
			r->have_crc = 1;
	} else if (!strcasecmp(name, "content-length") && r->method && !strcmp(r->method, "HEAD")) {
		r->total = atoll(v);
	}
}

static void s3_message(const struct req *r, char *out, size_t outlen)
{
	char *code = mtc_s3_xml_text(r->mem.p, r->mem.len, "Code");
	char *msg = mtc_s3_xml_text(r->mem.p, r->mem.len, "Message");

	if (code && msg)
		snprintf(out, outlen, "%s: %s", code, msg);
	else
		snprintf(out, outlen, "%s", code ? code : msg ? msg : "");
	free(code);
	free(msg);
}

static int s3_expired(const struct req *r)
{
	char *code = r->mem.p ? mtc_s3_xml_text(r->mem.p, r->mem.len, "Code") : NULL;
	int yes = code && (!strcmp(code, "ExpiredToken") || !strcmp(code, "TokenRefreshRequired"));

	free(code);
	return yes;
}

static void s3_get(struct op *op, struct req *r)
{
	s3_request(r, "GET", op->name, NULL);
	xfer_header(r, "x-amz-checksum-mode: ENABLED");
}

/*
 * A request signed for another region than the bucket's: S3 names the
 * bucket's (<Region>), and the store moves there for every later request,
 * as the AWS SDKs do, saying so once.
 */
static int s3_moved(struct op *op, const struct req *r)
{
	struct s3 *b = (struct s3 *)op->xf;
	struct mtc_s3_target t;
	char *code, *region, err[256];
	int moved = 0;

	if (r->status != 400 && r->status != 301)
		return 0;
	code = r->mem.p ? mtc_s3_xml_text(r->mem.p, r->mem.len, "Code") : NULL;
	region = r->mem.p ? mtc_s3_xml_text(r->mem.p, r->mem.len, "Region") : NULL;
	if (code && region && *region &&
	    (!strcmp(code, "AuthorizationHeaderMalformed") || !strcmp(code, "PermanentRedirect"))) {
		if (!strcmp(region, b->t.region)) {
			moved = 1; /* another op moved the store already */
		} else if (mtc_s3_target_resolve(b->bucket, op->s->opt.s3_endpoint, region,
						 MTC_S3_STYLE_AUTO, &t, err, sizeof err) == 0) {
			mtc_warn("bucket '%s' is in region '%s', not '%s': using it (set AWS_REGION "
				 "to skip this)",
				 b->bucket, region, b->t.region);
			mtc_s3_target_free(&b->t);
			b->t = t;
			moved = 1;
		}
	}
	free(code);
	free(region);
	return moved;
}

const struct xfer_api s3_api = {
	s3_authorize,
	s3_header,
	s3_message,
	s3_get,
	s3_expired,
	s3_moved,
	"check the s3:// credential: $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, else $AWS_PROFILE's, "
	"and its access to the bucket"
};

/* Each <tag>...</tag> of xml in turn: *at moves past it; NULL after the last. */
const char *s3_element(const char **at, const char *end, const char *tag, size_t *len)
{
	char open[64], close[64];
	const char *a, *z;

	snprintf(open, sizeof open, "<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	a = memmem(*at, (size_t)(end - *at), open, strlen(open));
	if (!a)
		return NULL;
	a += strlen(open);
	z = memmem(a, (size_t)(end - a), close, strlen(close));
	if (!z)
		return NULL;
	*len = (size_t)(z - a);
	*at = z + strlen(close);
	return a;
}

/* ----------------------------------------------------- small reads, stat, delete */

/* K_LOOK: a delete looks first, since S3 answers 204 for an object that is not there */
enum {
	K_BUF = XK_BUF,
	K_RANGE = XK_RANGE,
	K_STAT = XK_STAT,
	K_LOOK = XK_DELETE,
	K_DELETE = XK_OWN,
	K_BATCH
};
#define BATCH_MAX 1000 /* keys in one DeleteObjects */

/* The base64 MD5 of len bytes at p (25 bytes with the NUL). */
static void md5_base64(const void *p, size_t len, char out[25])
{
	unsigned char md[16];
	unsigned int n = 0;

	EVP_Digest(p, len, md, &n, EVP_md5(), NULL);
	EVP_EncodeBlock((unsigned char *)out, md, 16);
}

static int small_prepare(struct op *op, struct req *r)
{
	switch (op->state) {
	case K_BUF:
		s3_get(op, r);
		xfer_sink_buf(op, r);
		break;
	case K_RANGE:
		s3_request(r, "GET", op->name, NULL);
		xfer_sink_range(op, r);
		break;
	case K_STAT:
	case K_LOOK: s3_request(r, "HEAD", op->name, NULL); break;
	case K_DELETE: s3_request(r, "DELETE", op->name, NULL); break;
	case K_BATCH: {
		char md5[25];
		md5_base64(op->body, (size_t)op->body_len, md5);
		s3_request(r, "POST", NULL, "delete");
		xfer_header(r, "Content-Type: application/xml");
		xfer_header(r, "Content-MD5: %s", md5);
		r->body = op->body;
		r->body_len = op->body_len;
		break;
	}
	}
	return 0;
}

static enum verdict small_finish(struct op *op, struct req *r)
{
	if (xfer_transient(r))
		return V_RETRY;
	if (r->status == 404) {
		if (op->state == K_DELETE)
			return V_DONE;
		return xfer_fail(op, ENOENT, "no such object '%s'", op->name);
	}
	switch (op->state) {
	case K_BUF: return xfer_finish_buf(op, r);
	case K_RANGE: return xfer_finish_range(op, r);
	case K_LOOK:
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot delete");
		op->state = K_DELETE;
		return V_AGAIN;
	case K_STAT:
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot stat");
		op->stat_out->size = r->total;
		op->stat_out->generation = 0;
		return V_DONE;
	case K_DELETE:
		if (r->status != 204 && r->status != 200)
			return xfer_fail_with(op, r, "cannot delete");
		return V_DONE;
	case K_BATCH: {
		const char *at = r->mem.p, *e;
		size_t len;
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot delete");
		if (at && (e = s3_element(&at, r->mem.p + r->mem.len, "Error", &len))) {
			char *key = mtc_s3_xml_text(e, len, "Key"),
			     *code = mtc_s3_xml_text(e, len, "Code");
			xfer_fail(op, EIO, "cannot delete '%s': %s", key ? key : "?", code ? code : "?");
			free(key);
			free(code);
			return V_FAIL;
		}
		return V_DONE;
	}
	}
	return V_FAIL;
}

static const struct op_type small_type = { .prepare = small_prepare, .finish = small_finish };

/* -------------------------------------------------------------------- list */

/* An ISO 8601 time in UTC as seconds since the epoch; 0 if not one. */
static long long iso_time(const char *text)
{
	double t = text ? mtc_s3_parse_time(text) : -1;
	return t > 0 ? (long long)t : 0;
}

static int list_prepare(struct op *op, struct req *r)
{
	s3_request(r, "GET", NULL, "list-type=2\nprefix=%s%s%s%s%s%s", op->xf->prefix, op->lprefix,
		   op->ldelim ? "\ndelimiter=" : "", op->ldelim ? op->ldelim : "",
		   op->page_token ? "\ncontinuation-token=" : "", op->page_token ? op->page_token : "");
	return 0;
}

static enum verdict list_finish(struct op *op, struct req *r)
{
	size_t plen = strlen(op->xf->prefix), len;
	const char *at, *end, *e;
	char *trunc, *tok;

	if (xfer_transient(r))
		return V_RETRY;
	if (r->status != 200)
		return xfer_fail_with(op, r, "cannot list");
	if (!r->mem.p || !strstr(mtc_buf_str(&r->mem), "<ListBucketResult"))
		return xfer_fail(op, EIO, "cannot list '%s': the answer is not a listing", op->name);
	at = r->mem.p;
	end = r->mem.p + r->mem.len;
	while ((e = s3_element(&at, end, "Contents", &len))) {
		char *name = mtc_s3_xml_text(e, len, "Key"), *size = mtc_s3_xml_text(e, len, "Size");
		char *when = mtc_s3_xml_text(e, len, "LastModified");
		if (name && !strncmp(name, op->xf->prefix, plen) && name[plen]) {
			mtc_store_list_add_object(op->list, name + plen, size ? atoll(size) : 0, 0);
			op->list->objects[op->list->n_objects - 1].updated = iso_time(when);
		}
		free(name);
		free(size);
		free(when);
	}
	at = r->mem.p;
	while ((e = s3_element(&at, end, "CommonPrefixes", &len))) {
		char *name = mtc_s3_xml_text(e, len, "Prefix");
		if (name && !strncmp(name, op->xf->prefix, plen))
			mtc_store_list_add_prefix(op->list, name + plen);
		free(name);
	}
	trunc = mtc_s3_xml_text(r->mem.p, r->mem.len, "IsTruncated");
	tok = mtc_s3_xml_text(r->mem.p, r->mem.len, "NextContinuationToken");
	free(op->page_token);
	op->page_token = trunc && !strcmp(trunc, "true") && tok && *tok ? tok : NULL;
	if (!op->page_token)
		free(tok);
	free(trunc);
	return op->page_token ? V_AGAIN : V_DONE;
}

static const struct op_type list_type = { .prepare = list_prepare, .finish = list_finish };

static int s3_list(struct mtc_store *s, const char *prefix, const char *delim,
		   struct mtc_store_list *out)
{
	return xfer_list(s, &list_type, prefix, delim, 0, out);
}

static void xml_escaped(struct mtc_buf *b, const char *s)
{
	for (; *s; s++) {
		const char *ent = *s == '&'    ? "&amp;"
				  : *s == '<'  ? "&lt;"
				  : *s == '>'  ? "&gt;"
				  : *s == '"'  ? "&quot;"
				  : *s == '\'' ? "&apos;"
					       : NULL;
		if (ent)
			mtc_buf_appendf(b, "%s", ent);
		else
			mtc_buf_append(b, s, 1);
	}
}

/* A DeleteObjects of names[0..n) (keys under the location). */
static struct op *batch_op(struct mtc_store *s, char **names, size_t n)
{
	struct op *op = xfer_op_new(s, &small_type);
	struct mtc_buf b = MTC_BUF_INIT(1 << 30);

	op->state = K_BATCH;
	op->name = xasprintf("%s/%s", s->url, names[0]);
	mtc_buf_appendf(&b, "<Delete><Quiet>true</Quiet>");
	for (size_t i = 0; i < n; i++) {
		mtc_buf_appendf(&b, "<Object><Key>");
		xml_escaped(&b, op->xf->prefix);
		xml_escaped(&b, names[i]);
		mtc_buf_appendf(&b, "</Key></Object>");
	}
	mtc_buf_appendf(&b, "</Delete>");
	op->body_len = (long long)b.len;
	op->body = mtc_buf_take(&b);
	return op;
}

/*
 * Deletes the uploads under prefix (before the objects, which are what
 * lists it), then the listed objects, .meta first, each group in parallel
 * batches.
 */
static int s3_delete_prefix(struct mtc_store *s, const char *prefix)
{
	struct mtc_store_list l;
	struct op **ops;
	char **names;
	size_t n = 0;
	int rc = 0;

	if (s3_uploads(s, prefix, -1, 1, NULL, NULL) < 0)
		return -1;
	memset(&l, 0, sizeof l);
	if (s3_list(s, prefix, NULL, &l) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	ops = xcalloc(l.n_objects + 1, sizeof *ops);
	names = xcalloc(l.n_objects + 1, sizeof *names);
	for (int pass = 0; pass < 2; pass++) {
		size_t start_n = n, m = 0;
		for (size_t i = 0; i < l.n_objects; i++) {
			if (mtc_store_ends_with(l.objects[i].name, ".meta") != !pass)
				continue;
			names[m++] = l.objects[i].name;
			if (m == BATCH_MAX) {
				ops[n++] = batch_op(s, names, m);
				m = 0;
			}
		}
		if (m)
			ops[n++] = batch_op(s, names, m);
		rc = xfer_run(s, ops + start_n, n - start_n);
		if (rc < 0)
			break;
	}
	for (size_t i = 0; i < n; i++)
		xfer_op_free(ops[i]);
	free(ops);
	free(names);
	mtc_store_list_free(&l);
	return rc;
}

/* A killed run's multipart uploads: no object, but bytes the bucket keeps. */
static long s3_leftovers(struct mtc_store *s, const char *prefix, int remove, mtc_store_leftover_fn *fn,
			 void *arg)
{
	return s3_uploads(s, prefix, mtc_tmp_stale_s(), remove, fn, arg);
}

/* -------------------------------------------------------------------- open */

static void s3_close(struct mtc_store *s)
{
	struct s3 *b = s->impl;

	if (!b)
		return;
	xfer_close(&b->xf);
	mtc_s3_auth_free(b->auth);
	mtc_s3_target_free(&b->t);
	free(b->bucket);
	free(b);
}

/* the rest are the engine's (xfer_init) */
static const struct mtc_store_ops s3_ops = {
	.list = s3_list,
	.delete_prefix = s3_delete_prefix,
	.leftovers = s3_leftovers,
	.close = s3_close,
};

int mtc_store_s3_open(struct mtc_store *s, const char *bucket, const char *prefix, char *err,
		      size_t errlen)
{
	struct s3 *b = xcalloc(1, sizeof *b);

	xfer_init(&b->xf, s, &s3_api, prefix, "MTC_S3_RETRY_BASE_MS", &s3_ops);
	b->xf.up = &s3_upload;
	b->xf.small = &small_type;
	s->impl = b;
	b->bucket = xstrdup(bucket);
	if (mtc_s3_target_resolve(bucket, s->opt.s3_endpoint, NULL, MTC_S3_STYLE_AUTO, &b->t, err,
				  errlen) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (mtc_s3_auth_new(b->t.region, &b->auth, err, errlen) < 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}
