#include "peer_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "backoff.h"
#include "blake3/blake3.h"
#include "clock.h"
#include "object.h"
#include "result.h"
#include "fsutil.h"
#include "http.h"
#include "inventory.h"
#include "json_out.h"
#include "log.h"
#include "naming.h"
#include "peer_http.h"
#include "peer_manifest.h"
#include "peer_ring.h"
#include "tls.h"
#include "tmpname.h"
#include "walk.h"
#include "xalloc.h"

/* How one attempt went beyond enum mtc_result; never returned from this file. */
enum attempt {
	RETRY = MTC_INTEGRITY + 1,
	NEEDS_MANIFEST, /* the peer lost the tree's manifest (428) */
	WHOLE_ONLY,	/* the peer takes a one-file object only whole */
};
#define RING_BATCH (1 << 20)

void mtc_peer_client_defaults(struct mtc_peer_client *pc)
{
	memset(pc, 0, sizeof *pc);
	pc->deadline_s = 3600;
	pc->retries = 4;
	pc->streams = 4;
	pc->limits.max_bytes = 1LL << 40;
	pc->limits.max_files = 1000000;
	pc->limits.max_depth = 64;
}

/* One HTTP exchange: what to send, where the body goes, what came back. */
struct call {
	const char *method;
	char *url;
	const char *up_path; /* a file, or a tree when up_tree */
	int up_tree;
	const struct mtc_wire_part *up_list; /* with up_tree: only these parts of the tree */
	size_t up_n;
	const char *up_mem;
	size_t up_len;
	const char *down_path; /* a file to create, or an empty dir to extract into */
	int down_tree;
	const struct mtc_manifest *expected; /* what the tree must hold */
	int pieces;	 /* a tree's GET: over this many connections at once (with expected) */
	int file_ranges; /* a file's GET: as this many byte ranges at once, of file_size bytes */
	long long file_size;
	struct mtc_wire_entry *range; /* a GET of this range of a file into its place in down_path */
	int down_shared; /* a piece: down_path is prepared, other pieces extract into it too */
	int raw;  /* a PUT or a tree's GET over a plain socket (peer_http.h), not through libcurl */
	int once; /* not idempotent: a POST that opens or commits an upload session */
	const volatile sig_atomic_t *cancel; /* the client's (peer_client.h) */

	long code;
	long long x_size;    /* a HEAD's X-Mtc-Size, -1 when none */
	int accept_ranges;   /* the answer said Accept-Ranges: bytes */
	struct mtc_buf body; /* small bodies (meta, inventory, errors), cut at MTC_HTTP_ANSWER_MAX */
	long long bytes;

	/* per attempt */
	int up_fd, down_fd;
	size_t up_off;
	const struct mtc_wire_limits *limits;
	pthread_t thread;
	int thread_rc;
	char thread_why[512];
	struct mtc_ring ring; /* the body to the extractor thread */
	int extracting;
	const char *tree_root;
	struct mtc_blake3 file_hash;
	char got[66];
	struct mtc_wire_list got_list;
	struct mtc_wire_reader *reader;
	long long up_total;
};

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t want = size * n;
	ssize_t got;

	if (c->reader) {
		got = mtc_wire_reader_read(c->reader, buf, want, c->thread_why, sizeof c->thread_why);
		if (got < 0) {
			c->thread_rc = -1;
			return CURL_READFUNC_ABORT;
		}
		c->bytes += got;
		return (size_t)got;
	}
	if (c->up_mem) {
		size_t left = c->up_len - c->up_off;
		if (want > left)
			want = left;
		memcpy(buf, c->up_mem + c->up_off, want);
		c->up_off += want;
		c->bytes += (long long)want;
		return want;
	}
	do
		got = read(c->up_fd, buf, want);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return CURL_READFUNC_ABORT;
	c->bytes += got;
	return (size_t)got;
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n;

	if (c->code == 0)
		return len; /* filled in by the header callback */
	if (c->extracting) {
		if (c->code >= 300) {
			mtc_buf_append(&c->body, p, len);
			return len;
		}
		if (mtc_ring_offer(&c->ring, p, len) < 0)
			return 0; /* the extractor refused the stream */
		c->bytes += (long long)len;
		return len;
	}
	if (c->code >= 300 || c->down_fd < 0) {
		mtc_buf_append(&c->body, p, len);
		return len;
	}
	if (mtc_write_all(c->down_fd, p, len) < 0)
		return 0;
	mtc_blake3_update(&c->file_hash, p, len);
	c->bytes += (long long)len;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	long code;
	if (n * size > 5 && !strncmp(p, "HTTP/", 5) && sscanf(p, "HTTP/%*s %ld", &code) == 1 &&
	    code >= 200)
		c->code = code;
	else if (n * size > 11 && !strncasecmp(p, "X-Mtc-Size:", 11))
		c->x_size = strtoll(p + 11, NULL, 10);
	else if (n * size > 20 && !strncasecmp(p, "Accept-Ranges: bytes", 20))
		c->accept_ranges = 1;
	return size * n;
}

static void *tree_reader(void *arg)
{
	struct call *c = arg;
	c->thread_rc = mtc_wire_extract_from(mtc_ring_next, &c->ring, c->tree_root, c->limits,
					     c->expected, &c->got_list, c->thread_why,
					     sizeof c->thread_why) == MTC_OK
			       ? 0
			       : -1;
	mtc_ring_done(&c->ring);
	return NULL;
}

static int start_extractor(struct call *c, const char *root)
{
	c->tree_root = root;
	mtc_ring_init(&c->ring, RING_BATCH);
	if (pthread_create(&c->thread, NULL, tree_reader, c)) {
		mtc_ring_free(&c->ring);
		errno = EAGAIN;
		return -1;
	}
	c->extracting = 1;
	return 0;
}

