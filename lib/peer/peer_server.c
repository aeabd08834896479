#include "peer_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "blake3/blake3.h"
#include "buf.h"
#include "cli.h"
#include "clock.h"
#include "local_dir.h"
#include "object.h"
#include "framing.h"
#include "fsutil.h"
#include "inventory.h"
#include "log.h"
#include "manifest_text.h"
#include "mhd_loop.h"
#include "metrics.h"
#include "naming.h"
#include "node_status.h"
#include "peer_http.h"
#include "peer_auth.h"
#include "peer_manifest.h"
#include "peer_ring.h"
#include "peer_wire.h"
#include "sorter.h"
#include "tls_front.h"
#include "tls_relay.h"
#include "tmpname.h"
#include "walk.h"
#include "xalloc.h"

#define OBJECTS "/v1/objects/"
#define UPLOADS "/v1/uploads/"
#define MAX_PIECES 64
#define META_BODY_MAX 128
#define EXTRACT_WHY 512
#define STREAM_BLOCK (256 * 1024)
#define CONN_MEMORY (256 << 10)
#define EVENTS_CONN_MEMORY (4 << 10) /* a report's head; its body is kept apart (req.body) */
/*
 * After each pass the coordinator's loop rests this long, so that the reports
 * and heartbeats of thousands of ranks are served a batch per wakeup rather
 * than one each; a round waits seconds, a heartbeat is due in tens.
 */
#define EVENTS_PAUSE_MS 2
#define HTTP_UNPROCESSABLE 422
#define HTTP_TOO_LARGE 413
#define HTTP_PRECONDITION_REQUIRED 428
#define UPGRADE MTC_HTTP_UPGRADE

struct mtc_peer_server {
	struct MHD_Daemon *daemon;
	/* with route_start: the routes' long polls, on one thread (sorter.h) */
	struct MHD_Daemon *events;
	struct mtc_mhd_loop *events_loop; /* runs events */
	struct mtc_sorter *sorter;
	pthread_mutex_t wake_mu; /* a route's wait woken against its connection being suspended */
	atomic_llong route_held; /* ROUTE_HELD_MAX */
	struct mtc_peer_server_opts o;
	char *dir;
	struct mtc_peer_auth *auth; /* NULL: no token */
	char address[128];
	atomic_int stopping;

	atomic_llong bytes_in, bytes_out, active, digest_failures;
	atomic_llong published, already_present, rejected;
	atomic_llong codes[600];
	struct mtc_histogram seconds;

	pthread_mutex_t sessions_mu;
	/* manifests being parsed and checked (each costs about its size again): at most one */
	pthread_mutex_t manifest_mu;
	pthread_cond_t manifest_cv;
	int manifest_busy;
	/* the tree last served in pieces (piece_reader), under split_mu */
	pthread_mutex_t split_mu;
	struct split *split;
	/* manifest entries held by open sessions (twice: expected and what arrived) */
	size_t held_entries;
	struct session *sessions;

	/* the connection guard (conn_started): every open connection, oldest first */
	pthread_mutex_t conns_mu;
	pthread_cond_t conns_cv;
	TAILQ_HEAD(, conn) conns;
	int unauth;	  /* connections that have not shown a valid token yet */
	int guard_stop;
	pthread_t guard;
	atomic_llong cut_unauth, cut_head;
	atomic_llong conns_opened, conns_open;

	/* with TLS (tls_front.h): whether the client behind each of MHD's fds showed a CA-signed certificate */
	struct mtc_tls_front *tls;
	unsigned char *tls_client; /* by fd: 0 not known, 1 no certificate, 2 verified */
	size_t tls_client_cap;
};

/* A tree's manifest, parsed once for all the sessions uploading it. */
struct expected {
	struct mtc_manifest m;
	atomic_int refs;
};

/*
 * A tree upload: the expected manifest, the staging dir its pieces are
 * extracted into, and what has arrived. A PUT of the whole tree is a
 * session of one piece; the upload API (UPLOADS) lets several pieces
 * arrive over parallel connections before one commit. An object that is
 * one file can come the same way, its pieces byte ranges written into
 * their places in the staging file and hashed as units (peer_wire.h).
 */
struct session {
	struct session *next;
	char id[33]; /* "" when not listed */
	char hash[MTC_HASH_MAX + 1];
	struct mtc_tmp staging; /* set when path is */
	char *obj;
	struct expected *exp; /* shared by the open sessions of one tree */
	long long file_size;  /* an object that is one file: its size, its pieces its ranges */
	struct mtc_wire_list got;
	int pieces; /* in flight */
	int failed;
	char why[512];
	double t0, last;
};

enum req_kind {
	REQ_OTHER,
	REQ_PUT_FILE,
	REQ_PUT_TREE,
	REQ_PUT_RANGE, /* a byte range of a one-file object's upload session */
	REQ_PUT_TREE_SOCK, /* the tar comes over the socket after a 101 (UPGRADE) */
	REQ_GET_TREE_SOCK, /* the tar goes over the socket after a 101 (UPGRADE) */
	REQ_PUT_META,
	REQ_PUT_MANIFEST,
	REQ_ROUTE
};
#define ROUTE_BODY_MAX (64 << 20)
/*
 * The bytes of route bodies held at once, reserved when a request is admitted
 * (its Content-Length, else its endpoint's limit) and given back once it is
 * parsed: beyond, 503 and Retry-After, so that ranks reporting at once cannot
 * raise the coordinator's peak. A lone body is taken whatever its size.
 */
#define ROUTE_HELD_MAX (8 << 20)

struct req {
	struct mtc_peer_server *s;
	enum req_kind kind;
	char name[MTC_JOB_MAX + 64];
	char hash[MTC_HASH_MAX + 1];
	struct mtc_tmp staging; /* set when path is */
	char *obj;
	int fd; /* the file being written */
	struct mtc_ring ring; /* body chunks to the extractor */
	pthread_t extractor;
	int extracting, extract_rc;
	char *extract_why; /* the extractor's, EXTRACT_WHY bytes */
	int fail_code;
	char *why; /* with fail_code */
	char meta[META_BODY_MAX + 1];
	size_t meta_len;
	long long bytes, limit; /* limit: the largest body this request may have */
	double t0;
	int transfer;
	struct mtc_blake3 *file_hash; /* REQ_PUT_FILE (18 KB: only a data upload has one) */
	char got_digest[66];
	char *url, *method;  /* REQ_ROUTE, REQ_PUT_MANIFEST */
	struct mtc_buf body; /* REQ_ROUTE: capped at the largest body its endpoint takes */
	long long held;	     /* REQ_ROUTE: its part of route_held */
	struct session *sess; /* REQ_PUT_TREE, REQ_PUT_RANGE */
	struct mtc_wire_hash range_hash; /* REQ_PUT_RANGE: into got's one entry */
	int piece;	      /* sess is listed: this request is one piece of it */
	struct mtc_wire_list got;
	struct mtc_wire_reader *send; /* REQ_GET_TREE_SOCK */
	struct mtc_peer_cred who;
	/* REQ_ROUTE on the events daemon: the route's wait; suspended, woken under wake_mu */
	struct MHD_Connection *conn;
	void *wait;
	int suspended, woken;
	int close; /* the answer closes the connection */
};

void mtc_peer_server_defaults(struct mtc_peer_server_opts *o)
{
	memset(o, 0, sizeof *o);
	o->listen = "127.0.0.1:7070";
	o->max_body = 0;
	o->max_files = 1000000;
	o->max_depth = 64;
	o->max_connections = 256;
	o->max_conns_per_ip = 64;
	o->max_unauth = 64;
	o->head_timeout_s = 10;
	o->timeout_s = 120;
	o->min_rate = 64 << 10;
	o->session_timeout_s = 600;
}

/* 1 when the request carries the job's secret or a rank's credential (peer_auth.h), with who it is in *who. */
static int authorized(struct mtc_peer_server *s, struct MHD_Connection *c, struct mtc_peer_cred *who)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	return mtc_peer_auth_check(s->auth, h, who) == 0;
}

static enum MHD_Result queue(struct req *r, struct MHD_Connection *c, unsigned code,
			     struct MHD_Response *resp)
{
	enum MHD_Result rc;
	atomic_fetch_add(&r->s->codes[code < 600 ? code : 0], 1);
	MHD_add_response_header(resp, "Server", "mtc-replicate");
	rc = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return rc;
}

