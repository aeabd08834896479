/*
 * gs://bucket/prefix through the GCS JSON API over libcurl.
 * Invariants: creates carry ifGenerationMatch=0 and the CRC32C of the data,
 * and the CRC32C the server reports is checked; a 412 is checked against
 * the stored object, never assumed (an attempt whose answer was lost, or one
 * libcurl resent by itself, may have created it). A resumable
 * upload after a dropped connection asks the server what it holds and goes
 * on from there. Downloads write to a temporary name, pin every range to
 * one generation, check CRC32C and are renamed into place only when whole.
 * Every operation is a small state machine driven by one curl multi handle;
 * retries back off exponentially with full jitter until a deadline.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "crc32c.h"
#include "fault.h"
#include "fsutil.h"
#include "gcs_auth.h"
#include "http.h"
#include "log.h"
#include "store_impl.h"
#include "tmpname.h"
#include "xalloc.h"

#define SIMPLE_MAX (8LL << 20)
#define DEFAULT_CHUNK (32LL << 20) /* a multiple of 256 KiB */
#define SLICE_MIN (256LL << 10)  /* the smallest slice worth its own request */
#define SLICE_SAVE (16LL << 20) /* a slice records its progress this often, or 4 times */
#define ERRBODY_MAX (64 * 1024)
#define JSON_MAX (64 << 20) /* a listing page or an object resource */

struct gcs {
	char *bucket, *prefix, *base; /* prefix is "" or ends in '/' */
	struct mtc_gcs_auth *auth;
	CURLM *multi;
	CURL **idle;
	size_t n_idle;
	long long chunk, first; /* first: the opening range of a download, before its size is known */
	long long threshold;	/* a file this big moves as slices */
	int slices;
	double backoff_base, backoff_cap;
	unsigned seed;
	pthread_mutex_t run_lock;
	struct engine *engine;
};

struct req {
	CURL *easy;
	const char *method;
	struct curl_slist *headers;
	char *url;
	long status;
	CURLcode cc;
	char errbuf[CURL_ERROR_SIZE];
	int abort_errno;
	/* request body: memory, or body_len bytes of a file from body_off */
	char *body;
	int body_fd;
	long long body_off, body_len, body_sent;
	/* response: 2xx bodies go to the sink (a file at sink_off, or memory), others to err */
	int sink_fd;
	long long sink_off, written;
	int sink_mem;
	size_t mem_max;	    /* sink_mem: the caller's cap */
	struct mtc_buf mem; /* its cap set by the answer's status */
	int crc_on;
	uint32_t crc;
	/* response headers */
	char *location;
	long long range_end; /* 308 Range: bytes=0-N → N; -1 when absent */
	long long total;     /* Content-Range total; -1 when absent */
	long long generation;
	int have_crc;
	uint32_t goog_crc;
};

enum verdict { V_DONE, V_AGAIN, V_RETRY, V_FAIL, V_WAIT };

/* A range of a sliced download, whole from off for len bytes, with their CRC32C. */
struct slice {
	long long off, len;
	uint32_t crc;
	long long generation; /* a part of a composite upload: the object it became */
};
enum op_state { O_READY, O_ACTIVE, O_SLEEPING, O_WAITING, O_FINISHED };

struct op;
struct op_type {
	int (*prepare)(struct op *op, struct req *r);
	enum verdict (*finish)(struct op *op, struct req *r);
	void (*complete)(struct op *op);
};

struct op {
	const struct op_type *t;
	struct mtc_store *s;
	struct gcs *g;
	struct req req;
	enum op_state ostate;
	int state, attempt, retried, refreshed, err, crc_retries;
	double deadline, wake;
	char lasterr[512];
	struct op *parent;
	int pending, child_err;
	char *name;
	const char *key;
	struct mtc_store_xfer *x;
	const char *path;
	char *tmp;
	int fd, flags, resume; /* resume: a download into a caller's partial file, one stream */
	long long size, off, len, done, generation;
	uint32_t crc, expect_crc;
	int have_expect;
	char *session;
	char *body; /* multipart body or JSON */
	long long body_len;
	/* list */
	struct mtc_store_list *list;
	char *page_token;
	const char *lprefix, *ldelim;
	int ltemps; /* list: composite uploads' parts too */
	/* a sliced download: the parent's ranges; a slice's own range is slot */
	struct slice *sl;
	size_t n_sl, slot;
	char *sidecar;	  /* where the parent records sl (NULL: nowhere) */
	long long saved;  /* a slice: bytes recorded so far */
	enum verdict now; /* what prepare() decided when it sends no request */
	int failed_with;  /* a composite upload cleaning up after this errno */
	/* memory results */
	char **outbuf;
	size_t *outlen, max;
	void *rangebuf;
	struct mtc_store_object *stat_out;
};

struct engine {
	struct op **v;
	size_t n, cap, next_new, unfinished;
	struct op **sleeping;
	size_t n_sleeping;
	size_t active, limit;
};

/* ---------------------------------------------------------------- helpers */

static char *enc(const char *s)
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

static char *object_url(struct gcs *g, const char *name, const char *query)
{
	char *b = enc(g->bucket), *n = enc(name);
	char *url = xasprintf("%s/storage/v1/b/%s/o/%s%s%s", g->base, b, n, query ? "?" : "",
			      query ? query : "");
	free(b);
	free(n);
	return url;
}

static char *upload_url(struct gcs *g, const char *type, int create_only)
{
	char *b = enc(g->bucket);
	char *url = xasprintf("%s/upload/storage/v1/b/%s/o?uploadType=%s%s", g->base, b, type,
			      create_only ? "&ifGenerationMatch=0" : "");
	free(b);
	return url;
}

static char *full_name(struct gcs *g, const char *key) { return xasprintf("%s%s", g->prefix, key); }

static int op_fail(struct op *op, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int op_fail(struct op *op, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(op->lasterr, sizeof op->lasterr, fmt, ap);
	va_end(ap);
	op->err = e;
	return V_FAIL;
}

static void add_header(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_header(struct req *r, const char *fmt, ...)
{
	va_list ap;
	char line[1024];
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	r->headers = curl_slist_append(r->headers, line);
}

static int transient(const struct req *r)
{
	if (r->abort_errno)
		return 0;
	return r->cc != CURLE_OK || mtc_http_transient(r->status);
}

/* "HTTP 403: <message>" or "connection: <curl error>". */
static void describe(const struct req *r, char *out, size_t outlen)
{
	if (r->abort_errno) {
		snprintf(out, outlen, "%s", strerror(r->abort_errno));
	} else if (r->cc != CURLE_OK) {
		snprintf(out, outlen, "connection: %s",
			 r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->cc));
	} else {
		json_t *j = r->mem.p ? json_loadb(r->mem.p, r->mem.len, 0, NULL) : NULL;
		const char *msg = json_string_value(json_object_get(json_object_get(j, "error"),
								     "message"));
		char body[201] = "";
		if (!msg && r->mem.p) {
			snprintf(body, sizeof body, "%.*s", (int)r->mem.len, r->mem.p);
			for (char *p = body; *p; p++)
				if (*p == '\n' || *p == '\r')
					*p = ' ';
			msg = body;
		}
		snprintf(out, outlen, "HTTP %ld%s%s", r->status, msg && *msg ? ": " : "",
			 msg ? msg : "");
		json_decref(j);
	}
}

static int errno_of_status(long status)
{
	switch (status) {
	case 401:
	case 403:
		return EACCES;
	case 404:
		return ENOENT;
	case 400:
		return EINVAL;
	case 412:
		return EEXIST;
	default:
		return EIO;
	}
}

static enum verdict fail_with(struct op *op, struct req *r, const char *what)
{
	char why[400];
	describe(r, why, sizeof why);
	return op_fail(op, r->abort_errno ? r->abort_errno
			   : r->cc    ? EIO
				      : errno_of_status(r->status),
		       "%s '%s': %s", what, op->name ? op->name : "", why);
}

/* Object metadata JSON → size, generation, crc32c. */
static int parse_meta(const char *buf, size_t len, long long *size, long long *gen,
		      uint32_t *crc, int *have_crc)
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

/* ----------------------------------------------------------- curl callbacks */

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n;
	char line[1024], *v;

	if (len >= sizeof line)
		return len;
	memcpy(line, buf, len);
	line[len] = '\0';
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		line[--len] = '\0';
	if (!strncmp(line, "HTTP/", 5)) { /* a new response (after 100 Continue): start over */
		r->range_end = -1;
		r->total = -1;
		r->have_crc = 0;
		return size * n;
	}
	v = strchr(line, ':');
	if (!v)
		return size * n;
	*v++ = '\0';
	while (*v == ' ')
		v++;
	if (!strcasecmp(line, "location")) {
		free(r->location);
		r->location = xstrdup(v);
	} else if (!strcasecmp(line, "range")) {
		const char *dash = strchr(v, '-');
		r->range_end = dash ? atoll(dash + 1) : -1;
	} else if (!strcasecmp(line, "content-range")) {
		const char *slash = strchr(v, '/');
		r->total = slash && slash[1] != '*' ? atoll(slash + 1) : -1;
	} else if (!strcasecmp(line, "x-goog-generation")) {
		r->generation = atoll(v);
	} else if (!strcasecmp(line, "x-goog-hash")) {
		for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
			while (*tok == ' ')
				tok++;
			if (!strncmp(tok, "crc32c=", 7) &&
			    mtc_crc32c_from_base64(tok + 7, &r->goog_crc) == 0)
				r->have_crc = 1;
		}
	}
	return size * n;
}