static int prepare(struct call *c)
{
	c->up_fd = c->down_fd = -1;
	c->up_off = 0;
	c->bytes = 0;
	c->code = 0;
	c->x_size = -1;
	c->accept_ranges = 0;
	mtc_buf_free(&c->body);
	mtc_buf_init(&c->body, MTC_HTTP_ANSWER_MAX);
	c->got[0] = '\0';
	mtc_wire_list_free(&c->got_list);
	c->thread_rc = 0;
	c->thread_why[0] = '\0';
	mtc_blake3_init(&c->file_hash);
	if (c->up_path && !c->up_tree && c->raw &&
	    !(c->reader = mtc_wire_reader_open_file(c->up_path, c->range ? c->range->off : 0,
						    c->range ? c->range->size : -1, &c->up_total,
						    c->thread_why, sizeof c->thread_why))) {
		c->thread_rc = -1;
		return -1;
	}
	if (c->up_path && !c->up_tree && !c->raw &&
	    (c->up_fd = open(c->up_path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (c->up_path && c->up_tree &&
	    !(c->reader = c->up_list ? mtc_wire_reader_open_list(c->up_path, c->up_list, c->up_n,
								 &c->up_total, c->thread_why,
								 sizeof c->thread_why)
				     : mtc_wire_reader_open(c->up_path, &c->up_total, c->thread_why,
							    sizeof c->thread_why))) {
		errno = ENOENT;
		c->thread_rc = -1;
		return -1;
	}
	if (c->down_path && !c->down_tree &&
	    (c->down_fd = open(c->down_path,
			       c->range ? O_RDWR | O_CLOEXEC : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			       0644)) < 0)
		return -1;
	if (c->down_path && c->down_tree) {
		if (!c->down_shared &&
		    (mtc_remove_tree(c->down_path) < 0 || mkdir(c->down_path, 0755) < 0))
			return -1;
		if (!c->raw && start_extractor(c, c->down_path) < 0)
			return -1;
	}
	return 0;
}

/* Closes the call's files; what arrived is made durable when it is published (object.h). */
static void finish_fds(struct call *c)
{
	if (c->down_fd >= 0 && !c->down_tree && !c->raw) { /* else the socket reader hashed it */
		uint8_t h[MTC_BLAKE3_OUT_LEN];
		mtc_blake3_final(&c->file_hash, h, sizeof h);
		mtc_hex(h, sizeof h, c->got);
	}
	if (c->up_fd >= 0)
		close(c->up_fd);
	if (c->down_fd >= 0)
		close(c->down_fd);
	if (c->extracting) {
		mtc_ring_end(&c->ring);
		pthread_join(c->thread, NULL);
		mtc_ring_free(&c->ring);
		c->extracting = 0;
	}
	mtc_wire_reader_close(c->reader);
	c->reader = NULL;
	c->up_fd = c->down_fd = -1;
}

static void first_line(const char *body, char *out, size_t len)
{
	size_t n = body ? strcspn(body, "\n") : 0;
	snprintf(out, len, "%.*s", (int)(n < 300 ? n : 300), body ? body : "");
}

/* The raw mode (peer_http.h): a PUT from c->reader, or a GET into c->down_fd or the tree. */
static enum mtc_http_end send_raw(const struct mtc_http_opts *o, struct call *c, double deadline,
				  char *err, size_t errlen)
{
	struct mtc_http_call hp = { .url = o->url,
				    .token = o->token,
				    .content_type = c->up_tree ? "application/x-tar"
							       : "application/octet-stream",
				    .body = c->reader,
				    .length = c->up_total,
				    .deadline = deadline,
				    .stall_s = (int)o->stall_s,
				    .upgrade = c->up_tree,
				    .fd = c->down_fd,
				    .range = c->range,
				    .root = c->down_tree ? c->down_path : NULL,
				    .limits = c->limits,
				    .expected = c->expected,
				    .got = &c->got_list,
				    .stop = (const int *)c->cancel };
	enum mtc_http_end end = c->up_path ? mtc_http_put(&hp, err, errlen)
					   : mtc_http_get(&hp, err, errlen);

	c->bytes = c->up_path ? hp.sent : hp.received;
	if (c->down_path && !c->down_tree && !c->range)
		memcpy(c->got, hp.digest, sizeof c->got);
	c->code = hp.code;
	mtc_buf_free(&c->body);
	c->body = hp.answer;
	if (end == MTC_HTTP_LOCAL) {
		c->thread_rc = -1;
		snprintf(c->thread_why, sizeof c->thread_why, "%s", err);
	}
	return end;
}

static int cancelled(const volatile sig_atomic_t *cancel) { return cancel && *cancel; }

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	return cancelled(((struct call *)arg)->cancel);
}

/* Through libcurl: every method, bodies from c's source, answers into c's sink. */
static enum mtc_http_end send_curl(const struct mtc_http_opts *o, struct call *c, char *err,
				   size_t errlen)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char errbuf[CURL_ERROR_SIZE];
	enum mtc_http_end end;
	CURLcode cc;

	if (!h) {
		snprintf(err, errlen, "cannot start curl");
		return MTC_HTTP_UNREACHED;
	}
	mtc_http_setup(h, o, &hdr, errbuf, err, errlen);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	if (c->cancel) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (!strcmp(c->method, "HEAD"))
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (!strcmp(c->method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (!strcmp(c->method, "DELETE"))
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	if (!strcmp(c->method, "PUT")) {
		struct stat st;
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, c);
		if (c->up_mem)
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->up_len);
		else if (c->up_tree)
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->up_total);
		else if (fstat(c->up_fd, &st) == 0)
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
		hdr = curl_slist_append(hdr, c->up_tree ? "Content-Type: application/x-tar"
							: "Content-Type: application/octet-stream");
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	cc = curl_easy_perform(h);
	end = mtc_http_end_of(cc);
	if (end == MTC_HTTP_ANSWERED)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->code);
	else
		snprintf(err, errlen, "%s", *errbuf ? errbuf : curl_easy_strerror(cc));
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return end;
}