static enum MHD_Result respond(struct req *r, struct MHD_Connection *c, unsigned code,
			       const char *type, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static enum MHD_Result respond(struct req *r, struct MHD_Connection *c, unsigned code,
			       const char *type, const char *fmt, ...)
{
	struct MHD_Response *resp;
	va_list ap;
	char *body;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	resp = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (code == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (code == MHD_HTTP_MISDIRECTED_REQUEST || r->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	atomic_fetch_add(&r->s->bytes_out, n);
	return queue(r, c, code, resp);
}

#define TEXT "text/plain; charset=utf-8"

static void end_extraction(struct req *r)
{
	if (!r->extracting)
		return;
	mtc_ring_end(&r->ring);
	pthread_join(r->extractor, NULL);
	r->extracting = 0;
}

/* An upload's staging dir, removed with what it holds, and its lock dropped. */
static void drop_staging(struct mtc_tmp *t)
{
	if (!t->path)
		return;
	if (mtc_remove_tree(t->path) < 0)
		mtc_warn("cannot remove '%s':", t->path);
	mtc_tmp_release(t);
}

static void session_free(struct mtc_peer_server *s, struct session *x)
{
	if (!x)
		return;
	drop_staging(&x->staging);
	free(x->obj);
	if (x->exp && atomic_fetch_sub(&x->exp->refs, 1) == 1) {
		pthread_mutex_lock(&s->manifest_mu);
		s->held_entries -= x->exp->m.n;
		pthread_mutex_unlock(&s->manifest_mu);
		mtc_manifest_free(&x->exp->m);
		free(x->exp);
	}
	mtc_wire_list_free(&x->got);
	free(x);
	malloc_trim(0);
}

/* Marks a listed session failed (why) and releases the piece r holds. */
static void piece_done(struct req *r, const char *why)
{
	struct mtc_peer_server *s = r->s;
	struct session *x = r->sess;

	pthread_mutex_lock(&s->sessions_mu);
	if (why && !x->failed) {
		x->failed = 1;
		snprintf(x->why, sizeof x->why, "%s", why);
	}
	if (!why)
		mtc_wire_list_take(&x->got, &r->got);
	x->pieces--;
	x->last = mtc_now();
	pthread_mutex_unlock(&s->sessions_mu);
	r->sess = NULL;
	r->piece = 0;
}

static void remove_staging(struct req *r)
{
	if (r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
	}
	end_extraction(r);
	if (r->kind == REQ_PUT_RANGE)
		mtc_wire_hash_end(&r->range_hash);
	drop_staging(&r->staging);
	free(r->obj);
	r->obj = NULL;
	if (r->sess && r->piece)
		piece_done(r, "a piece of the upload was cut off");
	session_free(r->s, r->sess);
	r->sess = NULL;
	mtc_wire_list_free(&r->got);
	if (r->transfer) {
		atomic_fetch_sub(&r->s->active, 1);
		r->transfer = 0;
	}
}

static struct mtc_wire_limits server_limits(const struct mtc_peer_server *s);

static void *extract_main(void *arg)
{
	struct req *r = arg;
	struct mtc_wire_limits lim = server_limits(r->s);

	r->extract_rc = mtc_wire_extract_from(mtc_ring_next, &r->ring, r->sess->obj, &lim,
					      &r->sess->exp->m, &r->got, r->extract_why, EXTRACT_WHY);
	mtc_ring_done(&r->ring);
	return NULL;
}

/*
 * The largest body an upload may have now: --max-body, never more than the
 * local dir's free space (a body that cannot fit is refused before it is
 * read).
 */
static long long body_limit(const struct mtc_peer_server *s)
{
	struct statvfs fs;
	long long room;

	if (statvfs(s->dir, &fs) < 0)
		return s->o.max_body > 0 ? s->o.max_body : LLONG_MAX;
	room = (long long)fs.f_bavail * (long long)fs.f_frsize;
	return s->o.max_body > 0 && s->o.max_body < room ? s->o.max_body : room;
}

static struct mtc_wire_limits server_limits(const struct mtc_peer_server *s)
{
	return (struct mtc_wire_limits){ body_limit(s), s->o.max_files, s->o.max_depth };
}


/*
 * Memory is bounded by construction: one manifest at a time is parsed and
 * checked; another waits up to MANIFEST_WAIT_S, then gets 503 and Retry-After.
 */
#define MANIFEST_WAIT_S 10

static int manifest_enter(struct mtc_peer_server *s)
{
	struct timespec until;
	int ok = 1;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += MANIFEST_WAIT_S;
	pthread_mutex_lock(&s->manifest_mu);
	while (s->manifest_busy && ok)
		ok = pthread_cond_timedwait(&s->manifest_cv, &s->manifest_mu, &until) == 0;
	if (!s->manifest_busy)
		ok = s->manifest_busy = 1;
	pthread_mutex_unlock(&s->manifest_mu);
	return ok;
}

static void manifest_leave(struct mtc_peer_server *s)
{
	pthread_mutex_lock(&s->manifest_mu);
	s->manifest_busy = 0;
	pthread_cond_signal(&s->manifest_cv);
	pthread_mutex_unlock(&s->manifest_mu);
}

/*
 * Parses and checks the manifest at path (no symlink followed) with memory
 * for its entries alone (mtc_manifest_parse_fd); then hands the freed
 * memory back, so a peak stays one manifest's. 1 when there is no such
 * file (why untouched), 0, or -1 with why.
 */
static int parse_manifest(const char *path, const char *hash, const struct mtc_wire_limits *lim,
			  struct mtc_manifest *m, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0)
		return 1;
	rc = mtc_manifest_parse_fd(fd, MTC_MANIFEST_BODY_MAX, m, err, errlen);
	close(fd);
	if (rc == 0 && mtc_peer_manifest_check(m, hash, lim, err, errlen) < 0) {
		mtc_manifest_free(m);
		rc = -1;
	}
	malloc_trim(0);
	return rc;
}

/*
 * Open sessions hold their manifests (and what arrived, as many entries
 * again) in memory: at most MAX_HELD_ENTRIES in all, though one session may
 * hold a manifest larger than that alone. 1 when n more may be held.
 */
#define MAX_HELD_ENTRIES 150000

static int hold_entries(struct mtc_peer_server *s, size_t n)
{
	int ok;
	pthread_mutex_lock(&s->manifest_mu);
	ok = !s->held_entries || s->held_entries + n <= MAX_HELD_ENTRIES;
	if (ok)
		s->held_entries += n;
	pthread_mutex_unlock(&s->manifest_mu);
	return ok;
}

/* The manifest a tree upload is checked against: the one sent for it, else the one kept. */
static int load_manifest(struct mtc_peer_server *s, const char *hash, struct mtc_manifest *m,
			 char *err, size_t errlen)
{
	struct mtc_wire_limits lim = server_limits(s);
	char *paths[2] = { xasprintf("%s/" MTC_PENDING_MANIFEST "%s", s->dir, hash),
			   xasprintf("%s/%s.manifest", s->dir, hash) };
	int rc = -1;

	snprintf(err, errlen, "send '%s.manifest' first", hash);
	for (int i = 0; i < 2 && rc != 0; i++)
		rc = parse_manifest(paths[i], hash, &lim, m, err, errlen);
	free(paths[0]);
	free(paths[1]);
	return rc ? -1 : 0;
}

/* x's expected manifest: another open session's of the same tree, else loaded; -1 with the HTTP code and why. */
static int expect_manifest(struct mtc_peer_server *s, struct session *x, unsigned *code, char *err,
			   size_t errlen)
{
	struct expected *e;
	int rc;

	pthread_mutex_lock(&s->sessions_mu);
	for (struct session *y = s->sessions; y && !x->exp; y = y->next)
		if (!strcmp(y->hash, x->hash) && y->exp) {
			x->exp = y->exp;
			atomic_fetch_add(&x->exp->refs, 1);
		}
	pthread_mutex_unlock(&s->sessions_mu);
	if (x->exp)
		return 0;
	e = xcalloc(1, sizeof *e);
	if (!manifest_enter(s)) {
		snprintf(err, errlen, "busy checking other manifests; retry");
		*code = MHD_HTTP_SERVICE_UNAVAILABLE;
		free(e);
		return -1;
	}
	rc = load_manifest(s, x->hash, &e->m, err, errlen);
	manifest_leave(s);
	if (rc < 0) {
		*code = HTTP_PRECONDITION_REQUIRED;
		free(e);
		return -1;
	}
	if (!hold_entries(s, e->m.n)) {
		snprintf(err, errlen, "busy with other uploads (%zu entries in flight); retry",
			 s->held_entries);
		*code = MHD_HTTP_SERVICE_UNAVAILABLE;
		mtc_manifest_free(&e->m);
		free(e);
		malloc_trim(0);
		return -1;
	}
	atomic_store(&e->refs, 1);
	x->exp = e;
	return 0;
}

/* The staging file of a one-file object's ranges, at its full size (sparse until they arrive). */
static int stage_file(const char *path, long long size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644), e;
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

/*
 * A session for an upload, its staging made: a dir for a tree (file_size 0),
 * a file of file_size bytes for a one-file object; NULL with the HTTP code and why.
 */
static struct session *session_new(struct mtc_peer_server *s, const char *hash, long long file_size,
				   unsigned *code, char *err, size_t errlen)
{
	struct session *x = xcalloc(1, sizeof *x);

	snprintf(x->hash, sizeof x->hash, "%s", hash);
	x->file_size = file_size;
	if (!file_size && expect_manifest(s, x, code, err, errlen) < 0) {
		free(x);
		return NULL;
	}
	if (mtc_tmp_create(s->dir, "upload", 1, &x->staging) < 0)
		goto fail;
	x->obj = xasprintf("%s/obj", x->staging.path);
	if (file_size ? stage_file(x->obj, file_size) < 0 : mkdir(x->obj, 0755) < 0)
		goto fail;
	x->t0 = x->last = mtc_now();
	return x;
fail:
	snprintf(err, errlen, "cannot stage '%s.data': %s", hash, strerror(errno));
	*code = errno == EFBIG ? HTTP_TOO_LARGE : MHD_HTTP_INSUFFICIENT_STORAGE;
	session_free(s, x);
	return NULL;
}

/* A publish that failed (errno): 507 when the disk is full, else 500, with why in err. */
static unsigned publish_failure(const char *name, char *err, size_t errlen)
{
	int e = errno;

	snprintf(err, errlen, "cannot publish '%s': %s", name, strerror(e));
	return e == ENOSPC || e == EDQUOT ? MHD_HTTP_INSUFFICIENT_STORAGE : 500;
}

/* Publishes x's verified staging under its name (never replacing), with its manifest if any. */
static unsigned publish_staged(struct mtc_peer_server *s, struct session *x,
			       const struct mtc_object_manifest *manifest, char *err, size_t errlen)
{
	int rc;

	if (atomic_load(&s->stopping)) {
		snprintf(err, errlen, "shutting down");
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	}
	rc = mtc_object_publish(x->obj, s->dir, x->hash, manifest);
	if (rc < 0) {
		char *name = xasprintf("%s.data", x->hash);
		unsigned code = publish_failure(name, err, errlen);
		free(name);
		return code;
	}
	mtc_histogram_observe(&s->seconds, mtc_now() - x->t0);
	if (rc > 0) {
		snprintf(err, errlen, "'%s.data' is already present", x->hash);
		return MHD_HTTP_OK;
	}
	snprintf(err, errlen, "'%s.data' stored", x->hash);
	return MHD_HTTP_CREATED;
}

/*
 * Checks what arrived in x against its name and manifest and publishes it:
 * the tree by rename (never replacing), then its manifest beside it. The
 * HTTP code, with why.
 */
static unsigned publish_tree(struct mtc_peer_server *s, struct session *x, char *err,
			     size_t errlen)
{
	struct mtc_manifest got;
	char digest[MTC_DIGEST_LEN], diff[512], *pending;
	unsigned code;
	int rc;

	if (x->failed) {
		snprintf(err, errlen, "'%s.data' rejected: %s", x->hash, x->why);
		return HTTP_UNPROCESSABLE;
	}
	if (mtc_wire_join(&x->got, diff, sizeof diff) < 0) {
		atomic_fetch_add(&s->digest_failures, 1);
		snprintf(err, errlen, "'%s.data' rejected: %s", x->hash, diff);
		return HTTP_UNPROCESSABLE;
	}
	mtc_manifest_init(&got);
	mtc_wire_manifest(&x->got, &got, digest);
	rc = mtc_object_check(x->obj, x->hash, &x->exp->m, &got, digest, 0, diff, sizeof diff);
	mtc_manifest_free(&got);
	if (rc) {
		atomic_fetch_add(&s->digest_failures, 1);
		snprintf(err, errlen, "'%s.data' rejected: %s", x->hash, diff);
		return HTTP_UNPROCESSABLE;
	}
	/* the manifest text checked when it came (made durable then) is kept as it is */
	pending = xasprintf("%s/" MTC_PENDING_MANIFEST "%s", s->dir, x->hash);
	code = publish_staged(s, x, &(struct mtc_object_manifest){ .file = pending }, err, errlen);
	free(pending);
	return code;
}

/* The same for a one-file object: its ranges must join into its name. */
static unsigned publish_file(struct mtc_peer_server *s, struct session *x, char *err, size_t errlen)
{
	char diff[512];

	if (x->failed) {
		snprintf(err, errlen, "'%s.data' rejected: %s", x->hash, x->why);
		return HTTP_UNPROCESSABLE;
	}
	if (mtc_wire_join(&x->got, diff, sizeof diff) == 0) {
		if (x->got.n != 1)
			snprintf(diff, sizeof diff, "no range arrived");
		else if (strcmp(x->got.e[0].digest, x->hash))
			snprintf(diff, sizeof diff, "digest is %s", x->got.e[0].digest);
		else
			return publish_staged(s, x, NULL, err, errlen);
	}
	atomic_fetch_add(&s->digest_failures, 1);
	snprintf(err, errlen, "'%s.data' rejected: %s", x->hash, diff);
	return HTTP_UNPROCESSABLE;
}

/* ---- reads ---- */

static enum MHD_Result start_upgrade(struct req *r, struct MHD_Connection *c);

struct tree_stream {
	struct mtc_peer_server *s;
	struct mtc_wire_reader *reader;
	char *root;
};

static ssize_t tree_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct tree_stream *t = cls;
	char why[512];
	ssize_t n = mtc_wire_reader_read(t->reader, buf, max, why, sizeof why);
	if (n > 0) {
		atomic_fetch_add(&t->s->bytes_out, n);
		return n;
	}
	if (n < 0)
		mtc_warn("sending '%s': %s", t->root, why);
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void tree_free(void *cls)
{
	struct tree_stream *t = cls;
	mtc_wire_reader_close(t->reader);
	free(t->root);
	free(t);
}

/*
 * ?piece=I&pieces=K[&ranges=1] of a tree's GET: *k is 0 without them; else
 * 0, or the HTTP code of a bad request with why. ranges=1: the client joins
 * ranges of a big file (peer_wire.h).
 */
static int tree_piece(struct MHD_Connection *c, int *k, int *i, int *ranges, char *err,
		      size_t errlen)
{
	const char *pr = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ranges");
	const char *pi = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "piece");
	const char *pk = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pieces");
	char *e1 = NULL, *e2 = NULL;
	long vi, vk;

	*k = 0;
	if (!pi && !pk)
		return 0;
	vi = pi ? strtol(pi, &e1, 10) : -1;
	vk = pk ? strtol(pk, &e2, 10) : -1;
	if (!pi || !pk || *e1 || *e2 || vk < 1 || vk > MAX_PIECES || vi < 0 || vi >= vk) {
		snprintf(err, errlen, "piece=I&pieces=K takes 0 <= I < K <= %d", MAX_PIECES);
		return MHD_HTTP_BAD_REQUEST;
	}
	*k = (int)vk;
	*i = (int)vi;
	*ranges = pr && !strcmp(pr, "1");
	return 0;
}

/*
 * A tree's manifest split k ways (peer_manifest.h: both ends split it
 * alike), shared by the k piece requests of one fetch, which come
 * together: one parse for all of them. Dropped once k pieces have opened
 * their lists, or when another tree or split is asked for.
 */
struct split {
	char hash[MTC_HASH_MAX + 1];
	int k, ranges, opened;
	double made;
	struct mtc_manifest m;
	struct mtc_wire_part **bins;
	size_t *counts;
};

#define SPLIT_KEEP_S 60

static void split_free(struct split *x)
{
	if (!x)
		return;
	for (int b = 0; b < x->k; b++)
		free(x->bins[b]);
	free(x->bins);
	free(x->counts);
	mtc_manifest_free(&x->m);
	free(x);
}

/*
 * The tree's local manifest, parsed one at a time (manifest_enter): 0, 1
 * when the data does not match its name, -1, or -2 when busy; why.
 */
static int local_manifest(struct mtc_peer_server *s, const char *hash, struct mtc_manifest *m,
			  char **text, char *err, size_t errlen)
{
	int rc;

	if (!manifest_enter(s)) {
		mtc_fail(err, errlen, "busy checking other manifests");
		return -2;
	}
	rc = mtc_peer_manifest_local(s->dir, hash, m, text, err, errlen);
	manifest_leave(s);
	return rc;
}

/* Piece i of k of the tree at path. */
static struct mtc_wire_reader *piece_reader(struct mtc_peer_server *s, const char *hash,
					    const char *path, int k, int i, int ranges,
					    long long *total, char *err, size_t errlen)
{
	struct mtc_wire_reader *reader = NULL;
	struct split *x;

	pthread_mutex_lock(&s->split_mu);
	x = s->split;
	if (!x || strcmp(x->hash, hash) || x->k != k || x->ranges != ranges ||
	    mtc_now() - x->made > SPLIT_KEEP_S) {
		split_free(x);
		s->split = x = xcalloc(1, sizeof *x);
		if (local_manifest(s, hash, &x->m, NULL, err, errlen)) {
			free(x);
			s->split = NULL;
			pthread_mutex_unlock(&s->split_mu);
			return NULL;
		}
		snprintf(x->hash, sizeof x->hash, "%s", hash);
		x->k = k;
		x->ranges = ranges;
		x->made = mtc_now();
		x->bins = xcalloc((size_t)k, sizeof *x->bins);
		x->counts = xcalloc((size_t)k, sizeof *x->counts);
		mtc_manifest_split(&x->m, k, ranges, x->bins, x->counts);
	}
	reader = mtc_wire_reader_open_list(path, x->bins[i], x->counts[i], total, err, errlen);
	if (++x->opened >= k) {
		split_free(x);
		s->split = NULL;
	}
	pthread_mutex_unlock(&s->split_mu);
	return reader;
}

/*
 * The request's one byte range within a file of size bytes ("Range:
 * bytes=A-B"): 1 with [*off, *off + *len), 0 without the header, -1 when it
 * is not one range inside the file.
 */
static int byte_range(struct MHD_Connection *c, long long size, long long *off, long long *len)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
	long long a, b;
	int n = 0;
	if (!h)
		return 0;
	if (sscanf(h, "bytes=%lld-%lld%n", &a, &b, &n) != 2 || h[n] || a < 0 || b < a || b >= size)
		return -1;
	*off = a;
	*len = b - a + 1;
	return 1;
}

