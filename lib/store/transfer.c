/*
 * The transfer engine (transfer.h): requests, retries, the run loop.
 * Invariants: every request is idempotent (a create is create-only and a
 * conflict is checked against the stored object by the api's op); a retry
 * waits mtc_backoff() and stops at the op's deadline, counted from its first
 * start; a 401 refreshes the credential once per op.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sys/stat.h>

#include "backoff.h"
#include "clock.h"
#include "crc32c.h"
#include "http.h"
#include "log.h"
#include "transfer.h"
#include "xalloc.h"

struct engine {
	struct op **v;
	size_t n, cap, next_new, unfinished;
	struct op **sleeping;
	size_t n_sleeping;
	size_t active, limit;
};

int xfer_fail(struct op *op, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int xfer_fail(struct op *op, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(op->lasterr, sizeof op->lasterr, fmt, ap);
	va_end(ap);
	op->err = e;
	return V_FAIL;
}

void xfer_header(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xfer_header(struct req *r, const char *fmt, ...)
{
	va_list ap;
	char line[1024];
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	r->headers = curl_slist_append(r->headers, line);
}

int xfer_transient(const struct req *r)
{
	if (r->abort_errno)
		return 0;
	return r->cc != CURLE_OK || mtc_http_transient(r->status);
}

/* "HTTP 403: <message>" or "connection: <curl error>". */
static void describe(const struct op *op, const struct req *r, char *out, size_t outlen)
{
	if (r->abort_errno) {
		snprintf(out, outlen, "%s", strerror(r->abort_errno));
	} else if (r->cc != CURLE_OK) {
		snprintf(out, outlen, "connection: %s",
			 r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->cc));
	} else {
		char msg[512] = "";
		if (r->mem.p)
			op->xf->api->message(r, msg, sizeof msg);
		if (!msg[0] && r->mem.p) {
			snprintf(msg, 201, "%.*s", (int)r->mem.len, r->mem.p);
			for (char *p = msg; *p; p++)
				if (*p == '\n' || *p == '\r')
					*p = ' ';
		}
		const char *hint = r->status == 401 || r->status == 403 ? op->xf->api->denied_hint
									: NULL;
		snprintf(out, outlen, "HTTP %ld%s%s%s%s", r->status, msg[0] ? ": " : "", msg,
			 hint ? "; " : "", hint ? hint : "");
	}
}

static int errno_of_status(long status)
{
	switch (status) {
	case 401:
	case 403: return EACCES;
	case 404: return ENOENT;
	case 400: return EINVAL;
	case 412: return EEXIST;
	default: return EIO;
	}
}

enum verdict xfer_fail_with(struct op *op, struct req *r, const char *what)
{
	char why[640];
	describe(op, r, why, sizeof why);
	return xfer_fail(op,
			 r->abort_errno ? r->abort_errno
			 : r->cc	? EIO
					: errno_of_status(r->status),
			 "%s '%s': %s", what, op->name ? op->name : "", why);
}

/* ----------------------------------------------------------- curl callbacks */

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct op *op = arg;
	struct req *r = &op->req;
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
	} else {
		op->xf->api->header(r, line, v);
	}
	return size * n;
}

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
		if (op->parent && op->t->received)
			op->t->received(op, op->done + r->written, r->crc);
		return len;
	}
	int ok = status >= 200 && status < 300;
	if (!r->mem.p)
		mtc_buf_init(&r->mem, !ok ? XFER_ERRBODY_MAX : r->sink_mem ? r->mem_max : XFER_BODY_MAX);
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
	free(r->path);
	free(r->query);
	mtc_buf_free(&r->mem);
	free(r->location);
	free(r->etag);
	memset(r, 0, sizeof *r);
	r->body_fd = -1;
	r->sink_fd = -1;
	r->range_end = -1;
	r->total = -1;
}

void xfer_add(struct engine *e, struct op *op)
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

static void apply_body(struct req *r, const char *method);