/* One attempt: 0, RETRY, or a final result, with err. */
static int attempt(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		   size_t errlen)
{
	double left = deadline - mtc_now();
	struct mtc_http_opts o = { .url = c->url,
				   .token = pc->token,
				   .idempotent = !c->once,
				   .tls = mtc_tls_curl,
				   .timeout_s = left > 0.001 ? left : 0.001,
				   .connect_s = 10,
				   .stall_s = 60,
				   .bulk = 1 };
	char why[CURL_ERROR_SIZE] = "", line[320];
	enum mtc_http_end end;
	int answered, rc;

	if (cancelled(pc->cancel)) {
		snprintf(err, errlen, "stopped");
		return MTC_FAILURE;
	}
	if (mtc_http_check(&o, err, errlen) < 0)
		return MTC_FAILURE;
	c->cancel = pc->cancel;
	c->raw = ((!strcmp(c->method, "PUT") && c->up_path) ||
		  (!strcmp(c->method, "GET") && c->down_path)) &&
		 mtc_http_usable(c->url);
	if (prepare(c) < 0) {
		if (c->thread_rc < 0)
			snprintf(err, errlen, "cannot send '%s': %s", c->up_path, c->thread_why);
		else
			snprintf(err, errlen, "'%s': %s", c->up_path ? c->up_path : c->down_path,
				 strerror(errno));
		finish_fds(c);
		return MTC_FAILURE;
	}
	end = c->raw ? send_raw(&o, c, deadline, why, sizeof why) : send_curl(&o, c, why, sizeof why);
	answered = end == MTC_HTTP_ANSWERED || end == MTC_HTTP_LOCAL; /* LOCAL: thread_rc says why */
	finish_fds(c);
	if (answered && c->code >= 300) {
		first_line(c->body.p, line, sizeof line);
		snprintf(err, errlen, "'%s': HTTP %ld%s%s", c->url, c->code, *line ? ": " : "", line);
		rc = c->code == 404				     ? MTC_NOTFOUND
		     : c->code == 428				     ? NEEDS_MANIFEST
		     : mtc_http_transient(c->code) || c->code == 422 ? RETRY
								     : MTC_FAILURE;
	} else if (c->thread_rc < 0 && c->down_path && (c->down_tree || c->range)) {
		snprintf(err, errlen, "'%s': rejected: %s", c->url, c->thread_why);
		c->code = 422;
		rc = RETRY;
	} else if (c->thread_rc < 0) {
		snprintf(err, errlen, "cannot send '%s': %s", c->up_path, c->thread_why);
		rc = MTC_FAILURE;
	} else if (end == MTC_HTTP_DEADLINE && mtc_now() >= deadline) {
		snprintf(err, errlen, "'%s': %s", c->url, why);
		rc = MTC_TIMEOUT;
	} else if (!answered && cancelled(pc->cancel)) {
		snprintf(err, errlen, "'%s': stopped", c->url);
		rc = MTC_FAILURE;
	} else if (!answered) {
		snprintf(err, errlen, "'%s': %s", c->url, why);
		c->code = 0;
		rc = RETRY;
	} else {
		rc = 0;
	}
	return rc;
}

static void free_call(struct call *c)
{
	free(c->url);
	mtc_buf_free(&c->body);
	mtc_wire_list_free(&c->got_list);
	memset(c, 0, sizeof *c);
}

struct piece {
	const struct mtc_peer_client *pc;
	struct call c;
	double deadline;
	int rc;
	char err[1024];
};

static void *piece_main(void *arg)
{
	struct piece *p = arg;
	p->rc = attempt(p->pc, &p->c, p->deadline, p->err, sizeof p->err);
	return NULL;
}

/* A tree's manifest dealt into pieces (mtc_manifest_split), one call each. */
struct piece_set {
	int k, n;
	struct mtc_wire_part **bins;
	size_t *counts;
	struct piece *p;
};

/* k empty pieces, each to be given its call; n is k until a split says otherwise. */
static void pieces_init(struct piece_set *ps, int k, const struct mtc_peer_client *pc, double deadline)
{
	ps->k = ps->n = k;
	ps->bins = xcalloc((size_t)k, sizeof *ps->bins);
	ps->counts = xcalloc((size_t)k, sizeof *ps->counts);
	ps->p = xcalloc((size_t)k, sizeof *ps->p);
	for (int i = 0; i < k; i++)
		ps->p[i] = (struct piece){ .pc = pc, .deadline = deadline };
}

static void pieces_split(struct piece_set *ps, const struct mtc_manifest *m, int k, int ranges,
			 const struct mtc_peer_client *pc, double deadline)
{
	pieces_init(ps, k, pc, deadline);
	ps->n = mtc_manifest_split(m, k, ranges, ps->bins, ps->counts);
}

/* Runs the calls of the pieces at once; 0, or the first failure (a 422 first) with err. */
static int pieces_run(struct piece_set *ps, char *err, size_t errlen)
{
	int n = ps->n, rc = 0;
	pthread_t *th = xcalloc((size_t)n + 1, sizeof *th);

	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, piece_main, &ps->p[i]))
			piece_main(&ps->p[i]), th[i] = 0;
	for (int i = 0; i < n; i++) {
		if (th[i])
			pthread_join(th[i], NULL);
		if (ps->p[i].rc && (!rc || ps->p[i].c.code == 422)) {
			rc = ps->p[i].rc;
			snprintf(err, errlen, "%s", ps->p[i].err);
		}
	}
	free(th);
	return rc;
}

static void pieces_free(struct piece_set *ps)
{
	for (int i = 0; i < ps->k; i++) {
		free(ps->bins[i]);
		free_call(&ps->p[i].c);
	}
	free(ps->bins);
	free(ps->counts);
	free(ps->p);
}

/*
 * One try of a tree's GET as c->pieces pieces over as many connections,
 * extracted side by side into c->down_path: the daemon splits the
 * manifest into the same pieces (peer_manifest.h).
 */
