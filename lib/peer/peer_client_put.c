#include "peer_client_int.h"

static int put_manifest(const struct mtc_peer_client *pc, const char *base, const char *hash,
			const char *text, char *err, size_t errlen)
{
	char *name = xasprintf("%s.manifest", hash);
	struct call c = { .method = "PUT",
			  .url = pcli_object_url(base, name),
			  .up_mem = text,
			  .up_len = strlen(text) };
	int rc = pcli_run(pc, &c, NULL, NULL, err, errlen);
	free(name);
	pcli_free_call(&c);
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
	struct call c = { .method = "POST", .url = pcli_uploads_url(base, rest), .once = 1 };
	int rc;
	json_t *j;

	free(rest);
	*sent = 0;
	rc = pcli_attempt(pc, &c, deadline, err, errlen);
	*id = NULL;
	*ranges = 0;
	*code = c.code;
	*rejected = c.code == 422;
	if (rc || c.code == 200) {
		pcli_free_call(&c);
		return rc;
	}
	j = json_loadb(mtc_buf_str(&c.body), c.body.len, 0, NULL);
	if (j && json_is_string(json_object_get(j, "session")))
		*id = xstrdup(json_string_value(json_object_get(j, "session")));
	*ranges = j && json_is_true(json_object_get(j, "ranges"));
	json_decref(j);
	pcli_free_call(&c);
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
			  .url = pcli_uploads_url(base, rest),
			  .once = !rc };

	free(rest);
	if (!rc) {
		rc = pcli_attempt(pc, &c, deadline, err, errlen);
		*rejected |= c.code == 422;
	} else {
		pcli_attempt(pc, &c, deadline, ignored, sizeof ignored);
	}
	pcli_free_call(&c);
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
		ps->p[i].c.url = pcli_uploads_url(base, r);
		free(r);
	}
	rc = pcli_pieces_run(ps, err, errlen);
	for (int i = 0; i < ps->n; i++) {
		*sent += ps->p[i].c.bytes;
		*rejected |= ps->p[i].c.code == 422;
	}
	pcli_pieces_free(ps);
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
	pcli_pieces_split(&ps, m, pc->streams > 0 ? pc->streams : 1, ranges, pc, deadline);
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
	pcli_split_ranges(&parts, size, pcli_range_count(pc, size));
	pcli_pieces_init(&ps, (int)parts.n, pc, deadline);
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
		if (pc->streams > 1 && pcli_files_in(&m) > 1) {
			rc = put_tree_once(pc, base, path, hash, &m, deadline, sent, &rejected, err,
					   errlen);
		} else {
			name = xasprintf("%s.data", hash);
			struct call c = { .method = "PUT",
					  .url = pcli_object_url(base, name),
					  .up_path = path,
					  .up_tree = 1 };
			free(name);
			rc = pcli_attempt(pc, &c, deadline, err, errlen);
			rejected = c.code == 422;
			*sent = rc ? 0 : c.bytes;
			pcli_free_call(&c);
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
	struct call c = { .method = "PUT", .url = pcli_object_url(base, name) };
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
		if (stat(path, &st) == 0 && pcli_range_count(pc, st.st_size) > 1 &&
		    mtc_http_usable(c.url)) {
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
	rc = pcli_run(pc, &c, NULL, NULL, err, errlen);
	if (rc == NEEDS_MANIFEST)
		rc = MTC_FAILURE;
	if (sent)
		*sent = rc == 0 ? c.bytes : 0;
	free(path);
	free(c.url);
	mtc_buf_free(&c.body);
	return rc;
}