static enum MHD_Result get_data(struct req *r, struct MHD_Connection *c, const char *path,
				int head)
{
	struct MHD_Response *resp;
	struct stat st;
	char size[32];
	long long total;

	if (lstat(path, &st) < 0)
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	if (S_ISLNK(st.st_mode)) {
		mtc_warn("'%s' is a symlink: not served", path);
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	}
	if (S_ISREG(st.st_mode) && !head) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
		}
		long long off = 0, len = st.st_size;
		int ranged = byte_range(c, st.st_size, &off, &len);
		if (ranged < 0) {
			close(fd);
			return respond(r, c, MHD_HTTP_RANGE_NOT_SATISFIABLE, TEXT,
				       "'%s' is %lld bytes: one range 'bytes=A-B' inside them\n",
				       r->name, (long long)st.st_size);
		}
		resp = MHD_create_response_from_fd_at_offset64((uint64_t)len, fd, (uint64_t)off);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
		if (ranged) {
			char range[96];
			snprintf(range, sizeof range, "bytes %lld-%lld/%lld", off, off + len - 1,
				 (long long)st.st_size);
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, range);
		}
		atomic_fetch_add(&r->s->bytes_out, len);
		return queue(r, c, ranged ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, resp);
	}
	if (S_ISDIR(st.st_mode) && !head) {
		const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_UPGRADE);
		struct mtc_wire_reader *reader;
		struct tree_stream *t;
		char why[512];
		int k, i, ranges, bad = tree_piece(c, &k, &i, &ranges, why, sizeof why);
		if (bad)
			return respond(r, c, (unsigned)bad, TEXT, "%s\n", why);
		reader = k ? piece_reader(r->s, r->hash, path, k, i, ranges, &total, why, sizeof why)
			   : mtc_wire_reader_open(path, &total, why, sizeof why);
		if (!reader)
			return respond(r, c, 500, TEXT, "cannot send '%s': %s\n", r->name, why);
		if (up && !strcasecmp(up, UPGRADE)) {
			r->kind = REQ_GET_TREE_SOCK;
			r->send = reader;
			return start_upgrade(r, c);
		}
		t = xcalloc(1, sizeof *t);
		t->s = r->s;
		t->root = xstrdup(path);
		t->reader = reader;
		resp = MHD_create_response_from_callback((uint64_t)total, STREAM_BLOCK, tree_read, t,
							 tree_free);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-tar");
		return queue(r, c, MHD_HTTP_OK, resp);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	total = S_ISREG(st.st_mode) ? (long long)st.st_size : mtc_tree_bytes(path);
	if (total < 0)
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	snprintf(size, sizeof size, "%lld", total);
	resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, "X-Mtc-Size", size);
	if (S_ISREG(st.st_mode))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	return queue(r, c, MHD_HTTP_OK, resp);
}

static enum MHD_Result get_meta(struct req *r, struct MHD_Connection *c, const char *path,
				int head)
{
	char hash[MTC_HASH_MAX + 1];
	if (mtc_read_meta(path, hash) < 0)
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	if (head) {
		struct MHD_Response *resp =
			MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		return queue(r, c, MHD_HTTP_OK, resp);
	}
	return respond(r, c, MHD_HTTP_OK, "application/octet-stream", "%s", hash);
}

static enum MHD_Result get_inventory(struct req *r, struct MHD_Connection *c)
{
	struct mtc_inventory inv;
	json_t *j;
	char *text;
	enum MHD_Result rc;

	if (mtc_inventory_scan(r->s->dir, &inv) < 0)
		return respond(r, c, 500, TEXT, "cannot scan the dir: %s\n", strerror(errno));
	j = mtc_inventory_to_json(&inv);
	text = json_dumps(j, JSON_COMPACT);
	rc = respond(r, c, MHD_HTTP_OK, "application/json", "%s\n", text);
	free(text);
	json_decref(j);
	mtc_inventory_free(&inv);
	return rc;
}

/* What an operator pages on: the node's steps, its last backup, its RAM disk's room. */
static void node_metrics(struct mtc_peer_server *s, struct mtc_buf *t)
{
	struct mtc_node_status st;
	struct statvfs fs;

	if (mtc_node_status_read(s->dir, &st) == 0)
		mtc_node_status_metrics(&st, t);
	if (statvfs(s->dir, &fs) == 0) {
		mtc_metric_header(t, "mtc_local_dir_size_bytes", "gauge", "size of the local dir's filesystem");
		mtc_metric_value(t, "mtc_local_dir_size_bytes", NULL, (double)fs.f_blocks * fs.f_frsize);
		mtc_metric_header(t, "mtc_local_dir_free_bytes", "gauge", "free bytes there");
		mtc_metric_value(t, "mtc_local_dir_free_bytes", NULL, (double)fs.f_bavail * fs.f_frsize);
	}
}

