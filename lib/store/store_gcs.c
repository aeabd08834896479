/*
 * gs://bucket/prefix: the GCS JSON API on the transfer engine (transfer.h).
 * Invariants: creates carry ifGenerationMatch=0 and the CRC32C of the data,
 * and the CRC32C the server reports is checked; a 412 is checked against
 * the stored object, never assumed (an attempt whose answer was lost, or one
 * libcurl resent by itself, may have created it). Uploads are in
 * store_gcs_put.c; downloads are the engine's, reading x-goog-generation and
 * x-goog-hash through the api below.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "backends.h"
#include "backoff.h"
#include "crc32c.h"
#include "gcs.h"
#include "gcs_auth.h"
#include "tmpname.h"
#include "xalloc.h"

/* ---------------------------------------------------------------- helpers */

char *gcs_enc(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(strlen(s) * 3 + 1), *o = out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

char *gcs_object_url(struct gcs *g, const char *name, const char *query)
{
	char *b = gcs_enc(g->bucket), *n = gcs_enc(name);
	char *url = xasprintf("%s/storage/v1/b/%s/o/%s%s%s", g->base, b, n, query ? "?" : "",
			      query ? query : "");
	free(b);
	free(n);
	return url;
}

char *gcs_upload_url(struct gcs *g, const char *type, int create_only)
{
	char *b = gcs_enc(g->bucket);
	char *url = xasprintf("%s/upload/storage/v1/b/%s/o?uploadType=%s%s", g->base, b, type,
			      create_only ? "&ifGenerationMatch=0" : "");
	free(b);
	return url;
}

/* Object metadata JSON → size, generation, crc32c. */
int gcs_parse_meta(const char *buf, size_t len, long long *size, long long *gen, uint32_t *crc,
		   int *have_crc)
{
	json_t *j = json_loadb(buf ? buf : "", len, 0, NULL);
	const char *sz, *gn, *cr;

	if (!j)
		return -1;
	sz = json_string_value(json_object_get(j, "size"));
	gn = json_string_value(json_object_get(j, "generation"));
	cr = json_string_value(json_object_get(j, "crc32c"));
	*size = sz ? atoll(sz) : -1;
	*gen = gn ? atoll(gn) : 0;
	*have_crc = cr && mtc_crc32c_from_base64(cr, crc) == 0;
	json_decref(j);
	return sz ? 0 : -1;
}

/* --------------------------------------------------------------- the api */

static int gcs_authorize(struct op *op, struct req *r, int refresh, char **token, char *err,
			 size_t errlen)
{
	(void)r;
	return mtc_gcs_auth_token(((struct gcs *)op->xf)->auth, refresh, token, err, errlen);
}

static void gcs_header(struct req *r, const char *name, char *v)
{
	if (!strcasecmp(name, "x-goog-generation")) {
		r->generation = atoll(v);
	} else if (!strcasecmp(name, "x-goog-hash")) {
		for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
			while (*tok == ' ')
				tok++;
			if (!strncmp(tok, "crc32c=", 7) &&
			    mtc_crc32c_from_base64(tok + 7, &r->srv_crc) == 0)
				r->have_crc = 1;
		}
	}
}

static void gcs_message(const struct req *r, char *out, size_t outlen)
{
	json_t *j = json_loadb(r->mem.p, r->mem.len, 0, NULL);
	const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

	snprintf(out, outlen, "%s", msg ? msg : "");
	json_decref(j);
}

static void gcs_get(struct op *op, struct req *r)
{
	char q[64];

	if (op->generation)
		snprintf(q, sizeof q, "alt=media&generation=%lld", op->generation);
	else
		snprintf(q, sizeof q, "alt=media");
	r->url = gcs_object_url((struct gcs *)op->xf, op->name, q);
}

static const struct xfer_api gcs_api = {
	gcs_authorize,
	gcs_header,
	gcs_message,
	gcs_get,
	NULL,
	NULL,
	"check the gs:// credential: --gcs-token-file, $MTC_GCS_TOKEN, else the application default "
	"credentials or the metadata server, and its access to the bucket"
};

/* ----------------------------------------------------- small reads, stat, delete */

enum { K_BUF = XK_BUF, K_RANGE = XK_RANGE, K_STAT = XK_STAT, K_DELETE = XK_DELETE };
enum { GONE_IS_DONE = 1 }; /* small op flag: a delete that finds nothing succeeds */

static int small_prepare(struct op *op, struct req *r)
{
	struct gcs *g = (struct gcs *)op->xf;

	switch (op->state) {
	case K_BUF:
		r->url = gcs_object_url(g, op->name, "alt=media");
		xfer_sink_buf(op, r);
		break;
	case K_RANGE:
		r->url = gcs_object_url(g, op->name, "alt=media");
		xfer_sink_range(op, r);
		break;
	case K_STAT: r->url = gcs_object_url(g, op->name, NULL); break;
	case K_DELETE:
		r->url = gcs_object_url(g, op->name, NULL);
		r->method = "DELETE";
		break;
	}
	return 0;
}