static void slice_progress(struct op *c, long long done, uint32_t crc);

static size_t on_write(char *buf, size_t size, size_t n, void *arg)
{
	struct op *op = arg;
	struct req *r = &op->req;
	size_t len = size * n;
	long status = 0;

	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if ((status == 200 || status == 206) && r->sink_fd >= 0) {
		size_t off = 0;
		while (off < len) {
			ssize_t w = pwrite(r->sink_fd, buf + off, len - off,
					   r->sink_off + r->written + (long long)off);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				r->abort_errno = errno;
				return 0;
			}
			off += (size_t)w;
		}
		if (r->crc_on)
			r->crc = mtc_crc32c(r->crc, buf, len);
		r->written += (long long)len;
		mtc_store_progress_add(op->s, (long long)len);
		if (op->parent)
			slice_progress(op, op->done + r->written, r->crc);
		return len;
	}
	int ok = status >= 200 && status < 300;
	if (!r->mem.p)
		mtc_buf_init(&r->mem, !ok ? ERRBODY_MAX : r->sink_mem ? r->mem_max : JSON_MAX);
	if (mtc_buf_append(&r->mem, buf, len) < 0) {
		if (ok) {
			r->abort_errno = EFBIG;
			return 0;
		}
		return len; /* an error's body: its first bytes are enough */
	}
	if (status == 200 || status == 206) {
		if (r->crc_on)
			r->crc = mtc_crc32c(r->crc, buf, len);
		r->written += (long long)len;
	}
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	long long want = (long long)(size * n), left = r->body_len - r->body_sent;
	ssize_t got;

	if (want > left)
		want = left;
	if (want <= 0)
		return 0;
	if (r->body_fd >= 0) {
		do
			got = pread(r->body_fd, buf, (size_t)want, r->body_off + r->body_sent);
		while (got < 0 && errno == EINTR);
		if (got <= 0) {
			r->abort_errno = got < 0 ? errno : EIO;
			return CURL_READFUNC_ABORT;
		}
	} else {
		memcpy(buf, r->body + r->body_sent, (size_t)want);
		got = (ssize_t)want;
	}
	r->body_sent += got;
	return (size_t)got;
}

/* ------------------------------------------------------------------ engine */

static void req_reset(struct req *r)
{
	curl_slist_free_all(r->headers);
	free(r->url);
	mtc_buf_free(&r->mem);
	free(r->location);
	memset(r, 0, sizeof *r);
	r->body_fd = -1;
	r->sink_fd = -1;
	r->range_end = -1;
	r->total = -1;
}

static void engine_add(struct engine *e, struct op *op)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 16;
		e->v = xrealloc(e->v, e->cap * sizeof *e->v);
		e->sleeping = xrealloc(e->sleeping, e->cap * sizeof *e->sleeping);
	}
	e->v[e->n++] = op;
	e->unfinished++;
	op->ostate = O_READY;
	op->deadline = 0; /* set at its first start: time in the queue is not its own */
	req_reset(&op->req);
}

static void settle(struct engine *e, struct op *op, enum verdict v);
static void apply_body(struct req *r, const char *method);

/*
 * Every request is idempotent: a create carries ifGenerationMatch=0 and a
 * 412 is checked against the stored object (see the top of this file).
 */
static int start(struct engine *e, struct op *op)
{
	struct gcs *g = op->g;
	struct req *r = &op->req;
	char *token = NULL, err[512];
	struct mtc_http_opts o = { .idempotent = 1, .connect_s = 10, .stall_s = 60, .bulk = 1 };

	if (!op->deadline)
		op->deadline = mtc_now() + op->s->opt.deadline;
	req_reset(r);
	if (mtc_gcs_auth_token(g->auth, op->refreshed == 1, &token, err, sizeof err) < 0) {
		op_fail(op, EACCES, "cannot authenticate: %s", err);
		settle(e, op, V_FAIL);
		return -1;
	}
	if (op->refreshed == 1)
		op->refreshed = 2;
	switch (op->t->prepare(op, r)) {
	case -1:
		free(token);
		settle(e, op, V_FAIL);
		return -1;
	case 1: /* nothing to send: the op waits for the children it added, or is done */
		free(token);
		settle(e, op, op->now);
		return 0;
	}
	r->easy = g->n_idle ? g->idle[--g->n_idle] : curl_easy_init();
	o.url = r->url;
	o.token = token;
	mtc_http_setup(r->easy, &o, &r->headers, r->errbuf, err, sizeof err);
	free(token);
	r->headers = curl_slist_append(r->headers, "Expect:");
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, op);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, op);
	curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TCP_NODELAY, 1L);
	apply_body(r, r->method ? r->method : "GET");
	op->ostate = O_ACTIVE;
	e->active++;
	curl_multi_add_handle(g->multi, r->easy);
	return 0;
}

/* The method and body, set by prepare(). */
static void set_put_body(struct req *r, int fd, long long off, long long len)
{
	r->body_fd = fd;
	r->body_off = off;
	r->body_len = len;
}