static enum MHD_Result get_metrics(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	struct mtc_buf t = MTC_BUF_INIT(MTC_METRICS_MAX);
	enum MHD_Result rc;

	mtc_metric_header(&t, "mtc_peer_bytes_received_total", "counter", "request body bytes received");
	mtc_metric_value(&t, "mtc_peer_bytes_received_total", NULL, (double)atomic_load(&s->bytes_in));
	mtc_metric_header(&t, "mtc_peer_bytes_sent_total", "counter", "response body bytes sent");
	mtc_metric_value(&t, "mtc_peer_bytes_sent_total", NULL, (double)atomic_load(&s->bytes_out));
	mtc_metric_header(&t, "mtc_peer_requests_total", "counter", "requests answered, by HTTP code");
	for (int code = 100; code < 600; code++) {
		long long n = atomic_load(&s->codes[code]);
		char label[32];
		if (!n)
			continue;
		snprintf(label, sizeof label, "code=\"%d\"", code);
		mtc_metric_value(&t, "mtc_peer_requests_total", label, (double)n);
	}
	mtc_metric_header(&t, "mtc_peer_uploads_total", "counter", "data uploads by outcome");
	mtc_metric_value(&t, "mtc_peer_uploads_total", "result=\"published\"",
			 (double)atomic_load(&s->published));
	mtc_metric_value(&t, "mtc_peer_uploads_total", "result=\"present\"",
			 (double)atomic_load(&s->already_present));
	mtc_metric_value(&t, "mtc_peer_uploads_total", "result=\"rejected\"",
			 (double)atomic_load(&s->rejected));
	mtc_metric_header(&t, "mtc_peer_active_transfers", "gauge", "uploads in progress");
	mtc_metric_value(&t, "mtc_peer_active_transfers", NULL, (double)atomic_load(&s->active));
	mtc_metric_header(&t, "mtc_peer_connections_total", "counter", "connections accepted");
	mtc_metric_value(&t, "mtc_peer_connections_total", NULL, (double)atomic_load(&s->conns_opened));
	mtc_metric_header(&t, "mtc_peer_connections_open", "gauge", "connections open now");
	mtc_metric_value(&t, "mtc_peer_connections_open", NULL, (double)atomic_load(&s->conns_open));
	mtc_metric_header(&t, "mtc_peer_connections_cut_total", "counter",
			  "unauthenticated connections cut: beyond --max-unauth or past --head-timeout");
	mtc_metric_value(&t, "mtc_peer_connections_cut_total", "reason=\"unauthenticated\"",
			 (double)atomic_load(&s->cut_unauth));
	mtc_metric_value(&t, "mtc_peer_connections_cut_total", "reason=\"head-timeout\"",
			 (double)atomic_load(&s->cut_head));
	if (s->tls) {
		struct mtc_tls_front_counts k;
		mtc_tls_front_counts(s->tls, &k);
		mtc_metric_header(&t, "mtc_peer_tls_handshakes_total", "counter",
				  "TLS handshakes by how they ended: cut is beyond --max-unauth at once, "
				  "timeout past --head-timeout");
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"ok\"", (double)k.ok);
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"failed\"",
				 (double)k.failed);
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"timeout\"",
				 (double)k.timed_out);
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"cut\"", (double)k.cut);
		mtc_metric_header(&t, "mtc_peer_tls_kernel_total", "counter",
				  "TLS connections whose records the kernel en- or decrypts (kernel TLS), "
				  "by direction");
		mtc_metric_value(&t, "mtc_peer_tls_kernel_total", "direction=\"send\"",
				 (double)k.kernel_send);
		mtc_metric_value(&t, "mtc_peer_tls_kernel_total", "direction=\"receive\"",
				 (double)k.kernel_recv);
	}
	mtc_metric_header(&t, "mtc_peer_digest_failures_total", "counter",
			  "uploads whose content did not hash to their name");
	mtc_metric_value(&t, "mtc_peer_digest_failures_total", NULL,
			 (double)atomic_load(&s->digest_failures));
	mtc_metric_histogram(&t, "mtc_peer_transfer_seconds",
			     "seconds per data upload, hashed as it arrives", &s->seconds);
	node_metrics(s, &t);
	if (s->o.metrics)
		s->o.metrics(s->o.route_arg, &t);
	rc = respond(r, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", "%s",
		     mtc_buf_str(&t));
	mtc_buf_free(&t);
	return rc;
}

/* "<hash>.manifest" of a tree hash, parsed as the <hash>.data it belongs to. */
static int manifest_name(const char *name, char hash[MTC_HASH_MAX + 1])
{
	size_t len = strlen(name), ext = strlen(".manifest");
	char data[MTC_HASH_MAX + 16];
	int rc;

	if (len <= ext || len - ext > MTC_HASH_MAX || strcmp(name + len - ext, ".manifest"))
		return -1;
	snprintf(data, sizeof data, "%.*s.data", (int)(len - ext), name);
	rc = mtc_parse_data_name(data, hash);
	return rc == 0 && mtc_is_dir_hash(hash) ? 0 : -1;
}

/* The kept manifest, or one computed from the data (and kept) when there is none. */
static enum MHD_Result get_manifest(struct req *r, struct MHD_Connection *c, int head)
{
	struct mtc_manifest m;
	char why[1024], *text, *data = xasprintf("%s/%s.data", r->s->dir, r->hash);
	int present = access(data, F_OK) == 0, rc;
	enum MHD_Result res;

	free(data);
	if (!present)
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s.data' not found\n", r->hash);
	if (head) {
		struct MHD_Response *resp =
			MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		return queue(r, c, MHD_HTTP_OK, resp);
	}
	rc = local_manifest(r->s, r->hash, &m, &text, why, sizeof why);
	if (rc == -2)
		return respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, "'%s.manifest': %s; retry\n",
			       r->hash, why);
	if (rc)
		return respond(r, c, rc > 0 ? MHD_HTTP_CONFLICT : 500, TEXT, "cannot list '%s.data': %s\n",
			       r->hash, why);
	mtc_manifest_free(&m);
	res = respond(r, c, MHD_HTTP_OK, "application/json", "%s", text);
	free(text);
	return res;
}

/* ---- writes ---- */

/*
 * A range of a one-file object's session, "Content-Range: bytes A-B/N": A
 * and, but for the file's last range, the length whole units (peer_wire.h),
 * N the session's size. Its bytes go into their place in the staging file,
 * hashed as they pass; the piece is counted by the caller.
 */
static enum MHD_Result start_range(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	long long n = r->sess->file_size, a, b, len;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_RANGE);
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	struct mtc_wire_entry *w;
	int end = 0, e;

	if (!h || sscanf(h, "bytes %lld-%lld/%lld%n", &a, &b, &len, &end) != 3 || h[end] || a < 0 ||
	    b < a || b >= n || len != n || a % MTC_WIRE_UNIT ||
	    (b + 1 < n && (b + 1 - a) % MTC_WIRE_UNIT) || (cl && strtoll(cl, NULL, 10) != b - a + 1)) {
		piece_done(r, "a range that is not 'Content-Range: bytes A-B/N' on whole units");
		return respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT,
			       "'%s': a range is 'Content-Range: bytes A-B/%lld', A and its length whole "
			       "units of %d bytes but for the last, its body that long\n",
			       r->name, n, MTC_WIRE_UNIT);
	}
	/* its own descriptor at the range's place: the body is written as a whole file's is */
	if ((r->fd = open(r->sess->obj, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    lseek(r->fd, (off_t)a, SEEK_SET) < 0) {
		e = errno;
		if (r->fd >= 0)
			close(r->fd);
		r->fd = -1;
		piece_done(r, "the staging file is gone");
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot stage '%s': %s\n",
			       r->name, strerror(e));
	}
	r->kind = REQ_PUT_RANGE;
	r->limit = b - a + 1;
	r->transfer = 1;
	atomic_fetch_add(&s->active, 1);
	w = mtc_wire_list_add(&r->got, "", 0, b - a + 1);
	w->off = a;
	w->file_size = n;
	mtc_wire_hash_start(&r->range_hash, w);
	return MHD_YES;
}

static enum MHD_Result finish_range(struct req *r, struct MHD_Connection *c)
{
	char why[512];
	unsigned code = MHD_HTTP_OK;

	mtc_wire_hash_end(&r->range_hash);
	if (r->fail_code) {
		code = (unsigned)r->fail_code;
		snprintf(why, sizeof why, "%s", r->why);
	} else if (r->bytes != r->limit) {
		code = MHD_HTTP_BAD_REQUEST;
		snprintf(why, sizeof why, "a range of %lld bytes of '%s' brought %lld", r->limit,
			 r->name, r->bytes);
	}
	if (code != MHD_HTTP_OK) {
		atomic_fetch_add(&r->s->rejected, 1);
		mtc_warn("%s", why);
		piece_done(r, why);
	} else {
		piece_done(r, NULL);
		snprintf(why, sizeof why, "range of '%s' received", r->name);
	}
	remove_staging(r);
	return respond(r, c, code, TEXT, "%s\n", why);
}

/* Starts extracting a tar body into r->sess (its piece is counted by the caller when listed). */
static enum MHD_Result start_piece(struct req *r, struct MHD_Connection *c)
{
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	r->limit = body_limit(r->s);
	if (cl && strtoll(cl, NULL, 10) > r->limit)
		return respond(r, c, HTTP_TOO_LARGE, TEXT,
			       "'%s': a body of %s bytes is over the limit of %lld (--max-body or the "
			       "local dir's free space)\n", r->name, cl, r->limit);

	r->kind = REQ_PUT_TREE;
	r->transfer = 1;
	atomic_fetch_add(&r->s->active, 1);
	if (up && !strcasecmp(up, UPGRADE)) {
		r->kind = REQ_PUT_TREE_SOCK;
		return MHD_YES;
	}
	r->extract_why = xcalloc(1, EXTRACT_WHY);
	if (pthread_create(&r->extractor, NULL, extract_main, r)) {
		remove_staging(r);
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT,
			       "cannot receive '%s': out of threads\n", r->name);
	}
	r->extracting = 1;
	return MHD_YES;
}

static enum MHD_Result begin_put(struct req *r, struct MHD_Connection *c, enum req_kind kind)
{
	int is_data = kind == REQ_PUT_FILE;
	struct mtc_peer_server *s = r->s;
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	char *path = xasprintf("%s/%s", s->dir, r->name);
	struct stat st;
	int present = lstat(path, &st) == 0;

	free(path);
	if (is_data && present) {
		atomic_fetch_add(&s->already_present, 1);
		return respond(r, c, MHD_HTTP_OK, TEXT, "'%s' is already present\n", r->name);
	}
	r->limit = is_data ? body_limit(s) : kind == REQ_PUT_MANIFEST ? MTC_MANIFEST_BODY_MAX
								     : META_BODY_MAX;
	if (cl && strtoll(cl, NULL, 10) > r->limit)
		return respond(r, c, HTTP_TOO_LARGE, TEXT,
			       "'%s': a body of %s bytes is over the limit of %lld%s\n", r->name, cl,
			       r->limit, is_data ? " (--max-body or the local dir's free space)" : "");
	if (kind == REQ_PUT_META) {
		r->kind = kind;
		return MHD_YES;
	}
	if (is_data && mtc_is_dir_hash(r->hash)) {
		unsigned code;
		char why[1024];
		if (!(r->sess = session_new(s, r->hash, 0, &code, why, sizeof why)))
			return respond(r, c, code, TEXT, "'%s': %s\n", r->name, why);
		return start_piece(r, c);
	}
	if (mtc_tmp_create(s->dir, "upload", 1, &r->staging) < 0)
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot stage '%s': %s\n",
			       r->name, strerror(errno));
	r->obj = xasprintf("%s/obj", r->staging.path);
	r->kind = kind;
	if (is_data) {
		r->transfer = 1;
		atomic_fetch_add(&s->active, 1);
		r->file_hash = xmalloc(sizeof *r->file_hash);
		mtc_blake3_init(r->file_hash);
	}
	r->fd = open(r->obj, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (r->fd < 0) {
		int e = errno;
		remove_staging(r);
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot stage '%s': %s\n",
			       r->name, strerror(e));
	}
	return MHD_YES;
}

/*
 * A body that trickles in holds a connection (and a staging dir) for as long
 * as it likes under an idle timeout alone: after a grace (the idle timeout,
 * at most MIN_RATE_GRACE_S) a body slower on average than min_rate is cut.
 */
#define MIN_RATE_GRACE_S 30

static int too_slow(struct req *r)
{
	const struct mtc_peer_server_opts *o = &r->s->o;
	double t = mtc_now() - r->t0, grace = o->timeout_s < MIN_RATE_GRACE_S ? o->timeout_s
									   : MIN_RATE_GRACE_S;
	return o->min_rate > 0 && t > grace && (double)r->bytes < (double)o->min_rate * t;
}

static enum MHD_Result receive(struct req *r, const char *data, size_t len)
{
	struct mtc_peer_server *s = r->s;