static int get_pieces(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		      size_t errlen)
{
	struct piece_set ps;
	int rc;

	c->bytes = 0;
	c->code = 0;
	mtc_wire_list_free(&c->got_list);
	pieces_split(&ps, c->expected, c->pieces, 1, pc, deadline);
	if (mtc_remove_tree(c->down_path) < 0 || mkdir(c->down_path, 0755) < 0) {
		snprintf(err, errlen, "'%s': %s", c->down_path, strerror(errno));
		pieces_free(&ps);
		return MTC_FAILURE;
	}
	for (int i = 0; i < ps.n; i++)
		ps.p[i].c = (struct call){ .method = "GET",
					   .url = xasprintf("%s?piece=%d&pieces=%d&ranges=1", c->url, i,
							    ps.k),
					   .down_path = c->down_path,
					   .down_tree = 1,
					   .down_shared = 1,
					   .expected = c->expected,
					   .limits = c->limits };
	rc = pieces_run(&ps, err, errlen);
	for (int i = 0; i < ps.n; i++) {
		struct call *p = &ps.p[i].c;
		c->bytes += p->bytes;
		c->code = rc && p->code == 422 ? 422 : c->code;
		mtc_wire_list_take(&c->got_list, &p->got_list);
	}
	if (!rc)
		c->code = 200;
	pieces_free(&ps);
	return rc;
}

/*
 * How many byte ranges a file of size bytes crosses in, one connection
 * each: 1 when one stream is enough for it.
 */
static int range_count(const struct mtc_peer_client *pc, long long size)
{
	if (pc->streams <= 1 || size < 2 * MTC_RANGE_MIN)
		return 1;
	return size / MTC_RANGE_MIN < pc->streams ? (int)(size / MTC_RANGE_MIN) : pc->streams;
}

/* A file of size bytes as k ranges into l: whole units (peer_wire.h) but the last. */
static void split_ranges(struct mtc_wire_list *l, long long size, int k)
{
	long long per = (size + k - 1) / k;

	per = (per + MTC_WIRE_UNIT - 1) / MTC_WIRE_UNIT * MTC_WIRE_UNIT;
	for (long long off = 0; off < size; off += per) {
		struct mtc_wire_entry *w = mtc_wire_list_add(l, "", 0,
							     off + per < size ? per : size - off);
		w->off = off;
		w->file_size = size;
	}
}

/*
 * One try of a file's GET as c->file_ranges byte ranges over as many
 * connections, each written into its place in c->down_path and hashed
 * there; their units join into the file's digest (c->got).
 */
static int get_ranges(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		      size_t errlen)
{
	struct mtc_wire_list got = { 0 };
	struct piece_set ps;
	char why[512];
	int fd, rc;

	c->bytes = 0;
	c->code = 0;
	c->got[0] = '\0';
	if ((fd = open(c->down_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(err, errlen, "'%s': %s", c->down_path, strerror(errno));
		return MTC_FAILURE;
	}
	close(fd);
	split_ranges(&got, c->file_size, c->file_ranges);
	pieces_init(&ps, (int)got.n, pc, deadline);
	for (size_t i = 0; i < got.n; i++)
		ps.p[i].c = (struct call){ .method = "GET",
					   .url = xstrdup(c->url),
					   .down_path = c->down_path,
					   .range = &got.e[i],
					   .limits = c->limits };
	rc = pieces_run(&ps, err, errlen);
	for (int i = 0; i < ps.n; i++) {
		c->bytes += ps.p[i].c.bytes;
		c->code = rc && ps.p[i].c.code == 422 ? 422 : c->code;
	}
	pieces_free(&ps);
	if (!rc && mtc_wire_join(&got, why, sizeof why) < 0) {
		snprintf(err, errlen, "'%s': %s", c->url, why);
		c->code = 422;
		rc = RETRY;
	}
	if (!rc) {
		memcpy(c->got, got.e[0].digest, sizeof c->got);
		c->code = 200;
	}
	mtc_wire_list_free(&got);
	return rc;
}

/* check: after a 2xx, 0, RETRY or a result (verification of what arrived). */
static int run(const struct mtc_peer_client *pc, struct call *c,
	       int (*check)(const struct mtc_peer_client *, struct call *, void *, char *, size_t),
	       void *arg, char *err, size_t errlen)
{
	double deadline = mtc_now() + (pc->deadline_s > 0 ? pc->deadline_s : 1e9);
	struct mtc_retry retry;
	int integrity = 0;

	mtc_retry_init(&retry, MTC_BACKOFF_PEER, deadline);
	for (;;) {
		int rc = c->pieces > 1	      ? get_pieces(pc, c, deadline, err, errlen)
			 : c->file_ranges > 1 ? get_ranges(pc, c, deadline, err, errlen)
					      : attempt(pc, c, deadline, err, errlen);
		if (rc == 0 && check)
			rc = check(pc, c, arg, err, errlen);
		if (rc != RETRY)
			return rc;
		integrity = c->code == 422;
		if (retry.attempt >= pc->retries)
			return integrity ? MTC_INTEGRITY : MTC_FAILURE;
		mtc_debug("retrying: %s", err);
		if (mtc_retry_wait(&retry) < 0)
			return MTC_TIMEOUT;
	}
}

static char *object_url(const char *base, const char *name)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	return xasprintf("%.*s/v1/objects/%s", (int)n, base, name);
}

int mtc_peer_has(const struct mtc_peer_client *pc, const char *base, const char *name, char *err,
		 size_t errlen)
{
	struct call c = { .method = "HEAD", .url = object_url(base, name) };
	int rc = run(pc, &c, NULL, NULL, err, errlen);
	free(c.url);
	mtc_buf_free(&c.body);
	return rc == 0 ? 1 : rc == MTC_NOTFOUND ? 0 : -1;
}

static char *uploads_url(const char *base, const char *rest)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	return xasprintf("%.*s/v1/uploads/%s", (int)n, base, rest);
}