static enum verdict small_finish(struct op *op, struct req *r)
{
	if (xfer_transient(r))
		return V_RETRY;
	if (r->status == 404) {
		/* a lost attempt did it (libcurl repeats one cut on a reused connection by itself) */
		if (op->state == K_DELETE && (op->retried || (op->flags & GONE_IS_DONE)))
			return V_DONE;
		return xfer_fail(op, ENOENT, "no such object '%s'", op->name);
	}
	switch (op->state) {
	case K_BUF: return xfer_finish_buf(op, r);
	case K_RANGE: return xfer_finish_range(op, r);
	case K_STAT:
		if (r->status != 200)
			return xfer_fail_with(op, r, "cannot stat");
		if (gcs_parse_meta(r->mem.p, r->mem.len, &op->stat_out->size, &op->stat_out->generation,
				   &op->crc, &op->have_expect) < 0)
			return xfer_fail(op, EIO, "cannot stat '%s': not object metadata", op->name);
		return V_DONE;
	case K_DELETE:
		if (r->status != 204 && r->status != 200)
			return xfer_fail_with(op, r, "cannot delete");
		return V_DONE;
	}
	return V_FAIL;
}

static void small_complete(struct op *op)
{
	if (op->parent)
		gcs_notify_parent(op);
}

const struct op_type gcs_small_type = { .prepare = small_prepare,
					.finish = small_finish,
					.complete = small_complete };

/* Deletes a composite upload's parts; one already gone is done. */
void gcs_spawn_part_deletes(struct op *p)
{
	for (size_t i = 0; i < p->n_sl; i++) {
		struct op *c = xfer_op_new(p->s, &gcs_small_type);
		c->parent = p;
		c->name = gcs_part_name(p, i);
		c->state = K_DELETE;
		c->flags = GONE_IS_DONE;
		p->pending++;
		xfer_add(p->xf->engine, c);
	}
}

struct op *gcs_small_op(struct mtc_store *s, int kind, const char *key)
{
	return xfer_small_op(s, &gcs_small_type, kind, key);
}

/* -------------------------------------------------------------------- list */

/* An RFC 3339 time in UTC ("2025-06-30T14:30:00.123Z") as seconds since the epoch; 0 if not one. */
static long long rfc3339(const char *text)
{
	struct tm tm = { 0 };
	int n = 0;

	if (!text ||
	    sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec, &n) != 6 ||
	    !n)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (long long)timegm(&tm);
}

static int list_prepare(struct op *op, struct req *r)
{
	struct gcs *g = (struct gcs *)op->xf;
	char *b = gcs_enc(g->bucket), *full = xasprintf("%s%s", g->xf.prefix, op->lprefix);
	char *p = gcs_enc(full), *d = op->ldelim ? gcs_enc(op->ldelim) : NULL;
	char *t = op->page_token ? gcs_enc(op->page_token) : NULL;

	r->url = xasprintf("%s/storage/v1/b/%s/o?prefix=%s%s%s%s%s&maxResults=1000"
			   "&fields=items(name,size,generation,updated),prefixes,nextPageToken",
			   g->base, b, p, d ? "&delimiter=" : "", d ? d : "", t ? "&pageToken=" : "",
			   t ? t : "");
	free(b);
	free(full);
	free(p);
	free(d);
	free(t);
	return 0;
}

static enum verdict list_finish(struct op *op, struct req *r)
{
	size_t plen = strlen(op->xf->prefix), i;
	json_t *j, *v;
	const char *tok;

	if (xfer_transient(r))
		return V_RETRY;
	if (r->status != 200)
		return xfer_fail_with(op, r, "cannot list");
	j = json_loadb(mtc_buf_str(&r->mem), r->mem.len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return xfer_fail(op, EIO, "cannot list '%s': the answer is not JSON", op->name);
	}
	json_array_foreach (json_object_get(j, "items"), i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *size = json_string_value(json_object_get(v, "size"));
		const char *gen = json_string_value(json_object_get(v, "generation"));
		if (name && !strncmp(name, op->xf->prefix, plen) && name[plen] &&
		    (op->ltemps || !gcs_is_part(name + plen))) {
			mtc_store_list_add_object(op->list, name + plen, size ? atoll(size) : 0,
						  gen ? atoll(gen) : 0);
			op->list->objects[op->list->n_objects - 1].updated = rfc3339(
				json_string_value(json_object_get(v, "updated")));
		}
	}
	json_array_foreach (json_object_get(j, "prefixes"), i, v) {
		const char *name = json_string_value(v);
		if (name && !strncmp(name, op->xf->prefix, plen) &&
		    (op->ltemps || !gcs_is_part(name + plen)))
			mtc_store_list_add_prefix(op->list, name + plen);
	}
	tok = json_string_value(json_object_get(j, "nextPageToken"));
	free(op->page_token);
	op->page_token = tok && *tok ? xstrdup(tok) : NULL;
	json_decref(j);
	return op->page_token ? V_AGAIN : V_DONE;
}

static const struct op_type list_type = { .prepare = list_prepare, .finish = list_finish };

