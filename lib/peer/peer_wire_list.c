/* What arrived, and the manifest and digest it composes to (peer_wire.h). */
#include "peer_wire.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct mtc_wire_entry *mtc_wire_list_add(struct mtc_wire_list *l, const char *path, int is_dir,
					 long long size)
{
	struct mtc_wire_entry *e;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->e = xrealloc(l->e, l->cap * sizeof *l->e);
	}
	e = &l->e[l->n++];
	*e = (struct mtc_wire_entry){ .path = xstrdup(path), .is_dir = is_dir, .size = size };
	return e;
}

void mtc_wire_list_free(struct mtc_wire_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->e[i].path);
		free(l->e[i].cvs);
		free(l->e[i].tail);
	}
	free(l->e);
	memset(l, 0, sizeof *l);
}

void mtc_wire_list_take(struct mtc_wire_list *to, struct mtc_wire_list *from)
{
	if (!from->n) {
		mtc_wire_list_free(from);
		return;
	}
	if (to->n + from->n > to->cap) {
		to->cap = to->n + from->n;
		to->e = xrealloc(to->e, to->cap * sizeof *to->e);
	}
	memcpy(to->e + to->n, from->e, from->n * sizeof *from->e);
	to->n += from->n;
	free(from->e);
	memset(from, 0, sizeof *from);
}

/* Path order with '/' below every other byte: a directory's entries follow it. */
static int cmp_path(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned ca = *a == '/' ? 1 : (unsigned char)*a, cb = *b == '/' ? 1 : (unsigned char)*b;
		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (!ca)
			return 0;
	}
}

static int by_entry_path(const void *x, const void *y)
{
	return cmp_path(((const struct mtc_wire_entry *)x)->path,
			((const struct mtc_wire_entry *)y)->path);
}

/*
 * An open directory: its children's digests, files' borrowed from the list
 * (which outlives the composition), subdirectories' owned (a copy costs
 * what the file list costs again in a directory of 100k files).
 */
struct level {
	const char *path;
	size_t len;
	long long size;
	char **kids, **owned;
	size_t n, cap, n_owned, cap_owned;
};

static void add_kid(struct level *l, char *digest, int own)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->kids = xrealloc(l->kids, l->cap * sizeof *l->kids);
	}
	if (own) {
		digest = xstrdup(digest);
		if (l->n_owned == l->cap_owned) {
			l->cap_owned = l->cap_owned ? l->cap_owned * 2 : 16;
			l->owned = xrealloc(l->owned, l->cap_owned * sizeof *l->owned);
		}
		l->owned[l->n_owned++] = digest;
	}
	l->kids[l->n++] = digest;
}

static void close_level(struct level *l, char out[66], struct mtc_manifest *m)
{
	mtc_digest_dir(l->kids, l->n, out);
	for (size_t i = 0; i < l->n_owned; i++)
		free(l->owned[i]);
	if (m)
		mtc_manifest_append(m, l->path ? l->path : "", l->len, MTC_ENTRY_DIR, l->size, out);
	free(l->kids);
	free(l->owned);
	memset(l, 0, sizeof *l);
}

/* Closes the innermost open directory into its parent. */
static void pop(struct level *stack, size_t *depth, struct mtc_manifest *m)
{
	char d[66];
	long long size = stack[*depth - 1].size;
	close_level(&stack[--*depth], d, m);
	add_kid(&stack[*depth - 1], d, 1);
	stack[*depth - 1].size += size;
}

static int inside(const struct level *l, const char *path)
{
	return l->len == 0 || (!strncmp(path, l->path, l->len) && path[l->len] == '/');
}

static int by_item_path(const void *x, const void *y)
{
	return cmp_path(((const struct mtc_wire_item *)x)->path,
			((const struct mtc_wire_item *)y)->path);
}

static void compose(struct mtc_wire_item *e, size_t n, struct mtc_manifest *m, char digest[66],
		    int files)
{
	struct level *stack = xcalloc(16, sizeof *stack);
	size_t depth = 1, cap = 16;

	if (n)
		qsort(e, n, sizeof *e, by_item_path);
	for (size_t i = 0; i < n; i++) {
		const char *p = e[i].path;
		size_t plen = strlen(p);
		if (i && !strcmp(p, e[i - 1].path))
			continue; /* listed twice */
		while (depth > 1 && !inside(&stack[depth - 1], p))
			pop(stack, &depth, m);
		for (size_t k = stack[depth - 1].len + (depth > 1); k <= plen; k++) {
			if (p[k] != '/' && !(k == plen && e[i].is_dir))
				continue;
			if (depth == cap) {
				stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
				memset(stack + depth, 0, (cap - depth) * sizeof *stack);
			}
			stack[depth].path = p;
			stack[depth++].len = k;
		}
		if (!e[i].is_dir) {
			add_kid(&stack[depth - 1], (char *)e[i].digest, 0);
			stack[depth - 1].size += e[i].size;
			if (files && m)
				mtc_manifest_append(m, p, plen, MTC_ENTRY_FILE, e[i].size, e[i].digest);
		}
	}
	while (depth > 1)
		pop(stack, &depth, m);
	close_level(&stack[0], digest, m);
	free(stack);
	if (m)
		mtc_manifest_sort(m);
}

void mtc_wire_manifest(struct mtc_wire_list *l, struct mtc_manifest *m, char digest[66])
{
	struct mtc_wire_item *items = xcalloc(l->n + 1, sizeof *items);

	if (l->n)
		qsort(l->e, l->n, sizeof *l->e, by_entry_path);
	for (size_t i = 0; i < l->n; i++)
		items[i] = (struct mtc_wire_item){ l->e[i].path, l->e[i].digest, l->e[i].size,
						   l->e[i].is_dir };
	compose(items, l->n, m, digest, 1);
	free(items);
}

void mtc_wire_compose_dirs(struct mtc_wire_item *items, size_t n, struct mtc_manifest *m,
			   char digest[66])
{
	compose(items, n, m, digest, 0);
}