static int put_manifest(const struct mtc_peer_client *pc, const char *base, const char *hash,
			const char *text, char *err, size_t errlen)
{
	char *name = xasprintf("%s.manifest", hash);
	struct call c = {
		.method = "PUT", .url = object_url(base, name), .up_mem = text, .up_len = strlen(text)
	};
	int rc = run(pc, &c, NULL, NULL, err, errlen);
	free(name);
	free_call(&c);
	return rc;
}

/*
 * Opens an upload session for rest ("<hash>.data", "?size=N" for a file;
 * freed here), nothing sent yet (*sent): 0 with *id, or with *id NULL when
 * the peer holds the object already; else RETRY or a result. *code: the
 * answer's status (*rejected: 422); *ranges: the peer joins ranges of a
 * tree's files.
 */
static int session_open(const struct mtc_peer_client *pc, const char *base, char *rest, double deadline,
			char **id, int *ranges, long *code, long long *sent, int *rejected, char *err,
			size_t errlen)
{
	struct call c = { .method = "POST", .url = uploads_url(base, rest), .once = 1 };
	int rc;
	json_t *j;

	free(rest);
	*sent = 0;
	rc = attempt(pc, &c, deadline, err, errlen);
	*id = NULL;
	*ranges = 0;
	*code = c.code;
	*rejected = c.code == 422;
	if (rc || c.code == 200) {
		free_call(&c);
		return rc;
	}
	j = json_loadb(mtc_buf_str(&c.body), c.body.len, 0, NULL);
	if (j && json_is_string(json_object_get(j, "session")))
		*id = xstrdup(json_string_value(json_object_get(j, "session")));
	*ranges = j && json_is_true(json_object_get(j, "ranges"));
	json_decref(j);
	free_call(&c);
	if (!*id) {
		snprintf(err, errlen, "'%s': no upload session in the answer", base);
		return MTC_FAILURE;
	}
	return 0;
}

/*
 * After a session's pieces: commits it when they all went (rc 0), else drops
 * it. rc, or the commit's outcome; *rejected when the commit was answered 422.
 */
static int session_close(const struct mtc_peer_client *pc, const char *base, const char *id, int rc,
			 double deadline, int *rejected, char *err, size_t errlen)
{
	char *rest = xasprintf("%s%s", id, rc ? "" : "/commit"), ignored[256];
	struct call c = { .method = rc ? "DELETE" : "POST",
			  .url = uploads_url(base, rest),
			  .once = !rc };

	free(rest);
	if (!rc) {
		rc = attempt(pc, &c, deadline, err, errlen);
		*rejected |= c.code == 422;
	} else {
		attempt(pc, &c, deadline, ignored, sizeof ignored);
	}
	free_call(&c);
	return rc;
}

/*
 * Sends the pieces of session id, their calls made but for their URLs, at
 * once, then commits the session or drops it; frees the pieces and id. 0,
 * RETRY or a result, with the bytes sent and any 422 added up.
 */
static int session_send(const struct mtc_peer_client *pc, const char *base, char *id,
			struct piece_set *ps, double deadline, long long *sent, int *rejected, char *err,
			size_t errlen)
{
	int rc;

	for (int i = 0; i < ps->n; i++) {
		char *r = xasprintf("%s/%d", id, i);
		ps->p[i].c.url = uploads_url(base, r);
		free(r);
	}
	rc = pieces_run(ps, err, errlen);
	for (int i = 0; i < ps->n; i++) {
		*sent += ps->p[i].c.bytes;
		*rejected |= ps->p[i].c.code == 422;
	}
	pieces_free(ps);
	rc = session_close(pc, base, id, rc, deadline, rejected, err, errlen);
	free(id);
	return rc;
}

/*
 * One try of a tree upload over parallel connections: open a session,
 * send the pieces at once, commit. 0, RETRY, NEEDS_MANIFEST or a
 * code; *rejected when the peer answered 422.
 */
static int put_tree_once(const struct mtc_peer_client *pc, const char *base, const char *path,
			 const char *hash, const struct mtc_manifest *m, double deadline,
			 long long *sent, int *rejected, char *err, size_t errlen)
{
	struct piece_set ps;
	char *id;
	long code;
	int rc, ranges;

	rc = session_open(pc, base, xasprintf("%s.data", hash), deadline, &id, &ranges, &code, sent,
			  rejected, err, errlen);
	if (rc || !id)
		return rc;
	pieces_split(&ps, m, pc->streams > 0 ? pc->streams : 1, ranges, pc, deadline);
	for (int i = 0; i < ps.n; i++)
		ps.p[i].c = (struct call){ .method = "PUT",
					   .up_path = path,
					   .up_tree = 1,
					   .up_list = ps.bins[i],
					   .up_n = ps.counts[i] };
	return session_send(pc, base, id, &ps, deadline, sent, rejected, err, errlen);
}

/*
 * One try of a one-file object's upload as byte ranges over parallel
 * connections, in a session like a tree's. *unsupported when the peer
 * opens no session for a file (an older daemon): it takes the file whole.
 */
static int put_file_once(const struct mtc_peer_client *pc, const char *base, const char *path,
			 const char *hash, long long size, double deadline, long long *sent,
			 int *rejected, int *unsupported, char *err, size_t errlen)
{
	struct mtc_wire_list parts = { 0 };
	struct piece_set ps;
	char *id;
	long code;
	int rc, ranges;

	rc = session_open(pc, base, xasprintf("%s.data?size=%lld", hash, size), deadline, &id, &ranges,
			  &code, sent, rejected, err, errlen);
	*unsupported = rc && code == 400;
	if (rc || !id)
		return rc;
	split_ranges(&parts, size, range_count(pc, size));
	pieces_init(&ps, (int)parts.n, pc, deadline);
	for (size_t i = 0; i < parts.n; i++)
		ps.p[i].c = (struct call){ .method = "PUT", .up_path = path, .range = &parts.e[i] };
	rc = session_send(pc, base, id, &ps, deadline, sent, rejected, err, errlen);
	mtc_wire_list_free(&parts);
	return rc;
}

