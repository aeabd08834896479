#include "peer_client_int.h"

int mtc_peer_has(const struct mtc_peer_client *pc, const char *base, const char *name, char *err,
		 size_t errlen)
{
	struct call c = { .method = "HEAD", .url = pcli_object_url(base, name) };
	int rc = pcli_run(pc, &c, NULL, NULL, err, errlen);
	free(c.url);
	mtc_buf_free(&c.body);
	return rc == 0 ? 1 : rc == MTC_NOTFOUND ? 0 : -1;
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
	struct call c = { .method = "GET", .url = pcli_object_url(base, name) };
	int rc = pcli_run(pc, &c, NULL, NULL, err, errlen);

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
	pcli_free_call(&c);
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
	    pcli_attempt(pc, &h, mtc_now() + 30, err, sizeof err) == 0 && h.accept_ranges &&
	    pcli_range_count(pc, h.x_size) > 1) {
		c->file_size = h.x_size;
		c->file_ranges = pcli_range_count(pc, h.x_size);
	}
	mtc_buf_free(&h.body);
}

static int get_data(const struct mtc_peer_client *pc, const char *base, const char *dir,
		    const char *name, const char *hash, long long *received, char *err, size_t errlen)
{
	struct mtc_tmp staging;
	char *obj, *text = NULL;
	struct call c = { .method = "GET", .url = pcli_object_url(base, name), .limits = &pc->limits };
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
		if (pc->streams > 1 && mtc_http_usable(c.url) && pcli_files_in(&m) > 1)
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
	rc = pcli_run(pc, &c, verify_and_publish, &p, err, errlen);
	if (rc == NEEDS_MANIFEST)
		rc = MTC_FAILURE;
	if (received)
		*received = rc == 0 ? c.bytes : 0;
	mtc_tmp_discard(&staging);
	free(obj);
	pcli_free_call(&c);
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
	c.url = pcli_object_url(base, name);
	rc = pcli_run(pc, &c, NULL, NULL, err, errlen);
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
	if (pcli_run(pc, &c, NULL, NULL, err, errlen) == 0) {
		j = json_loadb(mtc_buf_str(&c.body), c.body.len, 0, &je);
		if (!j)
			snprintf(err, errlen, "'%s': bad JSON: %s", c.url, je.text);
	}
	free(c.url);
	mtc_buf_free(&c.body);
	return j;
}