/* Every request is idempotent (see the top of this file). */
static int start(struct engine *e, struct op *op)
{
	struct xfer *g = op->xf;
	struct req *r = &op->req;
	char *token = NULL, err[512];
	struct mtc_http_opts o = { .idempotent = 1, .connect_s = 10, .stall_s = 60, .bulk = 1 };

	if (!op->deadline)
		op->deadline = mtc_now() + op->s->opt.deadline;
	req_reset(r);
	switch (op->t->prepare(op, r)) {
	case -1: xfer_settle(e, op, V_FAIL); return -1;
	case 1: /* nothing to send: the op waits for the children it added, or is done */
		xfer_settle(e, op, op->now);
		return 0;
	}
	if (g->api->authorize(op, r, op->refreshed == 1, &token, err, sizeof err) < 0) {
		xfer_fail(op, EACCES, "cannot authenticate: %s", err);
		xfer_settle(e, op, V_FAIL);
		return -1;
	}
	if (op->refreshed == 1)
		op->refreshed = 2;
	r->easy = g->n_idle ? g->idle[--g->n_idle] : curl_easy_init();
	o.url = r->url;
	o.token = token;
	mtc_http_setup(r->easy, &o, &r->headers, r->errbuf, err, sizeof err);
	free(token);
	r->headers = curl_slist_append(r->headers, "Expect:");
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, op);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, op);
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
void xfer_put_body(struct req *r, int fd, long long off, long long len)
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
	} else if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(r->easy, CURLOPT_NOBODY, 1L);
	}
}

static void finished(struct engine *e, struct op *op)
{
	op->ostate = O_FINISHED;
	e->unfinished--;
	if (op->t->complete)
		op->t->complete(op);
}

void xfer_settle(struct engine *e, struct op *op, enum verdict v)
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
		delay = mtc_backoff(op->attempt++, op->xf->backoff_base, op->xf->backoff_cap,
				    &op->xf->seed);
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
		mtc_debug("retrying '%s' in %.2f s: %s", op->name ? op->name : "", delay, op->lasterr);
		op->ostate = O_SLEEPING;
		op->wake = now + delay;
		e->sleeping[e->n_sleeping++] = op;
		break;
	case V_WAIT: op->ostate = O_WAITING; break;
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
	struct xfer *g = op->xf;
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
	if ((r->status == 401 || (g->api->expired && r->status && g->api->expired(r))) &&
	    !op->refreshed) {
		op->refreshed = 1;
		xfer_settle(e, op, V_AGAIN);
		return;
	}
	if (g->api->moved && r->status && !op->moved && g->api->moved(op, r)) {
		op->moved = 1;
		xfer_settle(e, op, V_AGAIN);
		return;
	}
	if (xfer_transient(r))
		describe(op, r, op->lasterr, sizeof op->lasterr);
	v = op->t->finish(op, r);
	xfer_settle(e, op, v);
}

void xfer_op_free(struct op *op);