	r->bytes += (long long)len;
	atomic_fetch_add(&s->bytes_in, (long long)len);
	if (too_slow(r)) {
		mtc_warn("'%s': %lld bytes in %.0f s, slower than %lld bytes/s: connection closed",
			 r->name[0] ? r->name : "a request body", r->bytes, mtc_now() - r->t0,
			 s->o.min_rate);
		return MHD_NO;
	}
	if (r->kind == REQ_ROUTE) {
		return mtc_buf_append(&r->body, data, len) < 0 ? MHD_NO : MHD_YES;
	}
	if (r->kind == REQ_PUT_TREE_SOCK)
		return MHD_NO; /* the stream follows the 101, not a body */
	if (r->kind == REQ_PUT_META) {
		if (r->meta_len + len > META_BODY_MAX)
			return MHD_NO;
		memcpy(r->meta + r->meta_len, data, len);
		r->meta_len += len;
		return MHD_YES;
	}
	if (r->bytes > r->limit) {
		mtc_warn("'%s': upload over %lld bytes%s, connection closed", r->name, r->limit,
			 r->kind == REQ_PUT_MANIFEST ? "" : " (--max-body or the local dir's free space)");
		return MHD_NO;
	}
	if (r->fail_code)
		return MHD_YES;
	if (r->kind == REQ_PUT_TREE) {
		if (r->extracting)
			mtc_ring_offer(&r->ring, data, len);
		return MHD_YES;
	}
	if (r->fd < 0)
		return MHD_YES;
	if (mtc_write_all(r->fd, data, len) < 0) {
		r->fail_code = MHD_HTTP_INSUFFICIENT_STORAGE;
		r->why = xasprintf("cannot write '%s': %s", r->name, strerror(errno));
		close(r->fd);
		r->fd = -1;
		return MHD_YES;
	}
	if (r->file_hash)
		mtc_blake3_update(r->file_hash, data, len);
	else if (r->kind == REQ_PUT_RANGE)
		mtc_wire_hash_update(&r->range_hash, data, len);
	return MHD_YES;
}

static enum MHD_Result finish_meta(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	char *data, *path, old[MTC_HASH_MAX + 1];
	int rc;

	r->meta[r->meta_len] = '\0';
	if (r->meta_len && r->meta[r->meta_len - 1] == '\n')
		r->meta[--r->meta_len] = '\0';
	if (!mtc_is_hash(r->meta))
		return respond(r, c, HTTP_UNPROCESSABLE, TEXT,
			       "'%s': content is not a hash\n", r->name);
	data = xasprintf("%s/%s.data", s->dir, r->meta);
	rc = access(data, F_OK);
	free(data);
	if (rc < 0)
		return respond(r, c, MHD_HTTP_CONFLICT, TEXT, "'%s': data '%s.data' is not present\n",
			       r->name, r->meta);
	path = xasprintf("%s/%s", s->dir, r->name);
	if (mtc_read_meta(path, old) == 0 && !strcmp(old, r->meta)) {
		free(path);
		return respond(r, c, MHD_HTTP_OK, TEXT, "'%s' is already present\n", r->name);
	}
	rc = mtc_write_atomic(path, r->meta, r->meta_len);
	free(path);
	if (rc < 0)
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot write '%s': %s\n",
			       r->name, strerror(errno));
	mtc_info("received '%s'", r->name);
	return respond(r, c, MHD_HTTP_CREATED, TEXT, "'%s' stored\n", r->name);
}

/*
 * A manifest's body was spooled to its staging file as it arrived, so six
 * of them in flight cost disk, not memory; it is read back and parsed under
 * manifest_enter (one at a time), then renamed to its pending name.
 */
static enum MHD_Result finish_manifest(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	struct mtc_wire_limits lim = server_limits(s);
	struct mtc_manifest m;
	char why[1024], *path;
	int rc;

	if (r->fail_code || r->fd < 0 || fsync(r->fd) < 0)
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "%s\n",
			       r->fail_code ? r->why : "cannot stage the manifest");
	if (!manifest_enter(s))
		return respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
			       "'%s': busy checking other manifests; retry\n", r->name);
	rc = parse_manifest(r->obj, r->hash, &lim, &m, why, sizeof why);
	if (rc > 0)
		snprintf(why, sizeof why, "cannot read it back: %s", strerror(errno));
	if (rc == 0) {
		mtc_manifest_free(&m);
		malloc_trim(0);
	}
	manifest_leave(s);
	if (rc) {
		mtc_warn("'%s' rejected: %s", r->name, why);
		return respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s' rejected: %s\n", r->name, why);
	}
	path = xasprintf("%s/%s.data", s->dir, r->hash);
	rc = access(path, F_OK);
	free(path);
	if (rc == 0)
		return respond(r, c, MHD_HTTP_OK, TEXT, "'%s.data' is already present\n", r->hash);
	path = xasprintf("%s/" MTC_PENDING_MANIFEST "%s", s->dir, r->hash);
	rc = rename(r->obj, path);
	free(path);
	if (rc < 0 || mtc_fsync_dir(s->dir) < 0)
		return respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot keep '%s': %s\n",
			       r->name, strerror(errno));
	return respond(r, c, MHD_HTTP_CREATED, TEXT, "'%s' stored\n", r->name);
}

/* The outcome of an extracted tree or piece (rc, why from the extractor): the HTTP code, with why. */
static unsigned tree_outcome(struct req *r, int rc, const char *xwhy, char *err, size_t errlen)
{
	struct mtc_peer_server *s = r->s;
	unsigned code;

	if (rc < 0) {
		atomic_fetch_add(&s->rejected, 1);
		if (rc == -2)
			atomic_fetch_add(&s->digest_failures, 1);
		snprintf(err, errlen, "'%s' rejected: %s", r->name, xwhy);
		mtc_warn("%s", err);
		if (r->piece)
			piece_done(r, xwhy);
		remove_staging(r);
		return HTTP_UNPROCESSABLE;
	}
	mtc_debug("'%s': received and hashed in %.3f s", r->name, mtc_now() - r->t0);
	if (r->piece) {
		piece_done(r, NULL);
		remove_staging(r);
		snprintf(err, errlen, "piece of '%s' received", r->name);
		return MHD_HTTP_OK;
	}
	r->sess->got = r->got;
	memset(&r->got, 0, sizeof r->got);
	code = publish_tree(s, r->sess, err, errlen);
	atomic_fetch_add(code == MHD_HTTP_CREATED ? &s->published
			 : code == MHD_HTTP_OK	  ? &s->already_present
						  : &s->rejected,
			 1);
	if (code == MHD_HTTP_CREATED)
		mtc_info("received '%s' (%lld bytes)", r->name, r->bytes);
	else if (code != MHD_HTTP_OK)
		mtc_warn("%s", err);
	remove_staging(r);
	return code;
}

static enum MHD_Result finish_tree(struct req *r, struct MHD_Connection *c)
{
	char why[1024];
	unsigned code;

	end_extraction(r);
	code = tree_outcome(r, r->extract_rc, r->extract_why, why, sizeof why);
	return respond(r, c, code, TEXT, "%s\n", why);
}

/* Writes all of buf to the upgraded socket, within the idle timeout. */
static void sock_send(struct mtc_peer_server *s, int sock, const char *buf, size_t len)
{
	while (len) {
		struct pollfd p = { .fd = sock, .events = POLLOUT };
		ssize_t n = send(sock, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
			return;
		} else if (n < 0 && errno == EAGAIN && poll(&p, 1, s->o.timeout_s * 1000) <= 0) {
			return;
		}
	}
}

/*
 * After an answer that cut the stream short: reads and drops what the
 * client still sends (for a few seconds at most), so that closing does
 * not reset the connection before the client has read the answer.
 */
static void drain(int sock)
{
	double end = mtc_now() + 5;
	char buf[65536];

	shutdown(sock, SHUT_WR);
	while (mtc_now() < end) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		ssize_t n;
		if (poll(&p, 1, 250) < 0 && errno != EINTR)
			return;
		n = recv(sock, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

/* After a GET's 101: the stream by sendfile, then the connection closes. */
static void send_tree(struct req *r, int sock)
{
	struct mtc_http_call p = { .body = r->send, .deadline = mtc_now() + 1e9,
				   .stall_s = r->s->o.timeout_s,
				   .stop = (const int *)&r->s->stopping };
	char why[512];
	int rc = mtc_http_send_body(&p, sock, why, sizeof why);

	r->bytes = p.sent;
	atomic_fetch_add(&r->s->bytes_out, p.sent);
	if (rc)
		mtc_warn("sending '%s': %s", r->name,
			 rc == 1 ? "the client went away" : why);
}

/*
 * After the 101: the tree (or piece) arrives on the socket itself and is
 * extracted from it (mtc_wire_extract_sock); the answer is written
 * on the socket as an HTTP response, then the connection is closed.
 * Runs in the connection's own thread; r stays owned by MHD's request
 * (completed() frees it once the connection is closed).
 */
static void upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
		     size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct req *r = con_cls;
	struct mtc_peer_server *s = r->s;
	struct mtc_wire_limits lim = server_limits(s);
	char xwhy[512], why[1024], *answer;
	long long consumed = 0;
	unsigned code;
	int rc;

	if (r->kind == REQ_GET_TREE_SOCK) {
		send_tree(r, sock);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		return;
	}
	rc = mtc_wire_extract_sock(sock, extra_in, extra_in_size, s->o.timeout_s,
				   (const int *)&s->stopping, r->sess->obj, &lim, &r->sess->exp->m,
				   &r->got, &consumed, xwhy, sizeof xwhy);
	r->bytes = consumed;
	atomic_fetch_add(&s->bytes_in, consumed);
	code = tree_outcome(r, rc, xwhy, why, sizeof why);
	answer = xasprintf("HTTP/1.1 %u %s\r\nServer: mtc-replicate\r\nContent-Type: " TEXT
			   "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
			   code, MHD_get_reason_phrase_for(code), strlen(why) + 1, why);
	atomic_fetch_add(&s->codes[code < 600 ? code : 0], 1);
	atomic_fetch_add(&s->bytes_out, (long long)strlen(why) + 1);
	sock_send(s, sock, answer, strlen(answer));
	free(answer);
	if (code >= 300)
		drain(sock);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

static enum MHD_Result start_upgrade(struct req *r, struct MHD_Connection *c)
{
	struct MHD_Response *resp = MHD_create_response_for_upgrade(upgraded, NULL);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, UPGRADE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
	return queue(r, c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

static enum MHD_Result finish_data(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	char why[1024];
	unsigned code;
	int rc;

	if (r->kind == REQ_PUT_TREE)
		return finish_tree(r, c);
	if (r->fd >= 0) { /* made durable when it is published (object.h) */
		close(r->fd);
		r->fd = -1;
	}
	if (r->fail_code) {
		atomic_fetch_add(&s->rejected, 1);
		mtc_warn("%s", r->why);
		code = (unsigned)r->fail_code;
		remove_staging(r);
		return respond(r, c, code, TEXT, "%s\n", r->why);
	}
	{
		uint8_t h[MTC_BLAKE3_OUT_LEN];
		mtc_blake3_final(r->file_hash, h, sizeof h);
		mtc_hex(h, sizeof h, r->got_digest);
	}
	mtc_debug("'%s': received and hashed in %.3f s", r->name, mtc_now() - r->t0);
	if (strcmp(r->got_digest, r->hash)) {
		atomic_fetch_add(&s->rejected, 1);
		atomic_fetch_add(&s->digest_failures, 1);
		snprintf(why, sizeof why, "digest is %s, expected %s", r->got_digest, r->hash);
		mtc_warn("'%s' rejected: %s", r->name, why);
		remove_staging(r);
		return respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s' rejected: %s\n", r->name, why);
	}
	if (atomic_load(&s->stopping)) {
		remove_staging(r);
		return respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, "shutting down\n");
	}
	rc = mtc_object_publish(r->obj, s->dir, r->hash, NULL);
	if (rc < 0) {
		code = publish_failure(r->name, why, sizeof why);
		remove_staging(r);
		return respond(r, c, code, TEXT, "%s\n", why);
	}
	mtc_histogram_observe(&s->seconds, mtc_now() - r->t0);
	remove_staging(r);
	if (rc > 0) {
		atomic_fetch_add(&s->already_present, 1);
		return respond(r, c, MHD_HTTP_OK, TEXT, "'%s' is already present\n", r->name);
	}
	atomic_fetch_add(&s->published, 1);
	mtc_info("received '%s' (%lld bytes)", r->name, r->bytes);
	return respond(r, c, MHD_HTTP_CREATED, TEXT, "'%s' stored\n", r->name);
}

/* ---- upload sessions ---- */

/* Drops idle sessions; the caller holds sessions_mu. */
static void reap_sessions(struct mtc_peer_server *s)
{
	double now = mtc_now();
	for (struct session **p = &s->sessions; *p;) {
		struct session *x = *p;
		if (x->pieces == 0 && now - x->last > s->o.session_timeout_s) {
			*p = x->next;
			mtc_warn("upload of '%s.data' abandoned: no activity for %d s", x->hash,
				 s->o.session_timeout_s);
			session_free(s, x);
		} else {
			p = &x->next;
		}
	}
}

/* The listed session id, unlisted when take; NULL if none. The caller holds sessions_mu. */
static struct session *find_session(struct mtc_peer_server *s, const char *id, int take)
{
	for (struct session **p = &s->sessions; *p; p = &(*p)->next)
		if (!strcmp((*p)->id, id)) {
			struct session *x = *p;
			if (take)
				*p = x->next;
			return x;
		}
	return NULL;
}

/* Open upload sessions (each with its staging dir) at most: beyond, 503 and Retry-After. */
#define MAX_SESSIONS 32

static int count_sessions(struct mtc_peer_server *s)
{
	int n = 0;
	pthread_mutex_lock(&s->sessions_mu);
	reap_sessions(s);
	for (struct session *x = s->sessions; x; x = x->next)
		n++;
	pthread_mutex_unlock(&s->sessions_mu);
	return n;
}

/* ?size=N of a one-file object's session: N, or -1 when absent or not a positive integer. */
static long long file_size_arg(struct MHD_Connection *c)
{
	long long n;
	if (mtc_parse_uint(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "size"), &n) < 0)
		return -1;
	return n > 0 ? n : -1;
}

static enum MHD_Result open_session(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	unsigned char rnd[16];
	char why[1024], *path = xasprintf("%s/%s", s->dir, r->name);
	struct session *x;
	unsigned code;
	long long size = 0;
	int present = access(path, F_OK) == 0;

	free(path);
	if (present)
		return respond(r, c, MHD_HTTP_OK, "application/json", "{\"present\":true}\n");
	if (!mtc_is_dir_hash(r->hash) && (size = file_size_arg(c)) <= 0)
		return respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT,
			       "'%s': a file's upload session takes its size (?size=N); or PUT it whole\n",
			       r->name);
	if (size > body_limit(s))
		return respond(r, c, HTTP_TOO_LARGE, TEXT,
			       "'%s': %lld bytes are over the limit of %lld (--max-body or the local "
			       "dir's free space)\n", r->name, size, body_limit(s));
	if (count_sessions(s) >= MAX_SESSIONS)
		return respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
			       "'%s': %d uploads open already; retry\n", r->name, MAX_SESSIONS);
	if (!(x = session_new(s, r->hash, size, &code, why, sizeof why)))
		return respond(r, c, code, TEXT, "'%s': %s\n", r->name, why);
	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
		session_free(s, x);
		return respond(r, c, 500, TEXT, "no randomness for a session id\n");
	}
	mtc_hex(rnd, sizeof rnd, x->id);
	pthread_mutex_lock(&s->sessions_mu);
	reap_sessions(s);
	x->next = s->sessions;
	s->sessions = x;
	pthread_mutex_unlock(&s->sessions_mu);
	return respond(r, c, MHD_HTTP_CREATED, "application/json",
		       "{\"session\":\"%s\",\"ranges\":true}\n", x->id);
}

