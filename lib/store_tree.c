#include "store_tree.h"

#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "store_impl.h"
#include "xalloc.h"

static void tree_add(struct mtc_tree *t, char *key, char *path, long long size)
{
	if ((t->n & (t->n - 1)) == 0)
		t->x = xrealloc(t->x, (t->n ? 2 * t->n : 1) * sizeof *t->x);
	t->x[t->n++] = (struct mtc_store_xfer){ .key = key, .path = path };
	t->bytes += size;
}

static int walk(const char *dir, const char *key, struct mtc_tree *t, int depth, char *err,
		size_t errlen)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort), rc = 0, any = 0;

	if (n < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (depth > 64) {
		snprintf(err, errlen, "'%s' is too deep", dir);
		rc = -1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		struct stat st;
		char *path, *sub;

		if (rc < 0 || !strcmp(name, ".") || !strcmp(name, "..")) {
			free(list[i]);
			continue;
		}
		any = 1;
		path = xasprintf("%s/%s", dir, name);
		sub = xasprintf("%s/%s", key, name);
		if (stat(path, &st) < 0) {
			snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			rc = walk(path, sub, t, depth + 1, err, errlen);
		} else if (S_ISREG(st.st_mode) && mtc_store_valid_key(sub)) {
			tree_add(t, sub, path, st.st_size);
			sub = path = NULL;
		} else {
			snprintf(err, errlen, "cannot back up '%s': not a regular file or directory",
				 path);
			rc = -1;
		}
		free(path);
		free(sub);
		free(list[i]);
	}
	free(list);
	if (rc == 0 && !any && depth > 0)
		tree_add(t, xasprintf("%s/", key), xstrdup(dir), 0);
	return rc;
}

int mtc_tree_collect(const char *path, const char *key, struct mtc_tree *t, char *err,
		     size_t errlen)
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
	size_t before = t->n;
	int rc = walk(path, key, t, 1, err, errlen);
	if (rc == 0 && t->n == before) /* the root itself is empty */
		tree_add(t, xasprintf("%s/", key), xstrdup(path), 0);
	return rc;
}

void mtc_tree_free(struct mtc_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->x[i].key);
		free((char *)t->x[i].path);
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

int mtc_tree_download(struct mtc_store *s, const char *prefix, const char *dir,
		      struct mtc_tree *t)
{
	struct mtc_store_list l;
	size_t plen = strlen(prefix);
	int rc;

	memset(t, 0, sizeof *t);
	if (mtc_store_list(s, prefix, NULL, &l) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
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
		if (!mtc_store_valid_key(rel)) {
			mtc_store_set_error(s, "refusing object name '%s'", l.objects[i].name);
			mtc_store_list_free(&l);
			mtc_tree_free(t);
			errno = EINVAL;
			return -1;
		}
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