/* Runs ops (and the children they add) to the end; -1 if any failed. */
int xfer_run(struct mtc_store *s, struct op **ops, size_t n)
{
	struct xfer *g = s->impl;
	struct engine e = { .limit = (size_t)s->opt.parallel };
	int failed = 0;

	pthread_mutex_lock(&g->run_lock);
	g->engine = &e;
	for (size_t i = 0; i < n; i++)
		xfer_add(&e, ops[i]);
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
			xfer_op_free(e.v[i]); /* children are the engine's; callers free their own ops */
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

struct op *xfer_op_new(struct mtc_store *s, const struct op_type *t)
{
	struct op *op = xcalloc(1, sizeof *op);
	op->t = t;
	op->s = s;
	op->xf = s->impl;
	op->fd = -1;
	op->req.body_fd = -1;
	op->req.sink_fd = -1;
	return op;
}

struct op *xfer_small_op(struct mtc_store *s, const struct op_type *t, int kind, const char *key)
{
	struct op *op = xfer_op_new(s, t);
	op->state = kind;
	op->name = xfer_name(s->impl, key);
	return op;
}

static struct op *small(struct mtc_store *s, int kind, const char *key)
{
	return xfer_small_op(s, ((struct xfer *)s->impl)->small, kind, key);
}

int xfer_get_buf(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len)
{
	struct op *op = small(s, XK_BUF, key);
	op->max = max;
	op->outbuf = buf;
	op->outlen = len;
	return xfer_run_one(s, op);
}

int xfer_get_range(struct mtc_store *s, const char *key, long long off, void *buf, size_t len)
{
	struct op *op;

	if (!len)
		return 0;
	op = small(s, XK_RANGE, key);
	op->off = off;
	op->len = (long long)len;
	op->rangebuf = buf;
	return xfer_run_one(s, op);
}

int xfer_stat(struct mtc_store *s, const char *key, struct mtc_store_object *out)
{
	struct op *op = small(s, XK_STAT, key);
	op->stat_out = out;
	return xfer_run_one(s, op);
}

int xfer_delete(struct mtc_store *s, const char *key)
{
	return xfer_run_one(s, small(s, XK_DELETE, key));
}

void xfer_sink_buf(struct op *op, struct req *r)
{
	r->sink_mem = 1;
	r->mem_max = op->max;
	r->crc_on = 1;
}

void xfer_sink_range(struct op *op, struct req *r)
{
	r->sink_mem = 1;
	r->mem_max = (size_t)op->len;
	xfer_header(r, "Range: bytes=%lld-%lld", op->off, op->off + op->len - 1);
}

enum verdict xfer_finish_buf(struct op *op, struct req *r)
{
	if (r->status != 200)
		return xfer_fail_with(op, r, "cannot read");
	if (r->have_crc && mtc_crc32c(0, mtc_buf_str(&r->mem), r->mem.len) != r->srv_crc) {
		snprintf(op->lasterr, sizeof op->lasterr, "cannot read '%s': crc32c mismatch", op->name);
		if (op->crc_retries++ < 2)
			return V_RETRY;
		op->err = EIO;
		return V_FAIL;
	}
	*op->outlen = r->mem.len;
	*op->outbuf = r->mem.p ? mtc_buf_take(&r->mem) : xstrdup("");
	return V_DONE;
}

enum verdict xfer_finish_range(struct op *op, struct req *r)
{
	if (r->status == 416 ||
	    ((r->status == 206 || (r->status == 200 && !op->off)) && r->mem.len != (size_t)op->len))
		return xfer_fail(op, EIO, "cannot read %lld bytes at %lld of '%s': object too short",
				 op->len, op->off, op->name);
	if (r->status != 206 && r->status != 200)
		return xfer_fail_with(op, r, "cannot read");
	memcpy(op->rangebuf, r->mem.p, (size_t)op->len);
	return V_DONE;
}

int xfer_list(struct mtc_store *s, const struct op_type *t, const char *prefix, const char *delim,
	      int temps, struct mtc_store_list *out)
{
	struct op *op = xfer_op_new(s, t);
	int rc;

	op->ltemps = temps;
	op->lprefix = prefix;
	op->ldelim = delim;
	op->list = out;
	op->name = xasprintf("%s/%s", s->url, prefix);
	rc = xfer_run_one(s, op);
	if (rc == 0)
		mtc_store_list_sort(out);
	return rc;
}

static struct op *upload_op(struct mtc_store *s, const char *key, int flags)
{
	struct op *op = xfer_op_new(s, ((struct xfer *)s->impl)->up->type);
	op->name = xfer_name(s->impl, key);
	op->key = key;
	op->flags = flags;
	return op;
}

/* x's upload (xfer_make): a directory marker ("key/") is an empty object */
static int upload_of(struct mtc_store *s, struct mtc_store_xfer *x, int flags, struct op **opp)
{
	const struct xfer_upload *up = ((struct xfer *)s->impl)->up;
	struct op *op = *opp = upload_op(s, x->key, flags);
	struct stat st;
	int e;

	op->x = x;
	if (x->key[strlen(x->key) - 1] == '/') {
		up->buf(op, "", 0);
	} else {
		op->fd = open(x->path, O_RDONLY | O_CLOEXEC);
		if (op->fd < 0 || fstat(op->fd, &st) < 0) {
			e = errno;
			return xfer_fail(op, e, "cannot open '%s': %s", x->path, strerror(e)), -1;
		}
		op->size = st.st_size;
		if (up->file(op, x->path) < 0)
			return -1;
	}
	s->progress_total += op->size;
	return 0;
}

int xfer_put_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags)
{
	return xfer_run_many(s, x, n, flags, upload_of);
}