/* /v1/uploads/ID/PIECE (PUT), /v1/uploads/ID/commit (POST), /v1/uploads/ID (DELETE) */
static enum MHD_Result session_request(struct req *r, struct MHD_Connection *c, const char *rest,
				       const char *method)
{
	struct mtc_peer_server *s = r->s;
	char id[33], why[1024];
	const char *slash = strchr(rest, '/');
	size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
	int put = !strcmp(method, "PUT"), del = !strcmp(method, "DELETE"),
	    commit = !strcmp(method, "POST") && slash && !strcmp(slash, "/commit");
	struct session *x;
	unsigned code;

	if (idlen != 32 || (!put && !del && !commit) || (put && (!slash || !slash[1])) ||
	    (del && slash))
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "no such endpoint\n");
	memcpy(id, rest, 32);
	id[32] = '\0';
	pthread_mutex_lock(&s->sessions_mu);
	reap_sessions(s);
	x = find_session(s, id, 0);
	if (x && (del || commit) && x->pieces) {
		pthread_mutex_unlock(&s->sessions_mu);
		return respond(r, c, MHD_HTTP_CONFLICT, TEXT, "upload %s: pieces still arriving\n", id);
	}
	if (x && put && !x->failed) {
		x->pieces++;
		x->last = mtc_now();
	} else if (x && !put) {
		find_session(s, id, 1);
	}
	pthread_mutex_unlock(&s->sessions_mu);
	if (!x)
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "no upload %s (expired?)\n", id);
	snprintf(r->name, sizeof r->name, "%s.data", x->hash);
	if (put && x->failed)
		return respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s' rejected: %s\n", r->name, x->why);
	if (put) {
		r->sess = x;
		r->piece = 1;
		return x->file_size ? start_range(r, c) : start_piece(r, c);
	}
	if (del) {
		session_free(s, x);
		return respond(r, c, MHD_HTTP_OK, TEXT, "upload %s discarded\n", id);
	}
	code = x->file_size ? publish_file(s, x, why, sizeof why) : publish_tree(s, x, why, sizeof why);
	atomic_fetch_add(code == MHD_HTTP_CREATED ? &s->published
			 : code == MHD_HTTP_OK	  ? &s->already_present
						  : &s->rejected,
			 1);
	if (code == MHD_HTTP_CREATED)
		mtc_info("received '%s'", r->name);
	else if (code != MHD_HTTP_OK)
		mtc_warn("%s", why);
	session_free(s, x);
	return respond(r, c, code, TEXT, "%s\n", why);
}

/* ---- the connection guard ---- */

/*
 * No lockout (mtc(7) §4): a connection is unauthenticated from its accept
 * until a request head with a valid token arrives on it (any whole head when
 * the daemon has no token). At most max_unauth of them are open: one more
 * cuts the oldest one not being answered, once that one has had
 * MTC_GUARD_BURST_S to send its head (a burst of younger ones may reach
 * twice the limit first; a flood must open twice max_unauth connections in
 * that second to cut a client that has just connected). An unauthenticated connection has head_timeout_s from its
 * accept (or its last answer) to the end of its next request head, however
 * slowly the head trickles in. The library refuses a connection beyond
 * max_conns_per_ip from one address or max_connections in all. So a flood
 * of half-open connections holds at most max_unauth slots, each for at most
 * head_timeout_s, and /healthz and the peers find room meanwhile.
 */
#define GUARD_TICK_NS 250000000L
#define GUARD_WARN_S 60

/* In s->conns, oldest first, while unauthenticated: the guard walks only those. */
struct conn {
	TAILQ_ENTRY(conn) link;
	int fd;
	int authed, in_request, cut;
	int client_cert; /* TLS: the client's certificate checked out against ca.crt */
	double since; /* accept, or the last answer */
};

/* Under conns_mu. */
static void conn_cut(struct mtc_peer_server *s, struct conn *k, atomic_llong *counter)
{
	if (k->fd >= 0)
		shutdown(k->fd, SHUT_RDWR);
	k->cut = 1;
	if (!k->authed)
		s->unauth--;
	atomic_fetch_add(counter, 1);
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct mtc_peer_server *s = cls;
	struct conn *k = *socket_context, *old;

	pthread_mutex_lock(&s->conns_mu);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = xcalloc(1, sizeof *k);
		atomic_fetch_add(&s->conns_opened, 1);
		atomic_fetch_add(&s->conns_open, 1);
		k->fd = ci ? ci->connect_fd : -1;
		k->since = mtc_now();
		if (k->fd >= 0 && (size_t)k->fd < s->tls_client_cap) {
			k->client_cert = s->tls_client[k->fd] == 2;
			s->tls_client[k->fd] = 0;
		}
		TAILQ_INSERT_TAIL(&s->conns, k, link);
		*socket_context = k;
		if (++s->unauth > s->o.max_unauth && s->o.max_unauth > 0) {
			for (old = TAILQ_FIRST(&s->conns); old->authed || old->cut || old->in_request;)
				old = TAILQ_NEXT(old, link); /* k itself at the latest */
			if (mtc_guard_cuts(k->since - old->since, s->unauth, s->o.max_unauth)) {
				mtc_debug("%d unauthenticated connections: cutting the oldest",
					  s->unauth);
				conn_cut(s, old, &s->cut_unauth);
			}
		}
	} else if (k) {
		atomic_fetch_sub(&s->conns_open, 1);
		if (!k->authed) {
			if (!k->cut)
				s->unauth--;
			TAILQ_REMOVE(&s->conns, k, link);
		}
		free(k);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->conns_mu);
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static int client_cert(struct mtc_peer_server *s, struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);
	int ok;

	pthread_mutex_lock(&s->conns_mu);
	ok = k && k->client_cert;
	pthread_mutex_unlock(&s->conns_mu);
	return ok;
}

/* A whole request head arrived on c; trusted: with a valid token (or none needed). */
static void conn_head(struct mtc_peer_server *s, struct MHD_Connection *c, int trusted)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&s->conns_mu);
	k->in_request = 1;
	if (trusted && !k->authed) {
		k->authed = 1;
		if (!k->cut)
			s->unauth--;
		TAILQ_REMOVE(&s->conns, k, link);
	}
	pthread_mutex_unlock(&s->conns_mu);
}

/* c answered its request: the next head's deadline starts now. */
static void conn_answered(struct mtc_peer_server *s, struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&s->conns_mu);
	k->in_request = 0;
	k->since = mtc_now();
	pthread_mutex_unlock(&s->conns_mu);
}

/* Cuts unauthenticated connections past the head deadline; warns of cuts now and then. */
static void *guard_main(void *arg)
{
	struct mtc_peer_server *s = arg;
	long long warned = 0;
	double warned_at = 0;

	pthread_mutex_lock(&s->conns_mu);
	while (!s->guard_stop) {
		struct timespec until;
		double now;
		long long cuts;

		until = mtc_wall_after(GUARD_TICK_NS / 1e9);
		pthread_cond_timedwait(&s->conns_cv, &s->conns_mu, &until);
		now = mtc_now();
		for (struct conn *k = TAILQ_FIRST(&s->conns); k && s->o.head_timeout_s > 0;
		     k = TAILQ_NEXT(k, link))
			if (!k->authed && !k->cut && !k->in_request &&
			    now - k->since > s->o.head_timeout_s)
				conn_cut(s, k, &s->cut_head);
		cuts = atomic_load(&s->cut_unauth) + atomic_load(&s->cut_head);
		if (cuts > warned && now - warned_at >= GUARD_WARN_S) {
			mtc_warn("cut %lld unauthenticated connections so far (%lld beyond --max-unauth, "
				 "%lld past --head-timeout): a client opens connections and sends no "
				 "valid request",
				 cuts, (long long)atomic_load(&s->cut_unauth),
				 (long long)atomic_load(&s->cut_head));
			warned = cuts;
			warned_at = now;
		}
	}
	pthread_mutex_unlock(&s->conns_mu);
	return NULL;
}