/* A one-file object as ranges, retried as a whole: 0, WHOLE_ONLY or a result. */
static int put_file(const struct mtc_peer_client *pc, const char *base, const char *path,
		    const char *hash, long long size, long long *sent, char *err, size_t errlen)
{
	double deadline = mtc_now() + (pc->deadline_s > 0 ? pc->deadline_s : 1e9);
	struct mtc_retry retry;
	int rc, rejected = 0, unsupported = 0;

	mtc_retry_init(&retry, MTC_BACKOFF_PEER, deadline);
	for (;;) {
		rc = put_file_once(pc, base, path, hash, size, deadline, sent, &rejected, &unsupported,
				   err, errlen);
		if (unsupported)
			return WHOLE_ONLY;
		if (rc != RETRY)
			return rc == NEEDS_MANIFEST ? MTC_FAILURE : rc;
		if (retry.attempt >= pc->retries)
			return rejected ? MTC_INTEGRITY : MTC_FAILURE;
		mtc_debug("retrying: %s", err);
		if (mtc_retry_wait(&retry) < 0)
			return MTC_TIMEOUT;
	}
}

static size_t files_in(const struct mtc_manifest *m)
{
	size_t files = 0;
	for (size_t i = 0; i < m->n; i++)
		files += m->entries[i].type == MTC_ENTRY_FILE;
	return files;
}

/*
 * A tree goes with its manifest first (kept in dir, computed once), then
 * as pieces over pc->streams connections, or as one tar stream; a peer
 * that lost the manifest (428) gets it again.
 */
static int put_tree(const struct mtc_peer_client *pc, const char *base, const char *dir,
		    const char *hash, long long *sent, char *err, size_t errlen)
{
	struct mtc_manifest m;
	char why[1024], *text, *path = xasprintf("%s/%s.data", dir, hash), *name;
	double deadline = mtc_now() + (pc->deadline_s > 0 ? pc->deadline_s : 1e9);
	struct mtc_retry retry;
	int rc, resent = 0, rejected = 0;

	*sent = 0;
	mtc_retry_init(&retry, MTC_BACKOFF_PEER, deadline);
	rc = mtc_peer_manifest_local(dir, hash, &m, &text, why, sizeof why);
	if (rc) {
		snprintf(err, errlen, "cannot send '%s': %s", path, why);
		free(path);
		return rc > 0 ? MTC_INTEGRITY : MTC_FAILURE;
	}
	rc = put_manifest(pc, base, hash, text, err, errlen);
	while (!rc) {
		if (pc->streams > 1 && files_in(&m) > 1) {
			rc = put_tree_once(pc, base, path, hash, &m, deadline, sent, &rejected, err,
					   errlen);
		} else {
			name = xasprintf("%s.data", hash);
			struct call c = { .method = "PUT",
					  .url = object_url(base, name),
					  .up_path = path,
					  .up_tree = 1 };
			free(name);
			rc = attempt(pc, &c, deadline, err, errlen);
			rejected = c.code == 422;
			*sent = rc ? 0 : c.bytes;
			free_call(&c);
		}
		if (rc == NEEDS_MANIFEST && !resent++) {
			rc = put_manifest(pc, base, hash, text, err, errlen);
			continue;
		}
		if (rc != RETRY)
			break;
		if (retry.attempt >= pc->retries) {
			rc = rejected ? MTC_INTEGRITY : MTC_FAILURE;
			break;
		}
		mtc_debug("retrying: %s", err);
		if (mtc_retry_wait(&retry) < 0) {
			rc = MTC_TIMEOUT;
			break;
		}
		rc = 0;
	}
	if (rc == NEEDS_MANIFEST)
		rc = MTC_FAILURE;
	mtc_manifest_free(&m);
	free(text);
	free(path);
	return rc;
}

enum mtc_result mtc_peer_put(const struct mtc_peer_client *pc, const char *base, const char *dir,
			     const char *name, long long *sent, char *err, size_t errlen)
{
	struct call c = { .method = "PUT", .url = object_url(base, name) };
	char hash[MTC_HASH_MAX + 1], *path = xasprintf("%s/%s", dir, name);
	struct mtc_ckpt_name n;
	int rc;

	if (!mtc_parse_data_name(name, hash) && mtc_is_dir_hash(hash)) {
		long long bytes;
		free(path);
		free(c.url);
		rc = put_tree(pc, base, dir, hash, &bytes, err, errlen);
		if (sent)
			*sent = rc == 0 ? bytes : 0;
		return rc;
	}
	if (!mtc_parse_data_name(name, hash)) {
		struct stat st;
		c.up_path = path;
		if (stat(path, &st) == 0 && range_count(pc, st.st_size) > 1 && mtc_http_usable(c.url)) {
			long long bytes = 0;
			rc = put_file(pc, base, path, hash, st.st_size, &bytes, err, errlen);
			if (rc != WHOLE_ONLY) {
				if (sent)
					*sent = rc == 0 ? bytes : 0;
				free(path);
				free(c.url);
				return rc;
			}
		}
	} else if (!mtc_parse_ckpt_name(name, &n) && n.ext == MTC_EXT_META) {
		if (mtc_read_meta(path, hash) < 0) {
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
			free(path);
			free(c.url);
			return MTC_FAILURE;
		}
		c.up_mem = hash;
		c.up_len = strlen(hash);
	} else {
		snprintf(err, errlen, "'%s' is neither <hash>.data nor a .meta", name);
		free(path);
		free(c.url);
		return MTC_USAGE;
	}
	rc = run(pc, &c, NULL, NULL, err, errlen);
	if (rc == NEEDS_MANIFEST)
		rc = MTC_FAILURE;
	if (sent)
		*sent = rc == 0 ? c.bytes : 0;
	free(path);
	free(c.url);
	mtc_buf_free(&c.body);
	return rc;
}

struct publish {
	const char *hash;
	const char *obj;
	const struct mtc_manifest *expected;
	const char *manifest_text;
	const char *dir;
};

