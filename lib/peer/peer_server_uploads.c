#include "peer_server_int.h"

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

void psrv_session_free(struct mtc_peer_server *s, struct session *x)
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

void psrv_remove_staging(struct req *r)
{
	if (r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
	}
	end_extraction(r);
	mtc_wire_hash_end(&r->body_hash);
	drop_staging(&r->staging);
	free(r->obj);
	r->obj = NULL;
	if (r->sess && r->piece)
		piece_done(r, "a piece of the upload was cut off");
	psrv_session_free(r->s, r->sess);
	r->sess = NULL;
	mtc_wire_list_free(&r->got);
	if (r->transfer) {
		atomic_fetch_sub(&r->s->active, 1);
		r->transfer = 0;
	}
}

struct mtc_wire_limits psrv_server_limits(const struct mtc_peer_server *s);

static void *extract_main(void *arg)
{
	struct req *r = arg;
	struct mtc_wire_limits lim = psrv_server_limits(r->s);

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

struct mtc_wire_limits psrv_server_limits(const struct mtc_peer_server *s)
{
	return (struct mtc_wire_limits){ body_limit(s), s->o.max_files, s->o.max_depth, s->pool };
}

/*
 * Memory is bounded by construction: one manifest at a time is parsed and
 * checked; another waits up to MANIFEST_WAIT_S, then gets 503 and Retry-After.
 */
#define MANIFEST_WAIT_S 10

int psrv_manifest_enter(struct mtc_peer_server *s)
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

void psrv_manifest_leave(struct mtc_peer_server *s)
{
	mtc_cond_set(&s->manifest_mu, &s->manifest_cv, &s->manifest_busy, 0);
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
static int load_manifest(struct mtc_peer_server *s, const char *hash, struct mtc_manifest *m, char *err,
			 size_t errlen)
{
	struct mtc_wire_limits lim = psrv_server_limits(s);
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
	if (!psrv_manifest_enter(s)) {
		snprintf(err, errlen, "busy checking other manifests; retry");
		*code = MHD_HTTP_SERVICE_UNAVAILABLE;
		free(e);
		return -1;
	}
	rc = load_manifest(s, x->hash, &e->m, err, errlen);
	psrv_manifest_leave(s);
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
	psrv_session_free(s, x);
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
static unsigned publish_tree(struct mtc_peer_server *s, struct session *x, char *err, size_t errlen)
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
		return psrv_respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT,
				    "'%s': a range is 'Content-Range: bytes A-B/%lld', A and its length whole "
				    "units of %d bytes but for the last, its body that long\n",
				    r->name, n, MTC_WIRE_UNIT);
	}
	if ((r->fd = open(r->sess->obj, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		e = errno;
		piece_done(r, "the staging file is gone");
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot stage '%s': %s\n",
				    r->name, strerror(e));
	}
	r->kind = REQ_PUT_RANGE;
	r->limit = b - a + 1;
	r->transfer = 1;
	atomic_fetch_add(&s->active, 1);
	w = mtc_wire_list_add(&r->got, "", 0, b - a + 1);
	w->off = a;
	w->file_size = n;
	mtc_wire_hash_start(&r->body_hash, w);
	return MHD_YES;
}

enum MHD_Result psrv_finish_range(struct req *r, struct MHD_Connection *c)
{
	char why[512];
	unsigned code = MHD_HTTP_OK;

	mtc_wire_hash_end(&r->body_hash);
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
	psrv_remove_staging(r);
	return psrv_respond(r, c, code, TEXT, "%s\n", why);
}

/* Starts extracting a tar body into r->sess (its piece is counted by the caller when listed). */
static enum MHD_Result start_piece(struct req *r, struct MHD_Connection *c)
{
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	r->limit = body_limit(r->s);
	if (cl && strtoll(cl, NULL, 10) > r->limit)
		return psrv_respond(r, c, HTTP_TOO_LARGE, TEXT,
				    "'%s': a body of %s bytes is over the limit of %lld (--max-body or the "
				    "local dir's free space)\n",
				    r->name, cl, r->limit);

	r->kind = REQ_PUT_TREE;
	r->transfer = 1;
	atomic_fetch_add(&r->s->active, 1);
	if (up && !strcasecmp(up, UPGRADE)) {
		r->kind = REQ_PUT_TREE_SOCK;
		return MHD_YES;
	}
	r->extract_why = xcalloc(1, EXTRACT_WHY);
	if (pthread_create(&r->extractor, NULL, extract_main, r)) {
		psrv_remove_staging(r);
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT,
				    "cannot psrv_receive '%s': out of threads\n", r->name);
	}
	r->extracting = 1;
	return MHD_YES;
}