int xfer_put_file(struct mtc_store *s, const char *key, const char *path, int flags)
{
	struct mtc_store_xfer x = { .key = key, .path = path };
	s->progress_done = s->progress_total = 0;
	return xfer_put_many(s, &x, 1, flags);
}

int xfer_put_buf(struct mtc_store *s, const char *key, const void *buf, size_t len, int flags)
{
	struct op *op = upload_op(s, key, flags);

	((struct xfer *)s->impl)->up->buf(op, buf, len);
	return xfer_run_one(s, op);
}

int xfer_run_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags, xfer_make *make)
{
	struct op **ops = xcalloc(n + 1, sizeof *ops), **todo = xcalloc(n + 1, sizeof *todo);
	size_t m = 0;
	int rc, bad = 0, first = 0;

	for (size_t i = 0; i < n; i++) {
		int made = make(s, &x[i], flags, &ops[i]);
		if (made == 0)
			todo[m++] = ops[i];
		if (made >= 0)
			continue;
		x[i].err = ops[i]->err;
		if (!bad++) {
			first = x[i].err;
			mtc_store_set_error(s, "%s", ops[i]->lasterr);
		}
	}
	rc = xfer_run(s, todo, m);
	for (size_t i = 0; i < n; i++)
		xfer_op_free(ops[i]);
	free(ops);
	free(todo);
	if (bad) {
		errno = first;
		return -1;
	}
	return rc;
}

void xfer_upload_complete(struct op *op, void (*notify)(struct op *part))
{
	if (op->fd >= 0) {
		close(op->fd);
		op->fd = -1;
	}
	if (op->parent) {
		notify(op);
		return;
	}
	if (op->x) {
		op->x->size = op->err ? 0 : op->size;
		op->x->err = op->err;
	}
}

void xfer_op_free(struct op *op)
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
	for (size_t i = 0; op->tags && i < op->n_sl; i++)
		free(op->tags[i]);
	free(op->tags);
	free(op->sl);
	free(op->sidecar);
	free(op);
}

int xfer_run_one(struct mtc_store *s, struct op *op)
{
	int rc = xfer_run(s, &op, 1);
	xfer_op_free(op);
	return rc;
}

char *xfer_name(struct xfer *xf, const char *key) { return xasprintf("%s%s", xf->prefix, key); }

void xfer_add_slice(struct op *p, long long off, long long len, uint32_t crc)
{
	p->sl = xrealloc(p->sl, (p->n_sl + 1) * sizeof *p->sl);
	p->sl[p->n_sl++] = (struct slice){ .off = off, .len = len, .crc = crc };
}

void xfer_add_part(struct op *p, size_t i, char *name, int state)
{
	struct op *c = xfer_op_new(p->s, p->t);
	c->parent = p;
	c->name = name;
	c->slot = i;
	c->off = p->sl[i].off;
	c->size = p->sl[i].len;
	c->crc = p->sl[i].crc;
	c->fd = dup(p->fd);
	c->state = state;
	p->pending++;
	xfer_add(p->xf->engine, c);
}

int xfer_crc_of_range(int fd, long long off, long long size, uint32_t *crc)
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