static int verify_and_publish(const struct mtc_peer_client *pc, struct call *c, void *arg, char *err,
			      size_t errlen)
{
	struct publish *p = arg;
	struct mtc_manifest got;
	struct mtc_object_manifest keep = { .text = p->manifest_text,
					    .len = p->manifest_text ? strlen(p->manifest_text) : 0 };
	char diff[512];
	int bad;

	mtc_manifest_init(&got);
	if (c->down_tree && mtc_wire_join(&c->got_list, diff, sizeof diff) < 0) {
		snprintf(err, errlen, "'%s': %s", c->url, diff);
		c->code = 422;
		return RETRY;
	}
	if (c->down_tree)
		mtc_wire_manifest(&c->got_list, &got, c->got);
	bad = mtc_object_check(p->obj, p->hash, c->down_tree ? p->expected : NULL, &got, c->got, 0, diff,
			       sizeof diff);
	mtc_manifest_free(&got);
	if (bad) {
		snprintf(err, errlen, "'%s': not what its name and manifest say: %s", c->url, diff);
		c->code = 422;
		return RETRY;
	}
	if (mtc_object_publish(p->obj, p->dir, p->hash, &keep) < 0) {
		snprintf(err, errlen, "cannot publish '%s/%s.data': %s", p->dir, p->hash,
			 strerror(errno));
		return MTC_FAILURE;
	}
	return 0;
}

/* GET <hash>.manifest: it must be consistent with the name and within the limits. */
static int get_manifest(const struct mtc_peer_client *pc, const char *base, const char *hash,
			struct mtc_manifest *m, char **text, char *err, size_t errlen)
{
	char *name = xasprintf("%s.manifest", hash), why[512];
	struct call c = { .method = "GET", .url = object_url(base, name) };
	int rc = run(pc, &c, NULL, NULL, err, errlen);

	free(name);
	if (rc == MTC_FAILURE && c.code == 409)
		rc = MTC_INTEGRITY; /* the peer's copy does not match its name */
	if (rc == 0 && mtc_peer_manifest_parse(mtc_buf_str(&c.body), c.body.len, hash, &pc->limits, m,
					       why, sizeof why) < 0) {
		snprintf(err, errlen, "'%s': %s", c.url, why);
		rc = MTC_INTEGRITY;
	}
	if (rc == 0) {
		*text = mtc_buf_take(&c.body);
	}
	free_call(&c);
	return rc == NEEDS_MANIFEST ? MTC_FAILURE : rc;
}

/*
 * A file's GET goes as byte ranges, over up to pc->streams connections, when
 * it is large and the daemon serves ranges (its HEAD says so).
 */
static void plan_ranges(const struct mtc_peer_client *pc, struct call *c)
{
	struct call h = { .method = "HEAD", .url = c->url, .limits = c->limits };
	char err[512];

	if (pc->streams > 1 && mtc_http_usable(c->url) &&
	    attempt(pc, &h, mtc_now() + 30, err, sizeof err) == 0 && h.accept_ranges &&
	    range_count(pc, h.x_size) > 1) {
		c->file_size = h.x_size;
		c->file_ranges = range_count(pc, h.x_size);
	}
	mtc_buf_free(&h.body);
}

static int get_data(const struct mtc_peer_client *pc, const char *base, const char *dir,
		    const char *name, const char *hash, long long *received, char *err, size_t errlen)
{
	struct mtc_tmp staging;
	char *obj, *text = NULL;
	struct call c = { .method = "GET", .url = object_url(base, name), .limits = &pc->limits };
	struct mtc_manifest m;
	struct publish p = { hash, NULL, &m, NULL, dir };
	int rc;

	mtc_manifest_init(&m);
	if (mtc_is_dir_hash(hash)) {
		rc = get_manifest(pc, base, hash, &m, &text, err, errlen);
		if (rc) {
			free(c.url);
			return rc;
		}
		c.expected = &m;
		p.manifest_text = text;
		if (pc->streams > 1 && mtc_http_usable(c.url) && files_in(&m) > 1)
			c.pieces = pc->streams;
	} else {
		plan_ranges(pc, &c);
	}
	if (mtc_tmp_create(dir, "fetch", 1, &staging) < 0) {
		snprintf(err, errlen, "cannot stage in '%s': %s", dir, strerror(errno));
		free(c.url);
		mtc_manifest_free(&m);
		free(text);
		return MTC_FAILURE;
	}
	obj = xasprintf("%s/obj", staging.path);
	p.obj = obj;
	c.down_path = obj;
	c.down_tree = mtc_is_dir_hash(hash);
	rc = run(pc, &c, verify_and_publish, &p, err, errlen);
	if (rc == NEEDS_MANIFEST)
		rc = MTC_FAILURE;
	if (received)
		*received = rc == 0 ? c.bytes : 0;
	mtc_tmp_discard(&staging);
	free(obj);
	free_call(&c);
	mtc_manifest_free(&m);
	free(text);
	return rc;
}

enum mtc_result mtc_peer_get(const struct mtc_peer_client *pc, const char *base, const char *dir,
			     const char *name, long long *received, char *err, size_t errlen)
{
	char hash[MTC_HASH_MAX + 1], *path, *data;
	struct mtc_ckpt_name n;
	struct call c = { .method = "GET" };
	long long got = 0;
	int rc;

	if (received)
		*received = 0;
	if (!mtc_parse_data_name(name, hash))
		return get_data(pc, base, dir, name, hash, received, err, errlen);
	if (mtc_parse_ckpt_name(name, &n) || n.ext != MTC_EXT_META) {
		snprintf(err, errlen, "'%s' is neither <hash>.data nor a .meta", name);
		return MTC_USAGE;
	}
	c.url = object_url(base, name);
	rc = run(pc, &c, NULL, NULL, err, errlen);
	if (rc == 0) {
		size_t len = c.body.len;
		if (len && c.body.p[len - 1] == '\n')
			c.body.p[--len] = '\0';
		if (!c.body.p || len > MTC_HASH_MAX || !mtc_is_hash(c.body.p)) {
			snprintf(err, errlen, "'%s': content is not a hash", c.url);
			rc = MTC_INTEGRITY;
		}
	}
	if (rc == 0) {
		snprintf(hash, sizeof hash, "%s", c.body.p);
		data = xasprintf("%s.data", hash);
		path = xasprintf("%s/%s", dir, data);
		if (access(path, F_OK) < 0)
			rc = get_data(pc, base, dir, data, hash, &got, err, errlen);
		free(path);
		free(data);
	}
	if (rc == 0) {
		path = xasprintf("%s/%s", dir, name);
		if (mtc_write_atomic(path, hash, strlen(hash)) < 0) {
			snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
			rc = MTC_FAILURE;
		}
		free(path);
	}
	if (received)
		*received = got + (long long)c.body.len;
	free(c.url);
	mtc_buf_free(&c.body);
	return rc;
}