enum MHD_Result psrv_begin_put(struct req *r, struct MHD_Connection *c, enum req_kind kind)
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
		return psrv_respond(r, c, MHD_HTTP_OK, TEXT, "'%s' is already present\n", r->name);
	}
	r->limit = is_data		      ? body_limit(s)
		   : kind == REQ_PUT_MANIFEST ? MTC_MANIFEST_BODY_MAX
					      : META_BODY_MAX;
	if (cl && strtoll(cl, NULL, 10) > r->limit)
		return psrv_respond(r, c, HTTP_TOO_LARGE, TEXT,
				    "'%s': a body of %s bytes is over the limit of %lld%s\n", r->name,
				    cl, r->limit,
				    is_data ? " (--max-body or the local dir's free space)" : "");
	if (kind == REQ_PUT_META) {
		r->kind = kind;
		return MHD_YES;
	}
	if (is_data && mtc_is_dir_hash(r->hash)) {
		unsigned code;
		char why[1024];
		if (!(r->sess = session_new(s, r->hash, 0, &code, why, sizeof why)))
			return psrv_respond(r, c, code, TEXT, "'%s': %s\n", r->name, why);
		return start_piece(r, c);
	}
	if (mtc_tmp_create(s->dir, "upload", 1, &r->staging) < 0)
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot stage '%s': %s\n",
				    r->name, strerror(errno));
	r->obj = xasprintf("%s/obj", r->staging.path);
	r->kind = kind;
	if (is_data) {
		r->transfer = 1;
		atomic_fetch_add(&s->active, 1);
		mtc_wire_hash_start(&r->body_hash, mtc_wire_list_add(&r->got, "", 0, 0));
	}
	r->fd = open(r->obj, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (r->fd < 0) {
		int e = errno;
		psrv_remove_staging(r);
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot stage '%s': %s\n",
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
	double t = mtc_now() - r->t0,
	       grace = o->timeout_s < MIN_RATE_GRACE_S ? o->timeout_s : MIN_RATE_GRACE_S;
	return o->min_rate > 0 && t > grace && (double)r->bytes < (double)o->min_rate * t;
}

enum MHD_Result psrv_receive(struct req *r, const char *data, size_t len)
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
			 r->kind == REQ_PUT_MANIFEST ? ""
						     : " (--max-body or the local dir's free space)");
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
	if (mtc_wire_put(s->pool, r->fd, r->body_hash.w ? &r->body_hash : NULL, data, len,
			 r->bytes - (long long)len) < 0) {
		r->fail_code = MHD_HTTP_INSUFFICIENT_STORAGE;
		r->why = xasprintf("cannot write '%s': %s", r->name, strerror(errno));
		close(r->fd);
		r->fd = -1;
		return MHD_YES;
	}
	return MHD_YES;
}

enum MHD_Result psrv_finish_meta(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	char *data, *path, old[MTC_HASH_MAX + 1];
	int rc;

	r->meta[r->meta_len] = '\0';
	if (r->meta_len && r->meta[r->meta_len - 1] == '\n')
		r->meta[--r->meta_len] = '\0';
	if (!mtc_is_hash(r->meta))
		return psrv_respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s': content is not a hash\n",
				    r->name);
	data = xasprintf("%s/%s.data", s->dir, r->meta);
	rc = access(data, F_OK);
	free(data);
	if (rc < 0)
		return psrv_respond(r, c, MHD_HTTP_CONFLICT, TEXT,
				    "'%s': data '%s.data' is not present\n", r->name, r->meta);
	path = xasprintf("%s/%s", s->dir, r->name);
	if (mtc_read_meta(path, old) == 0 && !strcmp(old, r->meta)) {
		free(path);
		return psrv_respond(r, c, MHD_HTTP_OK, TEXT, "'%s' is already present\n", r->name);
	}
	rc = mtc_write_atomic(path, r->meta, r->meta_len);
	free(path);
	if (rc < 0)
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot write '%s': %s\n",
				    r->name, strerror(errno));
	mtc_info("received '%s'", r->name);
	return psrv_respond(r, c, MHD_HTTP_CREATED, TEXT, "'%s' stored\n", r->name);
}

/*
 * A manifest's body was spooled to its staging file as it arrived, so six
 * of them in flight cost disk, not memory; it is read back and parsed under
 * psrv_manifest_enter (one at a time), then renamed to its pending name.
 */
