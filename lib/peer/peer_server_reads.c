#include "peer_server_int.h"

/* ---- reads ---- */

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
static int tree_piece(struct MHD_Connection *c, int *k, int *i, int *ranges, char *err, size_t errlen)
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

void psrv_split_free(struct split *x)
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
 * The tree's local manifest, parsed one at a time (psrv_manifest_enter): 0, 1
 * when the data does not match its name, MANIFEST_BUSY, or -1; why.
 */
#define MANIFEST_BUSY 2
static int local_manifest(struct mtc_peer_server *s, const char *hash, struct mtc_manifest *m,
			  char **text, char *err, size_t errlen)
{
	int rc;

	if (!psrv_manifest_enter(s)) {
		mtc_fail(err, errlen, "busy checking other manifests");
		return MANIFEST_BUSY;
	}
	rc = mtc_peer_manifest_local(s->dir, hash, m, text, err, errlen);
	psrv_manifest_leave(s);
	return rc;
}

/* Piece i of k of the tree at path. */
static struct mtc_wire_reader *piece_reader(struct mtc_peer_server *s, const char *hash,
					    const char *path, int k, int i, int ranges, long long *total,
					    char *err, size_t errlen)
{
	struct mtc_wire_reader *reader = NULL;
	struct split *x;

	pthread_mutex_lock(&s->split_mu);
	x = s->split;
	if (!x || strcmp(x->hash, hash) || x->k != k || x->ranges != ranges ||
	    mtc_now() - x->made > SPLIT_KEEP_S) {
		psrv_split_free(x);
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
		psrv_split_free(x);
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

enum MHD_Result psrv_get_data(struct req *r, struct MHD_Connection *c, const char *path, int head)
{
	struct MHD_Response *resp;
	struct stat st;
	char size[32];
	long long total;

	if (lstat(path, &st) < 0)
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	if (S_ISLNK(st.st_mode)) {
		mtc_warn("'%s' is a symlink: not served", path);
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	}
	if (S_ISREG(st.st_mode) && !head) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
		}
		long long off = 0, len = st.st_size;
		int ranged = byte_range(c, st.st_size, &off, &len);
		if (ranged < 0) {
			close(fd);
			return psrv_respond(r, c, MHD_HTTP_RANGE_NOT_SATISFIABLE, TEXT,
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
		return psrv_queue(r, c, ranged ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, resp);
	}
	if (S_ISDIR(st.st_mode) && !head) {
		const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_UPGRADE);
		struct mtc_wire_reader *reader;
		struct tree_stream *t;
		char why[512];
		int k, i, ranges, bad = tree_piece(c, &k, &i, &ranges, why, sizeof why);
		if (bad)
			return psrv_respond(r, c, (unsigned)bad, TEXT, "%s\n", why);
		reader = k ? piece_reader(r->s, r->hash, path, k, i, ranges, &total, why, sizeof why)
			   : mtc_wire_reader_open(path, &total, why, sizeof why);
		if (!reader)
			return psrv_respond(r, c, 500, TEXT, "cannot send '%s': %s\n", r->name, why);
		if (up && !strcasecmp(up, UPGRADE)) {
			r->kind = REQ_GET_TREE_SOCK;
			r->send = reader;
			return psrv_start_upgrade(r, c);
		}
		t = xcalloc(1, sizeof *t);
		t->s = r->s;
		t->root = xstrdup(path);
		t->reader = reader;
		resp = MHD_create_response_from_callback((uint64_t)total, STREAM_BLOCK, tree_read, t,
							 tree_free);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-tar");
		return psrv_queue(r, c, MHD_HTTP_OK, resp);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	total = S_ISREG(st.st_mode) ? (long long)st.st_size : mtc_tree_bytes(path);
	if (total < 0)
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	snprintf(size, sizeof size, "%lld", total);
	resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, "X-Mtc-Size", size);
	if (S_ISREG(st.st_mode))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	return psrv_queue(r, c, MHD_HTTP_OK, resp);
}

enum MHD_Result psrv_get_meta(struct req *r, struct MHD_Connection *c, const char *path, int head)
{
	char hash[MTC_HASH_MAX + 1];
	if (mtc_read_meta(path, hash) < 0)
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s' not found\n", r->name);
	if (head) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"",
									    MHD_RESPMEM_PERSISTENT);
		return psrv_queue(r, c, MHD_HTTP_OK, resp);
	}
	return psrv_respond(r, c, MHD_HTTP_OK, "application/octet-stream", "%s", hash);
}

enum MHD_Result psrv_get_inventory(struct req *r, struct MHD_Connection *c)
{
	struct mtc_inventory inv;
	json_t *j;
	char *text;
	enum MHD_Result rc;

	if (mtc_inventory_scan(r->s->dir, &inv) < 0)
		return psrv_respond(r, c, 500, TEXT, "cannot scan the dir: %s\n", strerror(errno));
	j = mtc_inventory_to_json(&inv);
	text = json_dumps(j, JSON_COMPACT);
	rc = psrv_respond(r, c, MHD_HTTP_OK, "application/json", "%s\n", text);
	free(text);
	json_decref(j);
	mtc_inventory_free(&inv);
	return rc;
}

/* What an operator pages on: the node's steps, its last backup, its RAM disk's room. */
int psrv_manifest_name(const char *name, char hash[MTC_HASH_MAX + 1])
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
enum MHD_Result psrv_get_manifest(struct req *r, struct MHD_Connection *c, int head)
{
	struct mtc_manifest m;
	char why[1024], *text, *data = xasprintf("%s/%s.data", r->s->dir, r->hash);
	int present = access(data, F_OK) == 0, rc;
	enum MHD_Result res;

	free(data);
	if (!present)
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "'%s.data' not found\n", r->hash);
	if (head) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"",
									    MHD_RESPMEM_PERSISTENT);
		return psrv_queue(r, c, MHD_HTTP_OK, resp);
	}
	rc = local_manifest(r->s, r->hash, &m, &text, why, sizeof why);
	if (rc == MANIFEST_BUSY)
		return psrv_respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
				    "'%s.manifest': %s; retry\n", r->hash, why);
	if (rc)
		return psrv_respond(r, c, rc == 1 ? MHD_HTTP_CONFLICT : 500, TEXT,
				    "cannot list '%s.data': %s\n", r->hash, why);
	mtc_manifest_free(&m);
	res = psrv_respond(r, c, MHD_HTTP_OK, "application/json", "%s", text);
	free(text);
	return res;
}