/* temps: composite uploads' parts too, which listings skip. */
static int list_all(struct mtc_store *s, const char *prefix, const char *delim, int temps,
		    struct mtc_store_list *out)
{
	return xfer_list(s, &list_type, prefix, delim, temps, out);
}

static int gcs_list(struct mtc_store *s, const char *prefix, const char *delim,
		    struct mtc_store_list *out)
{
	return list_all(s, prefix, delim, 0, out);
}

/* Deletes the listed objects, .meta first, each group in parallel. */
static int gcs_delete_prefix(struct mtc_store *s, const char *prefix)
{
	struct mtc_store_list l;
	struct op **ops;
	size_t n = 0;
	int rc;

	memset(&l, 0, sizeof l);
	if (list_all(s, prefix, NULL, 1, &l) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	ops = xcalloc(l.n_objects + 1, sizeof *ops);
	for (int pass = 0; pass < 2; pass++) {
		size_t start_n = n;
		for (size_t i = 0; i < l.n_objects; i++)
			if (mtc_store_ends_with(l.objects[i].name, ".meta") == !pass) {
				ops[n] = gcs_small_op(s, K_DELETE, l.objects[i].name);
				ops[n++]->flags = GONE_IS_DONE;
			}
		rc = xfer_run(s, ops + start_n, n - start_n);
		if (rc < 0)
			break;
	}
	for (size_t i = 0; i < n; i++)
		xfer_op_free(ops[i]);
	free(ops);
	mtc_store_list_free(&l);
	return rc;
}

/*
 * A killed composite upload's parts, the only temporaries this backend
 * leaves: no lock tells that their writer is gone, so their age does
 * (mtc_tmp_stale_s(), against the time the store gives them). A part
 * reused by the next upload of its object is rewritten, so young again.
 */
static long gcs_leftovers(struct mtc_store *s, const char *prefix, int remove, mtc_store_leftover_fn *fn,
			  void *arg)
{
	struct mtc_store_list l;
	struct op **ops;
	long long now = (long long)time(NULL), stale = mtc_tmp_stale_s();
	size_t n = 0;
	int rc = 0;

	memset(&l, 0, sizeof l);
	if (list_all(s, prefix, NULL, 1, &l) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	ops = xcalloc(l.n_objects + 1, sizeof *ops);
	for (size_t i = 0; i < l.n_objects; i++) {
		const struct mtc_store_object *o = &l.objects[i];
		if (!gcs_is_part(o->name) || !o->updated || now - o->updated < stale)
			continue;
		if (fn) {
			char *where = xasprintf("%s/%s", s->url, o->name);
			fn(where, o->size, arg);
			free(where);
		}
		ops[n] = gcs_small_op(s, K_DELETE, o->name);
		ops[n++]->flags = GONE_IS_DONE;
	}
	if (remove)
		rc = xfer_run(s, ops, n);
	for (size_t i = 0; i < n; i++)
		xfer_op_free(ops[i]);
	free(ops);
	mtc_store_list_free(&l);
	return rc < 0 ? -1 : (long)n;
}

/* -------------------------------------------------------------------- open */

static void gcs_close(struct mtc_store *s)
{
	struct gcs *g = s->impl;

	if (!g)
		return;
	xfer_close(&g->xf);
	mtc_gcs_auth_free(g->auth);
	free(g->bucket);
	free(g->base);
	free(g);
}

/* the rest are the engine's (xfer_init) */
static const struct mtc_store_ops gcs_ops = {
	.list = gcs_list,
	.delete_prefix = gcs_delete_prefix,
	.leftovers = gcs_leftovers,
	.close = gcs_close,
};

int mtc_store_gcs_open(struct mtc_store *s, const char *bucket, const char *prefix, char *err,
		       size_t errlen)
{
	struct gcs *g = xcalloc(1, sizeof *g);
	const char *emu = getenv("STORAGE_EMULATOR_HOST"), *endpoint = getenv("MTC_GCS_ENDPOINT");
	size_t n;

	xfer_init(&g->xf, s, &gcs_api, prefix, "MTC_GCS_RETRY_BASE_MS", &gcs_ops);
	g->xf.up = &gcs_upload;
	g->xf.small = &gcs_small_type;
	s->impl = g;
	g->bucket = xstrdup(bucket);
	if (endpoint && *endpoint)
		g->base = xstrdup(endpoint);
	else if (emu && *emu)
		g->base = strstr(emu, "://") ? xstrdup(emu) : xasprintf("http://%s", emu);
	else
		g->base = xstrdup("https://storage.googleapis.com");
	n = strlen(g->base);
	while (n && g->base[n - 1] == '/')
		g->base[--n] = '\0';
	const char *chunk_kib = getenv("MTC_GCS_CHUNK_KIB");
	g->chunk = chunk_kib && *chunk_kib ? atoll(chunk_kib) << 10 : GCS_CHUNK;
	g->chunk -= g->chunk % (256 << 10);
	if (g->chunk <= 0)
		g->chunk = 256 << 10;
	if (mtc_gcs_auth_new(s->opt.token_file, &g->auth, err, errlen) < 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}