enum MHD_Result psrv_finish_manifest(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	struct mtc_wire_limits lim = psrv_server_limits(s);
	struct mtc_manifest m;
	char why[1024], *path;
	int rc;

	if (r->fail_code || r->fd < 0 || fsync(r->fd) < 0)
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "%s\n",
				    r->fail_code ? r->why : "cannot stage the manifest");
	if (!psrv_manifest_enter(s))
		return psrv_respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
				    "'%s': busy checking other manifests; retry\n", r->name);
	rc = parse_manifest(r->obj, r->hash, &lim, &m, why, sizeof why);
	if (rc > 0)
		snprintf(why, sizeof why, "cannot read it back: %s", strerror(errno));
	if (rc == 0) {
		mtc_manifest_free(&m);
		malloc_trim(0);
	}
	psrv_manifest_leave(s);
	if (rc) {
		mtc_warn("'%s' rejected: %s", r->name, why);
		return psrv_respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s' rejected: %s\n", r->name, why);
	}
	path = xasprintf("%s/%s.data", s->dir, r->hash);
	rc = access(path, F_OK);
	free(path);
	if (rc == 0)
		return psrv_respond(r, c, MHD_HTTP_OK, TEXT, "'%s.data' is already present\n", r->hash);
	path = xasprintf("%s/" MTC_PENDING_MANIFEST "%s", s->dir, r->hash);
	rc = rename(r->obj, path);
	free(path);
	if (rc < 0 || mtc_fsync_dir(s->dir) < 0)
		return psrv_respond(r, c, MHD_HTTP_INSUFFICIENT_STORAGE, TEXT, "cannot keep '%s': %s\n",
				    r->name, strerror(errno));
	return psrv_respond(r, c, MHD_HTTP_CREATED, TEXT, "'%s' stored\n", r->name);
}

/* The outcome of an extracted tree or piece (rc, why from the extractor): the HTTP code, with why. */
unsigned psrv_tree_outcome(struct req *r, int rc, const char *xwhy, char *err, size_t errlen)
{
	struct mtc_peer_server *s = r->s;
	unsigned code;

	if (rc != MTC_OK) {
		atomic_fetch_add(&s->rejected, 1);
		if (rc == MTC_INTEGRITY)
			atomic_fetch_add(&s->digest_failures, 1);
		snprintf(err, errlen, "'%s' rejected: %s", r->name, xwhy);
		mtc_warn("%s", err);
		if (r->piece)
			piece_done(r, xwhy);
		psrv_remove_staging(r);
		return HTTP_UNPROCESSABLE;
	}
	mtc_debug("'%s': received and hashed in %.3f s", r->name, mtc_now() - r->t0);
	if (r->piece) {
		piece_done(r, NULL);
		psrv_remove_staging(r);
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
	psrv_remove_staging(r);
	return code;
}

static enum MHD_Result finish_tree(struct req *r, struct MHD_Connection *c)
{
	char why[1024];
	unsigned code;

	end_extraction(r);
	code = psrv_tree_outcome(r, r->extract_rc, r->extract_why, why, sizeof why);
	return psrv_respond(r, c, code, TEXT, "%s\n", why);
}

/* Writes all of buf to the psrv_upgraded socket, within the idle timeout. */
enum MHD_Result psrv_finish_data(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	char why[1024];
	const char *got;
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
		psrv_remove_staging(r);
		return psrv_respond(r, c, code, TEXT, "%s\n", r->why);
	}
	mtc_wire_hash_end(&r->body_hash);
	got = r->got.e[0].digest;
	mtc_debug("'%s': received and hashed in %.3f s", r->name, mtc_now() - r->t0);
	if (strcmp(got, r->hash)) {
		atomic_fetch_add(&s->rejected, 1);
		atomic_fetch_add(&s->digest_failures, 1);
		snprintf(why, sizeof why, "digest is %s, expected %s", got, r->hash);
		mtc_warn("'%s' rejected: %s", r->name, why);
		psrv_remove_staging(r);
		return psrv_respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s' rejected: %s\n", r->name, why);
	}
	if (atomic_load(&s->stopping)) {
		psrv_remove_staging(r);
		return psrv_respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, "shutting down\n");
	}
	rc = mtc_object_publish(r->obj, s->dir, r->hash, NULL);
	if (rc < 0) {
		code = publish_failure(r->name, why, sizeof why);
		psrv_remove_staging(r);
		return psrv_respond(r, c, code, TEXT, "%s\n", why);
	}
	mtc_histogram_observe(&s->seconds, mtc_now() - r->t0);
	psrv_remove_staging(r);
	if (rc > 0) {
		atomic_fetch_add(&s->already_present, 1);
		return psrv_respond(r, c, MHD_HTTP_OK, TEXT, "'%s' is already present\n", r->name);
	}
	atomic_fetch_add(&s->published, 1);
	mtc_info("received '%s' (%lld bytes)", r->name, r->bytes);
	return psrv_respond(r, c, MHD_HTTP_CREATED, TEXT, "'%s' stored\n", r->name);
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
			psrv_session_free(s, x);
		} else {
			p = &x->next;
		}
	}
}