/* ---- routing ---- */

/* A coordinator request: its endpoint and declared size are judged before any body is read. */
static enum MHD_Result admit_route(struct req *r, struct MHD_Connection *c, const char *url,
				   const char *method)
{
	struct mtc_peer_server *s = r->s;
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	size_t max = ROUTE_BODY_MAX;
	char why[256] = "";
	int code = s->o.route_admit ? s->o.route_admit(s->o.route_arg, method, url, &max, why,
						       sizeof why)
				    : 0;

	if (max > ROUTE_BODY_MAX)
		max = ROUTE_BODY_MAX;
	if (!code && cl && strtoull(cl, NULL, 10) > max) {
		code = MHD_HTTP_CONTENT_TOO_LARGE;
		snprintf(why, sizeof why, "a body of %s bytes; this endpoint takes at most %zu", cl,
			 max);
	}
	if (!code) {
		long long want = cl ? (long long)strtoull(cl, NULL, 10) : (long long)max,
			  held = atomic_load(&s->route_held);
		do {
			if (held > 0 && held + want > ROUTE_HELD_MAX) {
				code = MHD_HTTP_SERVICE_UNAVAILABLE;
				snprintf(why, sizeof why, "too many reports arriving at once: retry");
				break;
			}
		} while (!atomic_compare_exchange_weak(&s->route_held, &held, held + want));
		if (!code)
			r->held = want;
		if (cl && (size_t)want < max)
			max = (size_t)want;
	}
	if (code)
		return respond(r, c, (unsigned)code, "application/json",
			       "{\"status\":\"error\",\"error\":\"%s\"}\n", why);
	r->kind = REQ_ROUTE;
	mtc_buf_init(&r->body, max);
	if (cl)
		mtc_buf_reserve(&r->body, max); /* its Content-Length: no copy as it grows */
	r->url = xstrdup(url);
	r->method = xstrdup(method);
	return MHD_YES;
}

/*
 * 1 with a 403 queued in *rc when the request's credential may not write for
 * rank of job (rank -1: data, for no rank in particular; peer_auth.h).
 */
static int refused_writer(struct req *r, struct MHD_Connection *c, const char *job, int rank,
			  enum MHD_Result *rc)
{
	char why[384];
	if (!mtc_cred_may_write(&r->who, r->s->o.strict_ranks, job, rank, why, sizeof why))
		return 0;
	if (mtc_peer_auth_first_refusal(r->s->auth, rank >= 0 ? rank : r->who.rank))
		mtc_warn("refused '%s': %s", r->name[0] ? r->name : "an upload", why);
	*rc = respond(r, c, MHD_HTTP_FORBIDDEN, TEXT, "%s\n", why);
	return 1;
}

static enum MHD_Result route(struct req *r, struct MHD_Connection *c, const char *url,
			     const char *method)
{
	struct mtc_peer_server *s = r->s;
	int get = !strcmp(method, "GET"), head = !strcmp(method, "HEAD"),
	    put = !strcmp(method, "PUT");
	struct mtc_ckpt_name n;
	const char *name;
	char *path;
	enum req_kind kind;
	enum MHD_Result rc;

	/* Probes and metrics are read without the token (kubelet, Prometheus): they say nothing of the data. */
	if (!strcmp(url, "/healthz") && (get || head))
		return respond(r, c, MHD_HTTP_OK, TEXT, "ok\n");
	if (!strcmp(url, "/readyz") && (get || head))
		return !s->o.ready_file || access(s->o.ready_file, F_OK) == 0
			       ? respond(r, c, MHD_HTTP_OK, TEXT, "ready\n")
			       : respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
					 "not ready: waiting for the training job or the restore\n");
	if (!strcmp(url, "/metrics") && get)
		return get_metrics(r, c);
	if (s->tls && !client_cert(s, c))
		return respond(r, c, MHD_HTTP_FORBIDDEN, TEXT,
			       "mutual TLS: this needs a client certificate signed by the job's CA\n");
	if (!authorized(s, c, &r->who))
		return respond(r, c, MHD_HTTP_UNAUTHORIZED, TEXT, "missing or wrong bearer token\n");
	conn_head(s, c, 1);
	if (s->o.route && !strncmp(url, s->o.route_prefix, strlen(s->o.route_prefix)))
		return admit_route(r, c, url, method);
	if (!strcmp(url, "/v1/inventory") && get)
		return get_inventory(r, c);
	if (!strncmp(url, UPLOADS, strlen(UPLOADS))) {
		name = url + strlen(UPLOADS);
		if (!get && !head && refused_writer(r, c, NULL, -1, &rc))
			return rc;
		if (strcmp(method, "POST") || mtc_parse_data_name(name, r->hash))
			return session_request(r, c, name, method);
		snprintf(r->name, sizeof r->name, "%s", name);
		return open_session(r, c);
	}
	if (strncmp(url, OBJECTS, strlen(OBJECTS)))
		return respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "no such endpoint\n");
	name = url + strlen(OBJECTS);
	if (strlen(name) >= sizeof r->name)
		return respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT, "name too long\n");
	if (!mtc_parse_data_name(name, r->hash))
		kind = REQ_PUT_FILE;
	else if (!mtc_parse_ckpt_name(name, &n) && n.ext == MTC_EXT_META)
		kind = REQ_PUT_META;
	else if (manifest_name(name, r->hash) == 0)
		kind = REQ_PUT_MANIFEST;
	else
		return respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT,
			       "name is neither <hash>.data, <hash>.manifest nor "
			       "<job>-s<step>-n<rank>-w<worker>.meta (a job name is UTF-8 text, "
			       "not starting with '.')\n");
	snprintf(r->name, sizeof r->name, "%s", name);
	if (put && refused_writer(r, c, kind == REQ_PUT_META ? n.job : NULL,
				  kind == REQ_PUT_META ? n.rank : -1, &rc))
		return rc;
	if (put)
		return begin_put(r, c, kind);
	if (!get && !head)
		return respond(r, c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT, "method not allowed\n");
	if (kind == REQ_PUT_MANIFEST)
		return get_manifest(r, c, head);
	path = xasprintf("%s/%s", s->dir, name);
	rc = kind == REQ_PUT_FILE ? get_data(r, c, path, head) : get_meta(r, c, path, head);
	free(path);
	return rc;
}

/* A route's body is parsed or gone: its bytes no longer count (ROUTE_HELD_MAX). */
static void route_release(struct req *r)
{
	mtc_buf_free(&r->body);
	atomic_fetch_sub(&r->s->route_held, r->held);
	r->held = 0;
}

/* Called by the route under its lock: resumes the connection once it is suspended. */
static void route_wake(void *arg)
{
	struct req *r = arg;

	pthread_mutex_lock(&r->s->wake_mu);
	r->woken = 1;
	if (r->suspended) {
		r->suspended = 0;
		mtc_mhd_loop_resume(r->s->events_loop, r->conn); /* only the events daemon suspends */
	}
	pthread_mutex_unlock(&r->s->wake_mu);
}

/*
 * A route's answer. On the events daemon a report that waits for its round
 * suspends its connection until it is woken; this runs again on resume.
 */
static enum MHD_Result finish_route(struct req *r, struct MHD_Connection *c, int events)
{
	struct mtc_peer_server *s = r->s;
	struct MHD_Response *resp;
	char *answer = NULL;
	int code, suspended = 0;

	if (r->wait) {
		code = s->o.route_collect(s->o.route_arg, r->wait, &answer);
		r->wait = NULL;
	} else if (events) {
		r->conn = c;
		code = s->o.route_start(s->o.route_arg, &r->who, r->method, r->url, r->body.p,
					r->body.len, &answer, route_wake, r, &r->wait);
		route_release(r); /* parsed: a waiting report holds no copy of it */
		if (code == 0) {
			pthread_mutex_lock(&s->wake_mu);
			if (!r->woken) {
				r->suspended = suspended = 1;
				MHD_suspend_connection(c);
			}
			pthread_mutex_unlock(&s->wake_mu);
			if (suspended)
				return MHD_YES;
			code = s->o.route_collect(s->o.route_arg, r->wait, &answer);
			r->wait = NULL;
		}
	} else {
		code = s->o.route(s->o.route_arg, &r->who, r->method, r->url, r->body.p, r->body.len,
				  &answer);
		route_release(r);
	}
	resp = MHD_create_response_from_buffer(answer ? strlen(answer) : 0,
					       answer ? answer : (void *)"",
					       answer ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	r->kind = REQ_OTHER;
	return queue(r, c, (unsigned)code, resp);
}

static int on_events(struct mtc_peer_server *s, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
	return s->events && ci && ci->daemon == s->events;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct req *r = *con_cls;
	char why[128];

	if (!r) {
		r = xcalloc(1, sizeof *r);
		r->s = cls;
		r->fd = -1;
		mtc_ring_init(&r->ring, 0);
		r->t0 = mtc_now();
		*con_cls = r;
		mtc_debug("%s %s", method, url);
		conn_head(r->s, c, 0);
		if (mtc_framing_check(c, why, sizeof why) < 0) {
			mtc_debug("refused %s %s: %s", method, url, why);
			r->close = 1; /* whatever follows on the connection is not a request */
			return respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT, "%s\n", why);
		}
		/* the events daemon's single thread must never block: it serves the routes alone */
		if (on_events(r->s, c) && (strcmp(method, "POST") ||
					   strncmp(url, r->s->o.route_prefix, strlen(r->s->o.route_prefix))))
			return respond(r, c, MHD_HTTP_MISDIRECTED_REQUEST, TEXT,
				       "this connection carries coordinator reports only: "
				       "open another one\n");
		return route(r, c, url, method);
	}
	if (*upload_data_size) {
		size_t len = *upload_data_size;
		*upload_data_size = 0;
		return receive(r, upload_data, len);
	}
	if (r->kind == REQ_ROUTE)
		return finish_route(r, c, on_events(r->s, c));
	if (r->kind == REQ_PUT_META)
		return finish_meta(r, c);
	if (r->kind == REQ_PUT_MANIFEST)
		return finish_manifest(r, c);
	if (r->kind == REQ_PUT_TREE_SOCK)
		return start_upgrade(r, c);
	if (r->kind == REQ_PUT_FILE || r->kind == REQ_PUT_TREE)
		return finish_data(r, c);
	if (r->kind == REQ_PUT_RANGE)
		return finish_range(r, c);
	return MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode why)
{
	struct req *r = *con_cls;

	conn_answered(cls, c);
	if (!r)
		return;
	if (r->staging.path && why != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		mtc_warn("'%s': upload abandoned after %lld bytes (%s)", r->name, r->bytes,
			 why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED	 ? "timeout"
			 : why == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "shutdown"
									 : "connection lost");
	if (r->wait) { /* its connection went before the answer */
		char *answer = NULL;
		r->s->o.route_collect(r->s->o.route_arg, r->wait, &answer);
		free(answer);
	}
	remove_staging(r);
	mtc_wire_reader_close(r->send);
	route_release(r);
	free(r->file_hash);
	free(r->why);
	free(r->extract_why);
	free(r->url);
	free(r->method);
	mtc_ring_free(&r->ring);
	free(r);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;
	if (mtc_log_level() < MTC_LOG_DEBUG)
		return;
	vsnprintf(line, sizeof line, fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ':'))
		line[--n] = '\0';
	mtc_debug("httpd: %s", line);
}

