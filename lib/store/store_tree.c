#include "store_tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fsutil.h"
#include "log.h"
#include "store_impl.h"
#include "walk.h"
#include "xalloc.h"

static void tree_add(struct mtc_tree *t, char *key, char *path, long long size)
{
	if ((t->n & (t->n - 1)) == 0)
		t->x = xrealloc(t->x, (t->n ? 2 * t->n : 1) * sizeof *t->x);
	t->x[t->n++] = (struct mtc_store_xfer){ .key = key, .path = path };
	t->bytes += size;
}

struct collect {
	const char *key;
	struct mtc_tree *t;
	char *err;
	size_t errlen;
};

/* A walk's visit (walk.h): each file as an object, each empty directory as "name/". */
static int collect_entry(const struct mtc_walk_entry *e, void *arg)
{
	struct collect *c = arg;
	char *key;

	if (e->error && e->reading && e->error == ELOOP)
		return mtc_fail(c->err, c->errlen, "'%s' is too deep", e->path);
	if (e->error && e->reading)
		return mtc_fail(c->err, c->errlen, "cannot read '%s': %s", e->path, strerror(e->error));
	if (e->error)
		return mtc_fail(c->err, c->errlen, "cannot stat '%s': %s", e->path, strerror(e->error));
	if (S_ISDIR(e->st.st_mode) && !e->post)
		return 0;
	key = *e->rel ? xasprintf("%s/%s", c->key, e->rel) : xstrdup(c->key);
	if (e->post) {
		if (!e->kids)
			tree_add(c->t, xasprintf("%s/", key), xstrdup(e->path), 0);
		free(key);
		return 0;
	}
	if (!S_ISREG(e->st.st_mode) || !mtc_store_valid_key(key)) {
		free(key);
		return mtc_fail(c->err, c->errlen,
				"cannot back up '%s': not a regular file or directory", e->path);
	}
	tree_add(c->t, key, xstrdup(e->path), e->st.st_size);
	return 0;
}

int mtc_tree_collect(const char *path, const char *key, struct mtc_tree *t, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		tree_add(t, xstrdup(key), xstrdup(path), st.st_size);
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a file or directory", path);
		return -1;
	}
	struct collect c = { key, t, err, errlen };
	struct mtc_walk w = { .root = path,
			      .flags = MTC_WALK_SORTED | MTC_WALK_POST,
			      .max_depth = 63,
			      .visit = collect_entry,
			      .arg = &c };
	return mtc_walk(&w);
}

void mtc_tree_free(struct mtc_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->x[i].key);
		free((char *)t->x[i].path);
		free((char *)t->x[i].digest);
	}
	free(t->x);
	memset(t, 0, sizeof *t);
}

static int make_parent(const char *path)
{
	char *copy = xstrdup(path), *slash = strrchr(copy, '/');
	int rc = 0;
	if (slash) {
		*slash = '\0';
		rc = mtc_mkdir_p(copy, 0755);
	}
	free(copy);
	return rc;
}

/* Lists prefix into l; fails (EINVAL) on a name that is not a valid key below it. */
static int list_valid(struct mtc_store *s, const char *prefix, struct mtc_store_list *l)
{
	size_t plen = strlen(prefix);
	int rc = mtc_store_list(s, prefix, NULL, l);

	for (size_t i = 0; rc == 0 && i < l->n_objects; i++) {
		const char *rel = l->objects[i].name + plen;
		if (*rel && !mtc_store_valid_key(rel)) {
			mtc_store_set_error(s, "refusing object name '%s'", l->objects[i].name);
			errno = EINVAL;
			rc = -1;
		}
	}
	if (rc < 0)
		mtc_store_list_free(l);
	return rc;
}

int mtc_tree_download(struct mtc_store *s, const char *prefix, const char *dir, struct mtc_tree *t)
{
	struct mtc_store_list l;
	size_t plen = strlen(prefix);
	int rc;

	memset(t, 0, sizeof *t);
	if (list_valid(s, prefix, &l) < 0)
		return -1;
	if (mtc_mkdir_p(dir, 0755) < 0) {
		mtc_store_set_error(s, "cannot create '%s': %s", dir, strerror(errno));
		mtc_store_list_free(&l);
		return -1;
	}
	for (size_t i = 0; i < l.n_objects; i++) {
		const char *rel = l.objects[i].name + plen;
		char *path;
		if (!*rel)
			continue;
		path = xasprintf("%s/%s", dir, rel);
		if (make_parent(path) < 0) {
			mtc_store_set_error(s, "cannot create the parent of '%s': %s", path,
					    strerror(errno));
			free(path);
			mtc_store_list_free(&l);
			mtc_tree_free(t);
			return -1;
		}
		tree_add(t, xstrdup(l.objects[i].name), path, l.objects[i].size);
	}
	mtc_store_list_free(&l);
	s->progress_total = t->bytes;
	rc = mtc_store_get_many(s, t->x, t->n);
	return rc;
}

#define GENERATIONS ".mtc-generations"
#define PARTIAL_DIR ".partial"
#define SLICES_DIR ".slices" /* a sliced get's sidecar for each partial (mtc_store_xfer.slice_state) */

void mtc_fetch_add(struct mtc_fetch *f, const char *key, const char *rel, long long size,
		   long long generation)
{
	if ((f->n & (f->n - 1)) == 0)
		f->v = xrealloc(f->v, (f->n ? 2 * f->n : 1) * sizeof *f->v);
	f->v[f->n++] = (struct mtc_fetch_item){
		.key = xstrdup(key), .rel = xstrdup(rel), .size = size, .generation = generation
	};
	f->bytes += size;
}

