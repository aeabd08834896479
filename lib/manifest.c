/* The manifest of a tree (see manifest.h). */
#include "manifest.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naming.h"
#include "xalloc.h"

void mtc_manifest_init(struct mtc_manifest *m) { memset(m, 0, sizeof *m); }

void mtc_manifest_free(struct mtc_manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->entries[i].path);
	free(m->entries);
	mtc_manifest_init(m);
}

void mtc_manifest_append(struct mtc_manifest *m, const char *path, size_t len, enum mtc_entry_type type,
			 long long size, const char *digest)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 16;
		m->entries = xrealloc(m->entries, m->cap * sizeof *m->entries);
	}
	struct mtc_manifest_entry *e = &m->entries[m->n++];
	e->path = xmalloc(len + 1);
	memcpy(e->path, path, len);
	e->path[len] = '\0';
	e->type = type;
	e->size = size;
	snprintf(e->digest, sizeof e->digest, "%s", digest);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct mtc_manifest_entry *)a)->path,
		      ((const struct mtc_manifest_entry *)b)->path);
}

void mtc_manifest_sort(struct mtc_manifest *m)
{
	if (m->n)
		qsort(m->entries, m->n, sizeof *m->entries, by_path);
}

long long mtc_manifest_bytes(const struct mtc_manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (!*m->entries[i].path)
			return m->entries[i].size;
	return 0;
}

static const char *type_name(enum mtc_entry_type t) { return t == MTC_ENTRY_DIR ? "dir" : "file"; }

/* The difference between entries x (wanted, or NULL) and y (found, or NULL) in err; 0 when none. */
static int entry_difference(const struct mtc_manifest_entry *x, const struct mtc_manifest_entry *y,
			    char *err, size_t errlen)
{
	const char *name = x ? (*x->path ? x->path : ".") : y->path;

	if (!y)
		snprintf(err, errlen, "'%s' is missing", name);
	else if (!x)
		snprintf(err, errlen, "'%s' is not in the manifest", name);
	else if (x->type != y->type)
		snprintf(err, errlen, "'%s' is a %s, expected a %s", name, type_name(y->type),
			 type_name(x->type));
	else if (x->size != y->size)
		snprintf(err, errlen, "'%s' has %lld bytes, expected %lld", name, y->size, x->size);
	else if (strcmp(x->digest, y->digest))
		snprintf(err, errlen, "'%s' has digest %s, expected %s", name, y->digest, x->digest);
	else
		return 0;
	return 1;
}

/*
 * One merge walk. A file that differs changes every directory above it, and
 * those sort first, so the first file difference is the one told, else the
 * first of any kind.
 */
int mtc_manifest_compare(const struct mtc_manifest *a, const struct mtc_manifest *b, char *err,
			 size_t errlen)
{
	size_t i = 0, j = 0;
	int differs = 0;

	while (i < a->n || j < b->n) {
		int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->entries[i].path, b->entries[j].path);
		const struct mtc_manifest_entry *x = c <= 0 ? &a->entries[i++] : NULL;
		const struct mtc_manifest_entry *y = c >= 0 ? &b->entries[j++] : NULL;
		int file = (x && x->type == MTC_ENTRY_FILE) || (y && y->type == MTC_ENTRY_FILE);
		char diff[512];

		if (!entry_difference(x, y, diff, sizeof diff))
			continue;
		if (!differs || file)
			snprintf(err, errlen, "%s", diff);
		differs = 1;
		if (file)
			break;
	}
	return differs;
}

json_t *mtc_manifest_to_json(const struct mtc_manifest *m)
{
	json_t *a = json_array();
	for (size_t i = 0; i < m->n; i++) {
		const struct mtc_manifest_entry *e = &m->entries[i];
		json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:s}", "path", e->path, "type",
						   type_name(e->type), "size", (json_int_t)e->size,
						   "digest", e->digest));
	}
	return a;
}

static int valid_rel_path(const char *p)
{
	if (!*p)
		return 1;
	if (*p == '/' || strlen(p) >= PATH_MAX)
		return 0;
	const char *s = p;
	for (;;) {
		const char *slash = strchr(s, '/');
		size_t len = slash ? (size_t)(slash - s) : strlen(s);
		if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && !strncmp(s, "..", 2)))
			return 0;
		if (!slash)
			return 1;
		s = slash + 1;
	}
}

int mtc_manifest_add_entry(struct mtc_manifest *m, const char *path, const char *type, long long size,
			   const char *digest, size_t i, char *err, size_t errlen)
{
	int dir = !strcmp(type, "dir");
	if ((!dir && strcmp(type, "file")) || size < 0 || !valid_rel_path(path) ||
	    !(dir ? mtc_is_dir_hash(digest) : mtc_is_hash(digest) && digest[0] != 'D')) {
		snprintf(err, errlen, "manifest entry %zu ('%s') is not valid", i, path);
		return -1;
	}
	mtc_manifest_append(m, path, strlen(path), dir ? MTC_ENTRY_DIR : MTC_ENTRY_FILE, size, digest);
	return 0;
}

int mtc_manifest_seal(struct mtc_manifest *m, char *err, size_t errlen)
{
	mtc_manifest_sort(m);
	for (size_t i = 1; i < m->n; i++)
		if (!strcmp(m->entries[i - 1].path, m->entries[i].path)) {
			snprintf(err, errlen, "manifest lists '%s' twice", m->entries[i].path);
			return -1;
		}
	return 0;
}