/* ---- lifecycle ---- */

static int parse_listen(const char *listen, struct sockaddr_storage *ss, char *err,
			size_t errlen)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*res;
	int rc;

	if (strlen(listen) >= sizeof host) {
		snprintf(err, errlen, "listen address '%s' too long", listen);
		return -1;
	}
	strcpy(host, listen);
	if (host[0] == '[') {
		char *close = strchr(host, ']');
		if (!close || close[1] != ':') {
			snprintf(err, errlen, "bad listen address '%s'", listen);
			return -1;
		}
		*close = '\0';
		port = close + 2;
		memmove(host, host + 1, strlen(host + 1) + 1);
	} else {
		if (!(port = strrchr(host, ':'))) {
			snprintf(err, errlen, "listen address '%s' has no port", listen);
			return -1;
		}
		*port++ = '\0';
	}
	rc = getaddrinfo(*host ? host : "0.0.0.0", port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "bad listen address '%s': %s", listen, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return 0;
}

static void log_leftover(const char *path, long long bytes, void *arg)
{
	mtc_info("removing leftover '%s' (%lld bytes)", path, bytes);
}

/* What a stopped daemon was receiving: pending manifests, and dead writers' temporaries. */
static void remove_leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, MTC_PENDING_MANIFEST, strlen(MTC_PENDING_MANIFEST))) {
			char *p = xasprintf("%s/%s", dir, e->d_name);
			mtc_info("removing leftover upload '%s'", p);
			unlink(p);
			free(p);
		}
	closedir(d);
	mtc_tmp_sweep(dir, 1, 1, log_leftover, NULL);
}

/* With TLS, the front hands over each client's plain end of its relay: MHD serves it as a connection. */
static void tls_hand_over(void *cls, int fd, const struct sockaddr *sa, socklen_t salen,
			  int verified)
{
	struct mtc_peer_server *s = cls;

	pthread_mutex_lock(&s->conns_mu);
	if ((size_t)fd >= s->tls_client_cap) {
		size_t cap = (size_t)fd * 2 + 64;
		s->tls_client = xrealloc(s->tls_client, cap);
		memset(s->tls_client + s->tls_client_cap, 0, cap - s->tls_client_cap);
		s->tls_client_cap = cap;
	}
	s->tls_client[fd] = verified ? 2 : 1;
	pthread_mutex_unlock(&s->conns_mu);
	if (MHD_add_connection(s->daemon, fd, sa, salen) != MHD_YES) { /* MHD closed fd */
		pthread_mutex_lock(&s->conns_mu);
		s->tls_client[fd] = 0;
		pthread_mutex_unlock(&s->conns_mu);
	}
}

/* A listening socket on ss, for the TLS front or the sorter; -1 with err. */
static int listen_on(const struct sockaddr_storage *ss, const char *listen_s, char *err,
		     size_t errlen)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return mtc_fail(err, errlen, "cannot listen on '%s': %s", listen_s, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
		mtc_fail(err, errlen, "cannot listen on '%s': %s", listen_s, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The sorter hands a connection to the events daemon or the main one; MHD closes fd on failure. */
static void sorted_hand_over(void *cls, int matched, int fd, const struct sockaddr *sa,
			     socklen_t salen)
{
	struct mtc_peer_server *s = cls;
	if (matched)
		mtc_mhd_loop_add(s->events_loop, fd, sa, salen);
	else
		MHD_add_connection(s->daemon, fd, sa, salen);
}

/* The events daemon and the sorter in front of both daemons, on fd; -1 with err. */
static int start_events(struct mtc_peer_server *s, int fd, int ipv6, char *err, size_t errlen)
{
	char prefix[80];
	const struct mtc_peer_server_opts *o = &s->o;
	struct mtc_sorter_opts so = { .listen_fd = fd, .prefix = prefix,
				      .max_pending = o->max_unauth,
				      .timeout_s = o->head_timeout_s > 0 ? o->head_timeout_s
									 : o->timeout_s,
				      .hand_over = sorted_hand_over, .cls = s,
				      .cut_pending = &s->cut_unauth, .cut_timeout = &s->cut_head };

	snprintf(prefix, sizeof prefix, "POST %s", o->route_prefix);
	s->events = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME |
			MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG |
			(ipv6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
		completed, s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)EVENTS_CONN_MEMORY,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->max_conns_per_ip,
		MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s, MHD_OPTION_END);
	if (!s->events)
		return mtc_fail(err, errlen, "cannot start the coordinator's server: %s",
				errno ? strerror(errno) : "out of resources");
	if (!(s->events_loop = mtc_mhd_loop_start(s->events, EVENTS_PAUSE_MS, err, errlen))) {
		MHD_stop_daemon(s->events);
		s->events = NULL;
		return -1;
	}
	if (!(s->sorter = mtc_sorter_start(&so, err, errlen))) {
		mtc_mhd_loop_stop(s->events_loop);
		s->events_loop = NULL;
		s->events = NULL;
		return -1;
	}
	return 0;
}

static void server_free(struct mtc_peer_server *s)
{
	mtc_peer_auth_free(s->auth);
	free(s->tls_client);
	free(s->dir);
	free(s);
}

struct mtc_peer_server *mtc_peer_server_start(const struct mtc_peer_server_opts *o, char *err,
					      size_t errlen)
{
	static const double buckets[] = { 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300 };
	struct mtc_peer_server *s;
	struct sockaddr_storage ss = { 0 }, bound;
	socklen_t blen = sizeof bound;
	const union MHD_DaemonInfo *info;
	char host[INET6_ADDRSTRLEN];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
	struct stat st;
	int front_fd = -1; /* the TLS front's or the sorter's */
	int sorted = o->route_start && o->route_collect && !o->tls_dir;

	if (stat(o->dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a directory", o->dir);
		return NULL;
	}
	if (parse_listen(o->listen, &ss, err, errlen) < 0)
		return NULL;
	if (!o->token_file && !o->insecure && !is_loopback(&ss)) {
		snprintf(err, errlen,
			 "refusing to listen on '%s' without --peer-token-file (use --insecure to allow)",
			 o->listen);
		return NULL;
	}
	if (!o->token_file && !is_loopback(&ss))
		mtc_warn("listening on '%s' beyond loopback with no token (--insecure): anyone who "
			 "reaches this address can read and replace this node's checkpoints", o->listen);
	/*
	 * One malloc arena: a manifest checked in one connection's thread and
	 * freed leaves its pages to the next, in another thread, instead of
	 * each thread's arena keeping a manifest's worth (measured: 127 MB
	 * peak for four 16 MiB manifests at once with an arena per thread, 73
	 * with one).
	 */
	mallopt(M_ARENA_MAX, 1);
	s = xcalloc(1, sizeof *s);
	TAILQ_INIT(&s->conns);
	s->o = *o;
	s->dir = xstrdup(o->dir);
	pthread_mutex_init(&s->sessions_mu, NULL);
	pthread_mutex_init(&s->manifest_mu, NULL);
	pthread_mutex_init(&s->split_mu, NULL);
	pthread_cond_init(&s->manifest_cv, NULL);
	pthread_mutex_init(&s->conns_mu, NULL);
	pthread_cond_init(&s->conns_cv, NULL);
	if (o->token_file && !(s->auth = mtc_peer_auth_load(o->token_file, err, errlen))) {
		server_free(s);
		return NULL;
	}
	mtc_histogram_init(&s->seconds, buckets, (int)(sizeof buckets / sizeof *buckets));
	signal(SIGPIPE, SIG_IGN);
	remove_leftovers(s->dir);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pthread_mutex_init(&s->wake_mu, NULL);
	if (o->tls_dir || sorted) {
		if ((front_fd = listen_on(&ss, o->listen, err, errlen)) < 0) {
			server_free(s);
			return NULL;
		}
		flags |= MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	}
	s->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
		completed, s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
		MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (size_t)CONN_MEMORY / 4,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->max_conns_per_ip,
		MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s, MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "cannot listen on '%s': %s", o->listen,
			 errno ? strerror(errno) : "address in use or not available");
		if (front_fd >= 0)
			close(front_fd);
		server_free(s);
		return NULL;
	}
	if (sorted && start_events(s, front_fd, ss.ss_family == AF_INET6, err, errlen) < 0) {
		close(front_fd);
		MHD_stop_daemon(s->daemon);
		server_free(s);
		return NULL;
	}
	if (o->tls_dir) {
		struct mtc_tls_front_opts fo = { .dir = o->tls_dir, .listen_fd = front_fd,
						 .max_handshakes = o->max_unauth,
						 /* a handshake always has a deadline, the idle one at most */
						 .handshake_timeout_s = o->head_timeout_s > 0
										? o->head_timeout_s
										: o->timeout_s,
						 .idle_timeout_s = o->timeout_s,
						 .hand_over = tls_hand_over, .cls = s };
		if (!(s->tls = mtc_tls_front_start(&fo, err, errlen))) {
			close(front_fd);
			MHD_stop_daemon(s->daemon);
			server_free(s);
			return NULL;
		}		if (mtc_tls_kernel_available())
			mtc_info("TLS: the kernel offers TLS on sockets; /metrics counts the "
				 "connections it took over (mtc_peer_tls_kernel_total)");
		else
			mtc_info("TLS: this kernel has no TLS on sockets (no 'tls' in "
				 "tcp_available_ulp): records are en- and decrypted in user space");
	}
	if (pthread_create(&s->guard, NULL, guard_main, s)) {
		snprintf(err, errlen, "cannot start the connection guard: out of threads");
		if (s->tls)
			mtc_tls_front_stop(s->tls);
		mtc_sorter_stop(s->sorter);
		mtc_mhd_loop_stop(s->events_loop);
		MHD_stop_daemon(s->daemon);
		server_free(s);
		return NULL;
	}
	/* the port bound (port 0 picks one), by the front's socket or MHD's */
	info = front_fd < 0 ? MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_LISTEN_FD) : NULL;
	memset(&bound, 0, sizeof bound);
	getsockname(info ? info->listen_fd : front_fd, (struct sockaddr *)&bound, &blen);
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
	snprintf(s->address, sizeof s->address, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
		 host, ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						      : ((struct sockaddr_in *)&bound)->sin_port));
	return s;
}

const char *mtc_peer_server_address(const struct mtc_peer_server *s) { return s->address; }

void mtc_peer_server_stop(struct mtc_peer_server *s)
{
	atomic_store(&s->stopping, 1);
	pthread_mutex_lock(&s->conns_mu);
	s->guard_stop = 1;
	pthread_cond_signal(&s->conns_cv);
	pthread_mutex_unlock(&s->conns_mu);
	pthread_join(s->guard, NULL);
	if (s->tls)
		mtc_tls_front_stop(s->tls);
	mtc_sorter_stop(s->sorter);
	mtc_mhd_loop_stop(s->events_loop);
	MHD_stop_daemon(s->daemon);
	while (s->sessions) {
		struct session *x = s->sessions;
		s->sessions = x->next;
		session_free(s, x);
	}
	pthread_mutex_destroy(&s->sessions_mu);
	pthread_mutex_destroy(&s->manifest_mu);
	split_free(s->split);
	pthread_mutex_destroy(&s->split_mu);
	pthread_cond_destroy(&s->manifest_cv);
	pthread_mutex_destroy(&s->conns_mu);
	pthread_cond_destroy(&s->conns_cv);
	pthread_mutex_destroy(&s->wake_mu);
	remove_leftovers(s->dir);
	server_free(s);
}