int mtc_fetch_add_prefix(struct mtc_store *s, const char *prefix, const char *rel_dir,
			 struct mtc_fetch *f)
{
	struct mtc_store_list l;
	size_t plen = strlen(prefix);
	char *root = xasprintf("%s/", rel_dir);

	mtc_fetch_add(f, prefix, root, 0, 0);
	free(root);
	if (list_valid(s, prefix, &l) < 0)
		return -1;
	for (size_t i = 0; i < l.n_objects; i++) {
		const char *rest = l.objects[i].name + plen;
		char *rel;
		if (!*rest)
			continue;
		rel = xasprintf("%s/%s", rel_dir, rest);
		mtc_fetch_add(f, l.objects[i].name, rel, l.objects[i].size, l.objects[i].generation);
		free(rel);
	}
	mtc_store_list_free(&l);
	return 0;
}

void mtc_fetch_free(struct mtc_fetch *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].key);
		free(f->v[i].rel);
	}
	free(f->v);
	memset(f, 0, sizeof *f);
}

static int is_dir_item(const struct mtc_fetch_item *it) { return it->rel[strlen(it->rel) - 1] == '/'; }

/* The bytes a sidecar records as whole; -1 without one. */
static long long sliced_bytes(const char *sidecar)
{
	json_t *j = json_load_file(sidecar, 0, NULL), *v;
	long long sum = 0;
	size_t i;

	if (!j)
		return -1;
	json_array_foreach (json_object_get(j, "slices"), i, v)
		sum += json_integer_value(json_array_get(v, 1));
	json_decref(j);
	return sum;
}

/* Keeps dir/<rel> if whole, else removes it; counts a partial worth continuing. */
static int sort_out(struct mtc_store *s, const char *dir, struct mtc_fetch_item *it, int same_generation,
		    long long *already)
{
	char *path = xasprintf("%s/%s", dir, it->rel);
	char *part = xasprintf("%s/" PARTIAL_DIR "/%s", dir, it->rel);
	char *side = xasprintf("%s/" SLICES_DIR "/%s", dir, it->rel);
	long long sliced = -1;
	struct stat st;
	int rc = 0;

	if (lstat(path, &st) == 0) {
		if (same_generation && S_ISREG(st.st_mode) && st.st_size == it->size) {
			it->kept = 1;
			*already += it->size;
		} else if (mtc_remove_tree(path) < 0) {
			mtc_store_set_error(s, "cannot remove '%s': %s", path, strerror(errno));
			rc = -1;
		}
	}
	if (rc == 0 && !it->kept && lstat(part, &st) == 0) {
		if (same_generation && S_ISREG(st.st_mode) && st.st_size <= it->size) {
			sliced = sliced_bytes(side);
			*already += sliced >= 0 ? sliced : st.st_size;
		} else if (mtc_remove_tree(part) < 0) {
			mtc_store_set_error(s, "cannot remove '%s': %s", part, strerror(errno));
			rc = -1;
		}
	}
	if (rc == 0 && sliced < 0 && lstat(side, &st) == 0 && mtc_remove_tree(side) < 0) {
		mtc_store_set_error(s, "cannot remove '%s': %s", side, strerror(errno));
		rc = -1;
	}
	free(path);
	free(part);
	free(side);
	return rc;
}

int mtc_fetch_prepare(struct mtc_store *s, const char *dir, struct mtc_fetch *f, long long *already)
{
	char *state = xasprintf("%s/" GENERATIONS, dir), *text;
	json_t *old = json_load_file(state, 0, NULL), *now = json_object();
	int rc = 0;

	*already = 0;
	for (size_t i = 0; i < f->n && rc == 0; i++) {
		struct mtc_fetch_item *it = &f->v[i];
		json_t *g = old ? json_object_get(old, it->key) : NULL;
		it->kept = 0;
		if (!is_dir_item(it))
			rc = sort_out(s, dir, it,
				      json_is_integer(g) && json_integer_value(g) == it->generation,
				      already);
		json_object_set_new(now, it->key, json_integer(it->generation));
	}
	text = json_dumps(now, JSON_COMPACT | JSON_SORT_KEYS);
	if (rc == 0 && mtc_write_atomic(state, text, strlen(text)) < 0) {
		mtc_store_set_error(s, "cannot write '%s': %s", state, strerror(errno));
		rc = -1;
	}
	free(text);
	json_decref(old);
	json_decref(now);
	free(state);
	return rc;
}

int mtc_fetch_run(struct mtc_store *s, const char *dir, struct mtc_fetch *f)
{
	struct mtc_store_xfer *x = xcalloc(f->n + 1, sizeof *x);
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < f->n && rc == 0; i++) {
		struct mtc_fetch_item *it = &f->v[i];
		char *path, *part = NULL, *side = NULL;
		if (it->kept)
			continue;
		path = xasprintf("%s/%s", dir, it->rel);
		if (!is_dir_item(it)) {
			part = xasprintf("%s/" PARTIAL_DIR "/%s", dir, it->rel);
			side = xasprintf("%s/" SLICES_DIR "/%s", dir, it->rel);
		}
		if (make_parent(path) < 0 || (part && make_parent(part) < 0) ||
		    (side && make_parent(side) < 0)) {
			mtc_store_set_error(s, "cannot create the parent of '%s': %s",
					    part ? part : path, strerror(errno));
			rc = -1;
		}
		x[n++] = (struct mtc_store_xfer){ .key = it->key,
						  .path = path,
						  .partial = part,
						  .generation = it->generation,
						  .slice_state = side };
	}
	if (rc == 0)
		rc = mtc_store_get_many(s, x, n);
	for (size_t i = 0; i < n; i++) {
		free((char *)x[i].path);
		free((char *)x[i].partial);
		free((char *)x[i].slice_state);
	}
	free(x);
	return rc;
}