void psrv_reap_sessions(struct mtc_peer_server *s)
{
	pthread_mutex_lock(&s->sessions_mu);
	reap_sessions(s);
	pthread_mutex_unlock(&s->sessions_mu);
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

enum MHD_Result psrv_open_session(struct req *r, struct MHD_Connection *c)
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
		return psrv_respond(r, c, MHD_HTTP_OK, "application/json", "{\"present\":true}\n");
	if (!mtc_is_dir_hash(r->hash) && (size = file_size_arg(c)) <= 0)
		return psrv_respond(
			r, c, MHD_HTTP_BAD_REQUEST, TEXT,
			"'%s': a file's upload session takes its size (?size=N); or PUT it whole\n",
			r->name);
	if (size > body_limit(s))
		return psrv_respond(r, c, HTTP_TOO_LARGE, TEXT,
				    "'%s': %lld bytes are over the limit of %lld (--max-body or the local "
				    "dir's free space)\n",
				    r->name, size, body_limit(s));
	if (count_sessions(s) >= MAX_SESSIONS)
		return psrv_respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
				    "'%s': %d uploads open already; retry\n", r->name, MAX_SESSIONS);
	if (!(x = session_new(s, r->hash, size, &code, why, sizeof why)))
		return psrv_respond(r, c, code, TEXT, "'%s': %s\n", r->name, why);
	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
		psrv_session_free(s, x);
		return psrv_respond(r, c, 500, TEXT, "no randomness for a session id\n");
	}
	mtc_hex(rnd, sizeof rnd, x->id);
	pthread_mutex_lock(&s->sessions_mu);
	reap_sessions(s);
	x->next = s->sessions;
	s->sessions = x;
	pthread_mutex_unlock(&s->sessions_mu);
	return psrv_respond(r, c, MHD_HTTP_CREATED, "application/json",
			    "{\"session\":\"%s\",\"ranges\":true}\n", x->id);
}

/* /v1/uploads/ID/PIECE (PUT), /v1/uploads/ID/commit (POST), /v1/uploads/ID (DELETE) */
enum MHD_Result psrv_session_request(struct req *r, struct MHD_Connection *c, const char *rest,
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

	if (idlen != 32 || (!put && !del && !commit) || (put && (!slash || !slash[1])) || (del && slash))
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "no such endpoint\n");
	memcpy(id, rest, 32);
	id[32] = '\0';
	pthread_mutex_lock(&s->sessions_mu);
	reap_sessions(s);
	x = find_session(s, id, 0);
	if (x && (del || commit) && x->pieces) {
		pthread_mutex_unlock(&s->sessions_mu);
		return psrv_respond(r, c, MHD_HTTP_CONFLICT, TEXT, "upload %s: pieces still arriving\n",
				    id);
	}
	if (x && put && !x->failed) {
		x->pieces++;
		x->last = mtc_now();
	} else if (x && !put) {
		find_session(s, id, 1);
	}
	pthread_mutex_unlock(&s->sessions_mu);
	if (!x)
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "no upload %s (expired?)\n", id);
	snprintf(r->name, sizeof r->name, "%s.data", x->hash);
	if (put && x->failed)
		return psrv_respond(r, c, HTTP_UNPROCESSABLE, TEXT, "'%s' rejected: %s\n", r->name,
				    x->why);
	if (put) {
		r->sess = x;
		r->piece = 1;
		return x->file_size ? start_range(r, c) : start_piece(r, c);
	}
	if (del) {
		psrv_session_free(s, x);
		return psrv_respond(r, c, MHD_HTTP_OK, TEXT, "upload %s discarded\n", id);
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
	psrv_session_free(s, x);
	return psrv_respond(r, c, code, TEXT, "%s\n", why);
}