static void apply_body(struct req *r, const char *method)
{
	if (!strcmp(method, "PUT")) {
		curl_easy_setopt(r->easy, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(r->easy, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(r->easy, CURLOPT_READDATA, r);
		curl_easy_setopt(r->easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
	} else if (!strcmp(method, "POST")) {
		curl_easy_setopt(r->easy, CURLOPT_POST, 1L);
		curl_easy_setopt(r->easy, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(r->easy, CURLOPT_READDATA, r);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (!strcmp(method, "DELETE")) {
		curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
}

static void finished(struct engine *e, struct op *op)
{
	op->ostate = O_FINISHED;
	e->unfinished--;
	if (op->t->complete)
		op->t->complete(op);
}

static void settle(struct engine *e, struct op *op, enum verdict v)
{
	double now = mtc_now(), delay;

	switch (v) {
	case V_AGAIN:
		op->attempt = 0;
		op->ostate = O_READY;
		op->wake = 0;
		e->sleeping[e->n_sleeping++] = op;
		break;
	case V_RETRY:
		op->retried = 1;
		delay = mtc_backoff(op->attempt++, op->g->backoff_base, op->g->backoff_cap,
				    &op->g->seed);
		if (now + delay > op->deadline) {
			char why[600];
			snprintf(why, sizeof why, "gave up after %d attempts: %s", op->attempt,
				 op->lasterr);
			memcpy(op->lasterr, why, sizeof op->lasterr - 1);
			op->lasterr[sizeof op->lasterr - 1] = '\0';
			op->err = ETIMEDOUT;
			finished(e, op);
			break;
		}
		mtc_debug("retrying '%s' in %.2f s: %s", op->name ? op->name : "", delay,
			  op->lasterr);
		op->ostate = O_SLEEPING;
		op->wake = now + delay;
		e->sleeping[e->n_sleeping++] = op;
		break;
	case V_WAIT:
		op->ostate = O_WAITING;
		break;
	case V_DONE:
		op->err = 0;
		finished(e, op);
		break;
	case V_FAIL:
		if (!op->err)
			op->err = EIO;
		finished(e, op);
		break;
	}
}

static void on_done(struct engine *e, struct op *op, CURLcode cc)
{
	struct gcs *g = op->g;
	struct req *r = &op->req;
	enum verdict v;

	curl_multi_remove_handle(g->multi, r->easy);
	e->active--;
	r->cc = cc;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	if (cc != CURLE_OK)
		r->status = 0;
	g->idle = xrealloc(g->idle, (g->n_idle + 1) * sizeof *g->idle);
	g->idle[g->n_idle++] = r->easy;
	r->easy = NULL;
	if (r->status == 401 && !op->refreshed) {
		op->refreshed = 1;
		settle(e, op, V_AGAIN);
		return;
	}
	if (transient(r))
		describe(r, op->lasterr, sizeof op->lasterr);
	v = op->t->finish(op, r);
	settle(e, op, v);
}

static void op_free(struct op *op);

/* Runs ops (and the children they add) to the end; -1 if any failed. */
static int engine_run(struct mtc_store *s, struct op **ops, size_t n)
{
	struct gcs *g = s->impl;
	struct engine e = { .limit = (size_t)s->opt.parallel };
	int failed = 0;

	pthread_mutex_lock(&g->run_lock);
	g->engine = &e;
	for (size_t i = 0; i < n; i++)
		engine_add(&e, ops[i]);
	while (e.unfinished) {
		double now = mtc_now(), next = now + 1.0;
		int running, numfds;
		CURLMsg *m;

		for (size_t i = 0; i < e.n_sleeping && e.active < e.limit;) {
			struct op *op = e.sleeping[i];
			if (op->wake <= now) {
				e.sleeping[i] = e.sleeping[--e.n_sleeping];
				start(&e, op);
			} else {
				i++;
			}
		}
		while (e.next_new < e.n && e.active < e.limit) {
			struct op *op = e.v[e.next_new++];
			if (op->ostate == O_READY)
				start(&e, op);
		}
		curl_multi_perform(g->multi, &running);
		while ((m = curl_multi_info_read(g->multi, &numfds))) {
			struct op *op;
			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&op);
			on_done(&e, op, m->data.result);
		}
		if (!e.unfinished)
			break;
		for (size_t i = 0; i < e.n_sleeping; i++)
			if (e.sleeping[i]->wake < next)
				next = e.sleeping[i]->wake;
		if ((e.n_sleeping && next <= now && e.active < e.limit) ||
		    (e.next_new < e.n && e.active < e.limit))
			continue;
		long ms = (long)((next - now) * 1000) + 1;
		curl_multi_poll(g->multi, NULL, 0, (int)(ms < 1 ? 1 : ms > 1000 ? 1000 : ms), NULL);
	}
	for (size_t i = 0; i < e.n; i++) {
		struct op *op = e.v[i];
		if (op->err && !op->parent) {
			if (!failed++) {
				mtc_store_set_error(s, "%s", op->lasterr);
				errno = op->err;
			}
		}
	}
	for (size_t i = 0; i < e.n; i++)
		if (e.v[i]->parent)
			op_free(e.v[i]); /* children are the engine's; callers free their own ops */
	g->engine = NULL;
	free(e.v);
	free(e.sleeping);
	pthread_mutex_unlock(&g->run_lock);
	if (failed) {
		for (size_t i = 0; i < n; i++)
			if (ops[i]->err) {
				errno = ops[i]->err;
				break;
			}
		return -1;
	}
	return 0;
}

static struct op *op_new(struct mtc_store *s, const struct op_type *t)
{
	struct op *op = xcalloc(1, sizeof *op);
	op->t = t;
	op->s = s;
	op->g = s->impl;
	op->fd = -1;
	op->req.body_fd = -1;
	op->req.sink_fd = -1;
	return op;
}

static void op_free(struct op *op)
{
	if (!op)
		return;
	req_reset(&op->req);
	if (op->fd >= 0)
		close(op->fd);
	free(op->name);
	free(op->tmp);
	free(op->session);
	free(op->body);
	free(op->page_token);
	free(op->sl);
	free(op->sidecar);
	free(op);
}

/* ------------------------------------------------------------------ upload */

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
static void spawn_part_deletes(struct op *p);
static char *compose_json(struct op *p);
static void add_slice(struct op *p, long long off, long long len, uint32_t crc);
static int crc_of_range(int fd, long long off, long long size, uint32_t *crc);

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
	struct gcs *g = op->g;
	int create_only = !(op->flags & MTC_STORE_REPLACE);

	switch (op->state) {
	case U_PARTS:
		spawn_parts(op);
		op->now = V_WAIT;
		return 1;
	case U_CLEAN:
		spawn_part_deletes(op);
		op->now = op->pending ? V_WAIT : op->failed_with ? V_FAIL : V_DONE;
		op->err = op->failed_with;
		return 1;
	case U_COMPOSE: {
		mtc_fault_stall("gcs-compose", op->name);
		char *b = enc(g->bucket), *n = enc(op->name);
		r->url = xasprintf("%s/storage/v1/b/%s/o/%s/compose%s", g->base, b, n,
				   create_only ? "?ifGenerationMatch=0" : "");
		free(b);
		free(n);
		free(op->body);
		op->body = compose_json(op);
		add_header(r, "Content-Type: application/json; charset=UTF-8");
		r->body = op->body;
		r->body_len = (long long)strlen(op->body);
		r->method = "POST";
		break;
	}
	case U_SIMPLE:
		r->url = upload_url(g, "multipart", create_only);
		add_header(r, "Content-Type: multipart/related; boundary=mtc-part-boundary-7f3a9c2e");
		r->body = op->body;
		r->body_len = op->body_len;
		r->method = "POST";
		break;
	case U_INIT: {
		char *json = metadata_json(op->name, op->crc);
		r->url = upload_url(g, "resumable", create_only);
		add_header(r, "Content-Type: application/json; charset=UTF-8");
		add_header(r, "X-Upload-Content-Type: application/octet-stream");
		add_header(r, "X-Upload-Content-Length: %lld", op->size);
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
		add_header(r, "Content-Range: bytes %lld-%lld/%lld", op->done, op->done + len - 1,
			   op->size);
		set_put_body(r, op->fd, op->off + op->done, len);
		r->method = "PUT";
		break;
	}
	case U_QUERY:
		r->url = xstrdup(op->session);
		add_header(r, "Content-Range: bytes */%lld", op->size);
		r->body_len = 0;
		r->method = "PUT";
		break;
	case U_CHECK:
	case U_PROBE:
		r->url = object_url(g, op->name, NULL);
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

	if (parse_meta(r->mem.p, r->mem.len, &size, &gen, &crc, &have) < 0)
		return op_fail(op, EIO, "%s '%s': the server's answer is not object metadata",
			       what, op->name);
	if (size != op->size || (have && crc != op->crc))
		return op_fail(op, EIO,
			       "%s '%s': the server holds %lld bytes with crc32c %08x, sent %lld "
			       "with %08x",
			       what, op->name, size, have ? crc : 0, op->size, op->crc);
	if (!have)
		return op_fail(op, EIO, "%s '%s': the server reports no crc32c", what, op->name);
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
				return op_fail(op, e, "cannot read a part of '%s': %s", op->name,
					       n < 0 ? strerror(e) : "file shrank"), -1;
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

	if (transient(r))
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
		v = fail_with(op, r, op->state == U_CHECK ? "cannot check" : "cannot compose");
	else if ((v = up_check_stored(op, r, "cannot compose")) != V_DONE && op->state == U_CHECK)
		v = op_fail(op, EEXIST, "object exists '%s'", op->name);
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
	if (op->state == U_PROBE && !transient(r)) {
		if (r->status == 404)
			return restart_upload(op) < 0 ? V_FAIL : V_AGAIN;
		if (r->status != 200)
			return fail_with(op, r, "cannot check");
		if (up_check_stored(op, r, "cannot reuse") != V_DONE) {
			op->err = EEXIST; /* a leftover of other bytes: the cleanup removes it */
			return V_FAIL;
		}
		mtc_debug("'%s': an earlier run uploaded this part; reusing it", op->name);
		mtc_store_progress_add(op->s, op->size);
		return V_DONE;
	}
	if (transient(r)) {
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
			return fail_with(op, r, "cannot check");
		if (up_check_stored(op, r, "cannot upload") == V_DONE)
			return V_DONE;
		return op_fail(op, EEXIST, "object exists '%s'", op->name);
	case U_INIT:
		if (r->status != 200 || !r->location)
			return fail_with(op, r, "cannot start uploading");
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
				return op_fail(op, EIO, "cannot upload '%s': the server claims %lld of %lld bytes",
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
			return fail_with(op, r, "cannot upload");
		if (op->state == U_SIMPLE || op->done < op->size)
			mtc_store_progress_add(op->s, op->size - op->done);
		op->done = op->size;
		return up_check_stored(op, r, "cannot upload");
	}
	return V_FAIL;
}

/* A part or a part's delete is over; the last one moves the composite upload on. */
static void notify_parent(struct op *op)
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
		settle(p->g->engine, p, V_AGAIN);
	} else {
		p->err = p->failed_with;
		settle(p->g->engine, p, p->failed_with ? V_FAIL : V_DONE);
	}
}

#define PARTS ".mtc-parts/"

static char *part_name(const struct op *p, size_t i)
{
	return xasprintf("%s" PARTS "%02zu", p->name, i);
}

/* 1 when name is, or is under, a composite upload's parts: a temporary (tmpname.h). */
static int is_part(const char *name)
{
	return strstr(name, PARTS) != NULL;
}

static const struct op_type upload_type;

static void spawn_parts(struct op *p)
{
	for (size_t i = 0; i < p->n_sl; i++) {
		struct op *c = op_new(p->s, &upload_type);
		c->parent = p;
		c->name = part_name(p, i);
		c->slot = i;
		c->off = p->sl[i].off;
		c->size = p->sl[i].len;
		c->crc = p->sl[i].crc;
		c->fd = dup(p->fd);
		c->state = U_PROBE;
		p->pending++;
		engine_add(p->g->engine, c);
	}
}

static char *compose_json(struct op *p)
{
	json_t *src = json_array(), *j;
	char *text;

	for (size_t i = 0; i < p->n_sl; i++) {
		char *name = part_name(p, i), gen[32];
		snprintf(gen, sizeof gen, "%lld", p->sl[i].generation);
		json_array_append_new(src, json_pack("{s:s, s:s, s:{s:s}}", "name", name, "generation",
						     gen, "objectPreconditions", "ifGenerationMatch",
						     gen));
		free(name);
	}
	j = json_pack("{s:o, s:{s:s}}", "sourceObjects", src, "destination", "contentType",
		      "application/octet-stream");
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return text;
}

static void up_complete(struct op *op)
{
	if (op->fd >= 0) {
		close(op->fd);
		op->fd = -1;
	}
	if (op->parent) {
		notify_parent(op);
		return;
	}
	if (op->x) {
		op->x->size = op->err ? 0 : op->size;
		op->x->err = op->err;
	}
}

static const struct op_type upload_type = { up_prepare, up_finish, up_complete };

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
static int up_setup_file(struct op *op, const char *path)
{
	struct stat st;
	char *buf;
	int e;

	op->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (op->fd < 0 || fstat(op->fd, &st) < 0) {
		e = errno;
		op_fail(op, e, "cannot open '%s': %s", path, strerror(e));
		return -1;
	}
	op->size = st.st_size;
	if (op->size >= op->g->threshold && op->g->slices > 1) {
		/* a composite upload: each part's CRC32C, and the whole's from them */
		long long len = (op->size + op->g->slices - 1) / op->g->slices;
		op->crc = 0;
		for (long long off = 0; off < op->size; off += len) {
			long long n = op->size - off < len ? op->size - off : len;
			uint32_t crc;
			if (crc_of_range(op->fd, off, n, &crc) < 0) {
				e = errno;
				op_fail(op, e, "cannot read '%s': %s", path, strerror(e));
				return -1;
			}
			add_slice(op, off, n, crc);
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
			op_fail(op, e, "cannot read '%s': %s", path, n < 0 ? strerror(e) : "file shrank");
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

static struct op *upload_op(struct mtc_store *s, const char *key, int flags)
{
	struct op *op = op_new(s, &upload_type);
	op->name = full_name(s->impl, key);
	op->key = key;
	op->flags = flags;
	return op;
}

static int gcs_put_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags)
{
	struct op **ops = xcalloc(n + 1, sizeof *ops), **todo = xcalloc(n + 1, sizeof *todo);
	size_t m = 0;
	int rc, bad = 0, first = 0;

	for (size_t i = 0; i < n; i++) {
		ops[i] = upload_op(s, x[i].key, flags);
		ops[i]->x = &x[i];
		if (x[i].key[strlen(x[i].key) - 1] == '/') {
			ops[i]->size = 0;
			ops[i]->state = U_SIMPLE;
			build_multipart(ops[i], "", 0);
		} else if (up_setup_file(ops[i], x[i].path) < 0) {
			x[i].err = ops[i]->err;
			if (!bad++) {
				first = x[i].err;
				mtc_store_set_error(s, "%s", ops[i]->lasterr);
			}
			continue;
		}
		s->progress_total += ops[i]->size;
		todo[m++] = ops[i];
	}
	rc = engine_run(s, todo, m);
	for (size_t i = 0; i < n; i++)
		op_free(ops[i]);
	free(ops);
	free(todo);
	if (bad) {
		errno = first;
		return -1;
	}
	return rc;
}

static int gcs_put_file(struct mtc_store *s, const char *key, const char *path, int flags)
{
	struct mtc_store_xfer x = { .key = key, .path = path };
	s->progress_done = s->progress_total = 0;
	return gcs_put_many(s, &x, 1, flags);
}

static int gcs_put_buf(struct mtc_store *s, const char *key, const void *buf, size_t len,
		       int flags)
{
	struct op *op = upload_op(s, key, flags);
	int rc;

	op->size = (long long)len;
	op->crc = mtc_crc32c(0, buf, len);
	op->state = U_SIMPLE;
	build_multipart(op, buf, len);
	rc = engine_run(s, &op, 1);
	op_free(op);
	return rc;
}

/* ---------------------------------------------------------------- download */

/*
 * A get opens with a short ranged GET (D_FIRST) that tells the object's size,
 * generation and CRC32C. A smaller object than the slice threshold then goes
 * on in one stream (D_WHOLE), its CRC32C computed as the bytes arrive. A
 * larger one is sliced: the file is pre-allocated and the bytes still missing
 * are cut into up to `slices` ranges, each a child op (D_PART) that writes at
 * its offset and keeps the CRC32C of its range; once all are in, the ranges'
 * CRC32Cs are combined and compared with the object's. With a sidecar the
 * whole ranges are recorded as they grow, so that a killed get continues with
 * the missing ones (D_RESUME), from the same generation.
 */
enum { D_FIRST, D_WHOLE, D_PART, D_WAIT, D_RESUME };

static const struct op_type download_type;

static void save_slices(struct op *p);
static void spawn_slices(struct op *p);

static int dl_prepare(struct op *op, struct req *r)
{
	struct gcs *g = op->g;
	char q[64];

	if (op->state == D_RESUME) {
		op->state = D_WAIT;
		spawn_slices(op);
		op->now = V_WAIT;
		return 1;
	}
	if (op->generation)
		snprintf(q, sizeof q, "alt=media&generation=%lld", op->generation);
	else
		snprintf(q, sizeof q, "alt=media");
	r->url = object_url(g, op->name, q);
	r->sink_fd = op->parent ? op->parent->fd : op->fd;
	r->sink_off = op->off + op->done;
	r->crc_on = 1;
	r->crc = op->crc;
	if (op->state == D_FIRST)
		add_header(r, "Range: bytes=%lld-%lld", op->done, g->first - 1);
	else if (op->state == D_PART)
		add_header(r, "Range: bytes=%lld-%lld", op->off + op->done, op->off + op->len - 1);
	else if (op->done)
		add_header(r, "Range: bytes=%lld-", op->done);
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Drops empty ranges and sorts the rest. */
static void tidy_slices(struct op *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_sl; i++)
		if (p->sl[i].len > 0)
			p->sl[n++] = p->sl[i];
	p->n_sl = n;
	if (n) /* sl is NULL before the first slice */
		qsort(p->sl, n, sizeof *p->sl, cmp_slice);
}

static void add_slice(struct op *p, long long off, long long len, uint32_t crc)
{
	p->sl = xrealloc(p->sl, (p->n_sl + 1) * sizeof *p->sl);
	p->sl[p->n_sl++] = (struct slice){ off, len, crc, 0 };
}

static void spawn_slice(struct op *p, long long off, long long len)
{
	struct op *c = op_new(p->s, &download_type);

	c->parent = p;
	c->name = xstrdup(p->name);
	c->state = D_PART;
	c->off = off;
	c->len = len;
	c->generation = p->generation;
	c->slot = p->n_sl;
	add_slice(p, off, 0, 0);
	p->pending++;
	engine_add(p->g->engine, c);
}

/* Cuts the bytes the ranges do not cover into up to g->slices children. */
static void spawn_slices(struct op *p)
{
	long long missing = 0, at = 0, piece;
	size_t n;

	tidy_slices(p);
	n = p->n_sl;
	for (size_t i = 0; i <= n; i++) {
		long long end = i < n ? p->sl[i].off : p->size;
		missing += end > at ? end - at : 0;
		if (i < n)
			at = p->sl[i].off + p->sl[i].len;
	}
	piece = (missing + p->g->slices - 1) / p->g->slices;
	if (piece < SLICE_MIN)
		piece = SLICE_MIN;
	at = 0;
	for (size_t i = 0; i <= n; i++) {
		long long end = i < n ? p->sl[i].off : p->size;
		while (at < end) {
			long long gap = end - at, k = (gap + piece - 1) / piece, len = (gap + k - 1) / k;
			spawn_slice(p, at, len);
			at += len;
		}
		if (i < n)
			at = p->sl[i].off + p->sl[i].len;
	}
	save_slices(p);
}

/* The sidecar: a temporary + rename (a kill leaves the old or the new one); a range is re-checked on resume. */
static void save_slices(struct op *p)
{
	json_t *j, *a;
	struct mtc_tmp t;
	char *text;
	char b64[9];

	if (!p->sidecar)
		return;
	a = json_array();
	for (size_t i = 0; i < p->n_sl; i++)
		if (p->sl[i].len > 0)
			json_array_append_new(a, json_pack("[I, I, I]", (json_int_t)p->sl[i].off,
							   (json_int_t)p->sl[i].len,
							   (json_int_t)p->sl[i].crc));
	j = json_pack("{s:I, s:I, s:o}", "generation", (json_int_t)p->generation, "size",
		      (json_int_t)p->size, "slices", a);
	if (p->have_expect) {
		mtc_crc32c_base64(p->expect_crc, b64);
		json_object_set_new(j, "crc32c", json_string(b64));
	}
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (mtc_tmp_beside(p->sidecar, &t) < 0 || mtc_write_all(t.fd, text, strlen(text)) < 0 ||
	    rename(t.path, p->sidecar) < 0) {
		mtc_debug("cannot record the slices of '%s' in '%s': %s", p->name, p->sidecar,
			  strerror(errno));
		mtc_tmp_discard(&t);
	}
	mtc_tmp_release(&t);
	free(text);
}

/* A slice's bytes so far: [off, off + done) with crc. */
static void slice_progress(struct op *c, long long done, uint32_t crc)
{
	struct op *p = c->parent;
	struct slice *sl = &p->sl[c->slot];
	long long every = c->len / 4 < SLICE_SAVE ? c->len / 4 : SLICE_SAVE;

	sl->len = done;
	sl->crc = crc;
	if (p->sidecar && (done - c->saved >= every || done == c->len)) {
		c->saved = done;
		save_slices(p);
	}
}

static int crc_of_range(int fd, long long off, long long size, uint32_t *crc)
{
	char *buf = xmalloc(4 << 20);
	*crc = 0;
	for (long long end = off + size; off < end;) {
		long long want = end - off < (4 << 20) ? end - off : (4 << 20);
		ssize_t n = pread(fd, buf, (size_t)want, off);
		if (n <= 0) {
			free(buf);
			if (n == 0)
				errno = EIO;
			return -1;
		}
		*crc = mtc_crc32c(*crc, buf, (size_t)n);
		off += n;
	}
	free(buf);
	return 0;
}

/* The whole object is in the temporary file and its CRC32C is got: check it and make it visible. */
static enum verdict dl_verify(struct op *op, uint32_t got)
{
	int e;

	if (!op->have_expect) {
		mtc_debug("'%s': the server sent no crc32c; not checked", op->name);
	} else if (got != op->expect_crc) {
		snprintf(op->lasterr, sizeof op->lasterr,
			 "cannot download '%s': crc32c mismatch: received %08x, stored %08x",
			 op->name, got, op->expect_crc);
		if (op->crc_retries++ < 2 && mtc_now() < op->deadline) {
			mtc_warn("%s; downloading again", op->lasterr);
			if (ftruncate(op->fd, 0) < 0)
				return op_fail(op, errno, "cannot truncate '%s':", op->tmp);
			op->done = op->crc = 0;
			op->generation = op->x ? op->x->generation : 0;
			op->state = op->resume && !op->sl ? D_WHOLE : D_FIRST;
			free(op->sl);
			op->sl = NULL;
			op->n_sl = 0;
			if (op->sidecar)
				unlink(op->sidecar);
			return V_RETRY;
		}
		op->err = EIO;
		return V_FAIL;
	}
	if (fsync(op->fd) < 0) {
		e = errno;
		return op_fail(op, e, "cannot write '%s': %s", op->tmp, strerror(e));
	}
	/* the temporary's lock (tmpname.h) is held until it has its name */
	if (rename(op->tmp, op->path) < 0 || mtc_fsync_parent(op->path) < 0) {
		e = errno;
		return op_fail(op, e, "cannot rename into '%s': %s", op->path, strerror(e));
	}
	e = close(op->fd) < 0 ? errno : 0;
	op->fd = -1;
	if (e)
		return op_fail(op, e, "cannot write '%s': %s", op->path, strerror(e));
	if (op->sidecar)
		unlink(op->sidecar);
	return V_DONE;
}

/* All slices are in: the ranges must cover the object; their CRC32Cs combined are the object's. */
static enum verdict dl_verify_slices(struct op *p)
{
	uint32_t crc = 0;
	long long at = 0;

	tidy_slices(p);
	for (size_t i = 0; i < p->n_sl; i++) {
		if (p->sl[i].off != at)
			return op_fail(p, EIO, "cannot download '%s': bytes %lld to %lld are missing",
				       p->name, at, p->sl[i].off);
		crc = mtc_crc32c_combine(crc, p->sl[i].crc, (uint64_t)p->sl[i].len);
		at += p->sl[i].len;
	}
	if (at != p->size)
		return op_fail(p, EIO, "cannot download '%s': %lld of %lld bytes", p->name, at, p->size);
	return dl_verify(p, crc);
}

/*
 * The first range is in and the object is big: pre-allocate the file (so that
 * a full disk shows now) and slice the rest. On tmpfs the file is only sized:
 * allocating there zeroes memory that the slices overwrite (0.3 s a GiB).
 */
static enum verdict start_slicing(struct op *op)
{
	struct statfs fs;
	int e = fstatfs(op->fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC ? EOPNOTSUPP
									: posix_fallocate(op->fd, 0, op->size);

	if (e == EOPNOTSUPP || e == EINVAL)
		e = ftruncate(op->fd, op->size) < 0 ? errno : 0;
	if (e)
		return op_fail(op, e, "cannot allocate %lld bytes for '%s': %s", op->size, op->tmp,
			       strerror(e));
	free(op->sl);
	op->sl = NULL;
	op->n_sl = 0;
	add_slice(op, 0, op->done, op->crc);
	op->state = D_WAIT;
	spawn_slices(op);
	return V_WAIT;
}

static enum verdict dl_finish(struct op *op, struct req *r)
{
	long long first_len;

	op->done += r->written;
	op->crc = r->crc;
	if (op->state == D_PART) {
		if (transient(r))
			return V_RETRY;
		if (r->status != 206)
			return fail_with(op, r, "cannot download");
		return op->done < op->len ? V_AGAIN : V_DONE;
	}
	if (r->generation && !op->generation)
		op->generation = r->generation;
	if (r->have_crc) {
		op->expect_crc = r->goog_crc;
		op->have_expect = 1;
	}
	if (transient(r))
		return V_RETRY;
	if (r->status == 404)
		return op_fail(op, ENOENT, "no such object '%s'", op->name);
	if (r->status == 416 && op->state == D_FIRST && op->done == 0) {
		op->state = D_WHOLE;
		return V_AGAIN;
	}
	if ((r->status == 416 || r->status == 200) && op->resume && op->done > r->written) {
		/* the partial is longer than the object, or the range was ignored: start over */
		if (ftruncate(op->fd, 0) < 0)
			return op_fail(op, errno, "cannot truncate '%s': %s", op->tmp, strerror(errno));
		op->done = op->crc = 0;
		return V_AGAIN;
	}
	if (r->status == 200 && op->done == r->written) {
		op->size = op->done;
		return dl_verify(op, op->crc);
	}
	if (r->status != 206 || r->total < 0)
		return fail_with(op, r, "cannot download");
	op->size = r->total;
	if (op->state == D_WHOLE)
		return op->done < op->size ? V_AGAIN : dl_verify(op, op->crc);
	first_len = op->size < op->g->first ? op->size : op->g->first;
	if (op->done < first_len)
		return V_AGAIN;
	if (op->done == op->size)
		return dl_verify(op, op->crc);
	if (op->size < op->g->threshold || op->g->slices < 2) {
		op->state = D_WHOLE;
		return V_AGAIN;
	}
	return start_slicing(op);
}

static void dl_complete(struct op *op)
{
	struct op *p = op->parent;

	if (p) {
		if (op->err && !p->child_err) {
			p->child_err = op->err;
			snprintf(p->lasterr, sizeof p->lasterr, "%s", op->lasterr);
		}
		if (--p->pending == 0) {
			enum verdict v;
			save_slices(p);
			if (p->child_err) {
				p->err = p->child_err;
				v = V_FAIL;
			} else {
				v = dl_verify_slices(p);
			}
			settle(p->g->engine, p, v);
		}
		return;
	}
	if (op->err && op->tmp && (!op->resume || op->err == EIO)) {
		unlink(op->tmp);
		if (op->sidecar)
			unlink(op->sidecar);
	}
	if (op->fd >= 0) {
		close(op->fd);
		op->fd = -1;
	}
	if (op->x) {
		op->x->err = op->err;
		op->x->size = op->err ? 0 : op->size;
	}
}

static const struct op_type download_type = { dl_prepare, dl_finish, dl_complete };

/*
 * Continues a sliced partial from its sidecar: same generation, ranges inside
 * the object, each range's bytes still matching its CRC32C (those that do not
 * are fetched again). 1 if it can go on, 0 if the sidecar does not fit (then
 * start afresh), -1 on an error.
 */
static int open_sliced(struct op *op)
{
	char *text = NULL;
	size_t len;
	json_t *j, *v;
	const char *b64;
	struct stat st;
	size_t i;
	int ok;

	if (mtc_read_file(op->sidecar, 1 << 20, &text, &len) < 0)
		return errno == ENOENT ? 0 : -1;
	j = json_loadb(text, len, 0, NULL);
	free(text);
	ok = json_is_integer(json_object_get(j, "generation")) &&
	     json_integer_value(json_object_get(j, "generation")) == op->generation &&
	     op->generation && json_is_integer(json_object_get(j, "size")) &&
	     json_is_array(json_object_get(j, "slices"));
	op->size = ok ? json_integer_value(json_object_get(j, "size")) : 0;
	b64 = json_string_value(json_object_get(j, "crc32c"));
	if (ok && b64 && mtc_crc32c_from_base64(b64, &op->expect_crc) == 0)
		op->have_expect = 1;
	ok = ok && op->size > 0 && fstat(op->fd, &st) == 0 && st.st_size <= op->size;
	json_array_foreach(ok ? json_object_get(j, "slices") : NULL, i, v)
	{
		json_int_t off = json_integer_value(json_array_get(v, 0));
		json_int_t n = json_integer_value(json_array_get(v, 1));
		json_int_t crc = json_integer_value(json_array_get(v, 2));
		uint32_t got;
		if (off < 0 || n <= 0 || off + n > st.st_size || crc < 0 || crc > 0xffffffffLL)
			continue;
		if (crc_of_range(op->fd, off, n, &got) == 0 && got == (uint32_t)crc)
			add_slice(op, off, n, got);
		else
			mtc_debug("'%s': bytes %lld to %lld no longer match; fetching them again",
				  op->tmp, (long long)off, (long long)(off + n));
	}
	json_decref(j);
	tidy_slices(op);
	for (i = 1; ok && i < op->n_sl; i++)
		ok = op->sl[i - 1].off + op->sl[i - 1].len <= op->sl[i].off;
	if (ok && st.st_size < op->size && ftruncate(op->fd, op->size) < 0)
		return -1;
	if (!ok) {
		free(op->sl);
		op->sl = NULL;
		op->n_sl = 0;
		op->have_expect = 0;
		return 0;
	}
	op->resume = 1;
	op->state = D_RESUME;
	return 1;
}

/*
 * Continues a partial file: from its sidecar when it has one, else from its
 * last byte, fetched again so that the answer carries the object's crc32c
 * and confirms its length; the crc covers the bytes kept too.
 */
static int open_partial(struct op *op)
{
	struct stat st;
	int rc;

	op->resume = 1;
	op->state = D_WHOLE;
	op->fd = open(op->tmp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (op->fd < 0)
		return -1;
	if (op->sidecar) {
		rc = open_sliced(op);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		/* a sidecar that does not fit: what the partial holds is of no use */
		if (access(op->sidecar, F_OK) == 0) {
			unlink(op->sidecar);
			if (ftruncate(op->fd, 0) < 0)
				return -1;
			op->state = D_FIRST;
			op->size = 0;
			return 0;
		}
	}
	if (fstat(op->fd, &st) < 0)
		return -1;
	if (st.st_size == 0) { /* nothing yet: a fresh get, sliced if the object is big */
		op->state = D_FIRST;
		return 0;
	}
	op->done = (long long)st.st_size - 1;
	return crc_of_range(op->fd, 0, op->done, &op->crc);
}

static int gcs_get_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n)
{
	struct op **ops = xcalloc(n + 1, sizeof *ops), **todo = xcalloc(n + 1, sizeof *todo);
	size_t m = 0;
	int rc, bad = 0, first = 0;

	for (size_t i = 0; i < n; i++) {
		struct op *op = ops[i] = op_new(s, &download_type);
		op->name = full_name(s->impl, x[i].key);
		op->x = &x[i];
		op->path = x[i].path;
		op->state = D_FIRST;
		op->generation = x[i].generation;
		if (x[i].key[strlen(x[i].key) - 1] == '/') {
			if (mtc_mkdir_p(x[i].path, 0755) < 0) {
				x[i].err = errno;
				op_fail(op, errno, "cannot create '%s': %s", x[i].path, strerror(errno));
			} else {
				continue;
			}
		} else if (x[i].partial) {
			op->tmp = xstrdup(x[i].partial);
			op->sidecar = x[i].slice_state ? xstrdup(x[i].slice_state) : NULL;
			if (open_partial(op) == 0) {
				todo[m++] = op;
				continue;
			}
			x[i].err = errno;
			op_fail(op, errno, "cannot continue '%s': %s", op->tmp, strerror(errno));
		} else {
			struct mtc_tmp t;
			if (mtc_tmp_beside(x[i].path, &t) == 0) {
				op->tmp = t.path;
				op->fd = t.fd;
				todo[m++] = op;
				continue;
			}
			x[i].err = errno;
			op_fail(op, errno, "cannot create a temporary for '%s': %s", x[i].path,
				strerror(errno));
		}
		if (!bad++) {
			first = x[i].err;
			mtc_store_set_error(s, "%s", op->lasterr);
		}
	}
	rc = engine_run(s, todo, m);
	for (size_t i = 0; i < n; i++)
		op_free(ops[i]);
	free(ops);
	free(todo);
	if (bad) {
		errno = first;
		return -1;
	}
	return rc;
}

static int gcs_get_file(struct mtc_store *s, const char *key, const char *path)
{
	struct mtc_store_xfer x = { .key = key, .path = path };
	s->progress_done = s->progress_total = 0;
	return gcs_get_many(s, &x, 1);
}

/* ----------------------------------------------------- small reads, stat, delete */

enum { K_BUF, K_RANGE, K_STAT, K_DELETE };
enum { GONE_IS_DONE = 1 }; /* small op flag: a delete that finds nothing succeeds */

static int small_prepare(struct op *op, struct req *r)
{
	struct gcs *g = op->g;

	switch (op->state) {
	case K_BUF:
		r->url = object_url(g, op->name, "alt=media");
		r->sink_mem = 1;
		r->mem_max = op->max;
		r->crc_on = 1;
		break;
	case K_RANGE:
		r->url = object_url(g, op->name, "alt=media");
		r->sink_mem = 1;
		r->mem_max = (size_t)op->len;
		add_header(r, "Range: bytes=%lld-%lld", op->off, op->off + op->len - 1);
		break;
	case K_STAT:
		r->url = object_url(g, op->name, NULL);
		break;
	case K_DELETE:
		r->url = object_url(g, op->name, NULL);
		r->method = "DELETE";
		break;
	}
	return 0;
}

static enum verdict small_finish(struct op *op, struct req *r)
{
	if (transient(r))
		return V_RETRY;
	if (r->status == 404) {
		/* a lost attempt did it (libcurl repeats one cut on a reused connection by itself) */
		if (op->state == K_DELETE && (op->retried || (op->flags & GONE_IS_DONE)))
			return V_DONE;
		return op_fail(op, ENOENT, "no such object '%s'", op->name);
	}
	switch (op->state) {
	case K_BUF:
		if (r->status != 200)
			return fail_with(op, r, "cannot read");
		if (r->have_crc && mtc_crc32c(0, mtc_buf_str(&r->mem), r->mem.len) != r->goog_crc) {
			snprintf(op->lasterr, sizeof op->lasterr, "cannot read '%s': crc32c mismatch",
				 op->name);
			if (op->crc_retries++ < 2)
				return V_RETRY;
			op->err = EIO;
			return V_FAIL;
		}
		*op->outlen = r->mem.len;
		*op->outbuf = r->mem.p ? mtc_buf_take(&r->mem) : xstrdup("");
		return V_DONE;
	case K_RANGE:
		if (r->status == 416 || ((r->status == 206 || (r->status == 200 && !op->off)) &&
					 r->mem.len != (size_t)op->len))
			return op_fail(op, EIO, "cannot read %lld bytes at %lld of '%s': object too short",
				       op->len, op->off, op->name);
		if (r->status != 206 && r->status != 200)
			return fail_with(op, r, "cannot read");
		memcpy(op->rangebuf, r->mem.p, (size_t)op->len);
		return V_DONE;
	case K_STAT:
		if (r->status != 200)
			return fail_with(op, r, "cannot stat");
		if (parse_meta(r->mem.p, r->mem.len, &op->stat_out->size, &op->stat_out->generation,
			       &op->crc, &op->have_expect) < 0)
			return op_fail(op, EIO, "cannot stat '%s': not object metadata", op->name);
		return V_DONE;
	case K_DELETE:
		if (r->status != 204 && r->status != 200)
			return fail_with(op, r, "cannot delete");
		return V_DONE;
	}
	return V_FAIL;
}

static void small_complete(struct op *op)
{
	if (op->parent)
		notify_parent(op);
}

static const struct op_type small_type = { small_prepare, small_finish, small_complete };

/* Deletes a composite upload's parts; one already gone is done. */
static void spawn_part_deletes(struct op *p)
{
	for (size_t i = 0; i < p->n_sl; i++) {
		struct op *c = op_new(p->s, &small_type);
		c->parent = p;
		c->name = part_name(p, i);
		c->state = K_DELETE;
		c->flags = GONE_IS_DONE;
		p->pending++;
		engine_add(p->g->engine, c);
	}
}

static int run_small(struct mtc_store *s, struct op *op)
{
	int rc = engine_run(s, &op, 1);
	op_free(op);
	return rc;
}

static struct op *small_op(struct mtc_store *s, int kind, const char *key)
{
	struct op *op = op_new(s, &small_type);
	op->state = kind;
	op->name = full_name(s->impl, key);
	return op;
}

static int gcs_get_buf(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len)
{
	struct op *op = small_op(s, K_BUF, key);
	op->max = max;
	op->outbuf = buf;
	op->outlen = len;
	return run_small(s, op);
}

static int gcs_get_range(struct mtc_store *s, const char *key, long long off, void *buf,
			 size_t len)
{
	struct op *op;

	if (!len)
		return 0;
	op = small_op(s, K_RANGE, key);
	op->off = off;
	op->len = (long long)len;
	op->rangebuf = buf;
	return run_small(s, op);
}

static int gcs_stat(struct mtc_store *s, const char *key, struct mtc_store_object *out)
{
	struct op *op = small_op(s, K_STAT, key);
	op->stat_out = out;
	return run_small(s, op);
}

static int gcs_delete(struct mtc_store *s, const char *key)
{
	return run_small(s, small_op(s, K_DELETE, key));
}

/* -------------------------------------------------------------------- list */

/* An RFC 3339 time in UTC ("2025-06-30T14:30:00.123Z") as seconds since the epoch; 0 if not one. */
static long long rfc3339(const char *text)
{
	struct tm tm = { 0 };
	int n = 0;

	if (!text || sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || !n)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (long long)timegm(&tm);
}

static int list_prepare(struct op *op, struct req *r)
{
	struct gcs *g = op->g;
	char *b = enc(g->bucket), *full = xasprintf("%s%s", g->prefix, op->lprefix);
	char *p = enc(full), *d = op->ldelim ? enc(op->ldelim) : NULL;
	char *t = op->page_token ? enc(op->page_token) : NULL;

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
	size_t plen = strlen(op->g->prefix), i;
	json_t *j, *v;
	const char *tok;

	if (transient(r))
		return V_RETRY;
	if (r->status != 200)
		return fail_with(op, r, "cannot list");
	j = json_loadb(mtc_buf_str(&r->mem), r->mem.len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return op_fail(op, EIO, "cannot list '%s': the answer is not JSON", op->name);
	}
	json_array_foreach(json_object_get(j, "items"), i, v)
	{
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *size = json_string_value(json_object_get(v, "size"));
		const char *gen = json_string_value(json_object_get(v, "generation"));
		if (name && !strncmp(name, op->g->prefix, plen) && name[plen] &&
		    (op->ltemps || !is_part(name + plen))) {
			mtc_store_list_add_object(op->list, name + plen, size ? atoll(size) : 0,
						  gen ? atoll(gen) : 0);
			op->list->objects[op->list->n_objects - 1].updated =
				rfc3339(json_string_value(json_object_get(v, "updated")));
		}
	}
	json_array_foreach(json_object_get(j, "prefixes"), i, v)
	{
		const char *name = json_string_value(v);
		if (name && !strncmp(name, op->g->prefix, plen) &&
		    (op->ltemps || !is_part(name + plen)))
			mtc_store_list_add_prefix(op->list, name + plen);
	}
	tok = json_string_value(json_object_get(j, "nextPageToken"));
	free(op->page_token);
	op->page_token = tok && *tok ? xstrdup(tok) : NULL;
	json_decref(j);
	return op->page_token ? V_AGAIN : V_DONE;
}

static const struct op_type list_type = { list_prepare, list_finish, NULL };

/* temps: composite uploads' parts too, which listings skip. */
static int list_all(struct mtc_store *s, const char *prefix, const char *delim, int temps,
		    struct mtc_store_list *out)
{
	struct op *op = op_new(s, &list_type);
	int rc;

	op->ltemps = temps;
	op->lprefix = prefix;
	op->ldelim = delim;
	op->list = out;
	op->name = xasprintf("gs://%s/%s%s", ((struct gcs *)s->impl)->bucket,
			     ((struct gcs *)s->impl)->prefix, prefix);
	rc = run_small(s, op);
	if (rc == 0)
		mtc_store_list_sort(out);
	return rc;
}

static int gcs_list(struct mtc_store *s, const char *prefix, const char *delim,
		    struct mtc_store_list *out)
{
	return list_all(s, prefix, delim, 0, out);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
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
			if (ends_with(l.objects[i].name, ".meta") == !pass) {
				ops[n] = small_op(s, K_DELETE, l.objects[i].name);
				ops[n++]->flags = GONE_IS_DONE;
			}
		rc = engine_run(s, ops + start_n, n - start_n);
		if (rc < 0)
			break;
	}
	for (size_t i = 0; i < n; i++)
		op_free(ops[i]);
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
static long gcs_leftovers(struct mtc_store *s, const char *prefix, int remove,
			  mtc_store_leftover_fn *fn, void *arg)
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
		if (!is_part(o->name) || !o->updated || now - o->updated < stale)
			continue;
		if (fn) {
			char *where = xasprintf("%s/%s", mtc_store_url(s), o->name);
			fn(where, o->size, arg);
			free(where);
		}
		ops[n] = small_op(s, K_DELETE, o->name);
		ops[n++]->flags = GONE_IS_DONE;
	}
	if (remove)
		rc = engine_run(s, ops, n);
	for (size_t i = 0; i < n; i++)
		op_free(ops[i]);
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
	for (size_t i = 0; i < g->n_idle; i++)
		curl_easy_cleanup(g->idle[i]);
	free(g->idle);
	if (g->multi)
		curl_multi_cleanup(g->multi);
	mtc_gcs_auth_free(g->auth);
	pthread_mutex_destroy(&g->run_lock);
	free(g->bucket);
	free(g->prefix);
	free(g->base);
	free(g);
}

static const struct mtc_store_ops gcs_ops = {
	.put_file = gcs_put_file,
	.put_buf = gcs_put_buf,
	.put_many = gcs_put_many,
	.get_file = gcs_get_file,
	.get_buf = gcs_get_buf,
	.get_range = gcs_get_range,
	.get_many = gcs_get_many,
	.list = gcs_list,
	.stat = gcs_stat,
	.del = gcs_delete,
	.delete_prefix = gcs_delete_prefix,
	.leftovers = gcs_leftovers,
	.close = gcs_close,
};

static long long env_ll(const char *name, long long def)
{
	const char *v = getenv(name);
	return v && *v ? atoll(v) : def;
}

int mtc_store_gcs_open(struct mtc_store *s, const char *bucket, const char *prefix, char *err,
		       size_t errlen)
{
	struct gcs *g = xcalloc(1, sizeof *g);
	const char *emu = getenv("STORAGE_EMULATOR_HOST"), *endpoint = getenv("MTC_GCS_ENDPOINT");
	size_t n;

	pthread_mutex_init(&g->run_lock, NULL);
	s->impl = g;
	s->ops = &gcs_ops;
	g->bucket = xstrdup(bucket);
	g->prefix = *prefix ? xasprintf("%s/", prefix) : xstrdup("");
	if (endpoint && *endpoint)
		g->base = xstrdup(endpoint);
	else if (emu && *emu)
		g->base = strstr(emu, "://") ? xstrdup(emu) : xasprintf("http://%s", emu);
	else
		g->base = xstrdup("https://storage.googleapis.com");
	n = strlen(g->base);
	while (n && g->base[n - 1] == '/')
		g->base[--n] = '\0';
	g->chunk = env_ll("MTC_GCS_CHUNK_KIB", DEFAULT_CHUNK >> 10) << 10;
	g->chunk -= g->chunk % (256 << 10);
	if (g->chunk <= 0)
		g->chunk = 256 << 10;
	g->threshold = s->opt.slice_threshold;
	g->slices = s->opt.slices;
	/* the opening range: small beside the threshold, since slicing waits for it */
	g->first = g->threshold / 16;
	if (g->first > (8LL << 20))
		g->first = 8LL << 20;
	if (g->first < (64LL << 10))
		g->first = 64LL << 10;
	g->backoff_base = (double)env_ll("MTC_GCS_RETRY_BASE_MS", 100) / 1000.0;
	g->backoff_cap = 10.0;
	g->seed = (unsigned)getpid() ^ (unsigned)(mtc_now() * 1e6);
	g->multi = curl_multi_init();
	curl_multi_setopt(g->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)s->opt.parallel);
	curl_multi_setopt(g->multi, CURLMOPT_MAXCONNECTS, (long)s->opt.parallel + 4);
	if (mtc_gcs_auth_new(s->opt.token_file, &g->auth, err, errlen) < 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}