json_t *mtc_peer_inventory(const struct mtc_peer_client *pc, const char *base, char *err, size_t errlen)
{
	size_t n = strlen(base);
	struct call c = { .method = "GET" };
	json_t *j = NULL;
	json_error_t je;

	while (n && base[n - 1] == '/')
		n--;
	c.url = xasprintf("%.*s/v1/inventory", (int)n, base);
	if (run(pc, &c, NULL, NULL, err, errlen) == 0) {
		j = json_loadb(mtc_buf_str(&c.body), c.body.len, 0, &je);
		if (!j)
			snprintf(err, errlen, "'%s': bad JSON: %s", c.url, je.text);
	}
	free(c.url);
	mtc_buf_free(&c.body);
	return j;
}

/* ---- push of a step ---- */

struct push_peer {
	const struct mtc_peer_client *pc;
	const char *dir;
	const char *url;
	char **metas;
	int n_metas;
	int ok, sent, skipped;
	long long bytes;
	double seconds;
	char err[1024];
};

static void *push_one(void *arg)
{
	struct push_peer *p = arg;
	double t0 = mtc_now();

	for (int i = 0; i < p->n_metas; i++) {
		char hash[MTC_HASH_MAX + 1], *mpath = xasprintf("%s/%s", p->dir, p->metas[i]);
		char *data;
		long long sent = 0;
		int has, rc;

		if (mtc_read_meta(mpath, hash) < 0) {
			snprintf(p->err, sizeof p->err, "cannot read '%s': %s", mpath, strerror(errno));
			free(mpath);
			goto out;
		}
		free(mpath);
		data = xasprintf("%s.data", hash);
		has = mtc_peer_has(p->pc, p->url, data, p->err, sizeof p->err);
		if (has == 0) {
			rc = mtc_peer_put(p->pc, p->url, p->dir, data, &sent, p->err, sizeof p->err);
			p->sent++;
			p->bytes += sent;
		} else {
			rc = has < 0;
			p->skipped += has == 1;
		}
		free(data);
		if (rc)
			goto out;
		if (mtc_peer_put(p->pc, p->url, p->dir, p->metas[i], &sent, p->err, sizeof p->err))
			goto out;
	}
	p->ok = 1;
	p->err[0] = '\0';
out:
	p->seconds = mtc_now() - t0;
	return NULL;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char **step_metas(const char *dir, const char *job, long long step, int rank, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **out = NULL;
	int cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		struct mtc_ckpt_name c;
		if (mtc_parse_ckpt_name(e->d_name, &c) || c.ext != MTC_EXT_META || strcmp(c.job, job) ||
		    c.step != step || c.rank != rank)
			continue;
		if (*n == cap)
			out = xrealloc(out, (size_t)(cap = cap ? cap * 2 : 4) * sizeof *out);
		out[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(out, (size_t)*n, sizeof *out, by_name);
	return out;
}

json_t *mtc_peer_push_step(const struct mtc_peer_client *pc, const char *dir, const char *job,
			   long long step, int rank, char *const *peers, int n_peers, int *failed)
{
	struct push_peer *pp = xcalloc((size_t)(n_peers ? n_peers : 1), sizeof *pp);
	pthread_t *th = xcalloc((size_t)(n_peers ? n_peers : 1), sizeof *th);
	json_t *list = json_array(), *out;
	double t0 = mtc_now();
	int n_metas;
	char **metas = step_metas(dir, job, step, rank, &n_metas);

	*failed = 0;
	if (!n_metas) {
		free(pp);
		free(th);
		*failed = -1;
		return json_pack("{s:I, s:b, s:s, s:o}", "step", (json_int_t)step, "ok", 0, "error",
				 "no .meta of this node for the step", "peers", list);
	}
	for (int i = 0; i < n_peers; i++) {
		pp[i] = (struct push_peer){
			.pc = pc, .dir = dir, .url = peers[i], .metas = metas, .n_metas = n_metas
		};
		if (pthread_create(&th[i], NULL, push_one, &pp[i]))
			push_one(&pp[i]), th[i] = 0;
	}
	for (int i = 0; i < n_peers; i++) {
		json_t *one;
		if (th[i])
			pthread_join(th[i], NULL);
		one = json_pack("{s:s, s:b, s:i, s:i, s:i, s:I, s:o}", "peer", pp[i].url, "ok", pp[i].ok,
				"metas", n_metas, "data-sent", pp[i].sent, "data-skipped", pp[i].skipped,
				"bytes", (json_int_t)pp[i].bytes, "seconds",
				mtc_json_seconds(pp[i].seconds));
		if (!pp[i].ok) {
			json_object_set_new(one, "error", json_string(pp[i].err));
			mtc_error("cannot push step %lld to '%s': %s", step, pp[i].url, pp[i].err);
			(*failed)++;
		}
		json_array_append_new(list, one);
	}
	out = json_pack("{s:I, s:b, s:o, s:o}", "step", (json_int_t)step, "ok", *failed == 0, "seconds",
			mtc_json_seconds(mtc_now() - t0), "peers", list);
	for (int i = 0; i < n_metas; i++)
		free(metas[i]);
	free(metas);
	free(pp);
	free(th);
	return out;
}
