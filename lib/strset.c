/* A set of strings (see strset.h). */
#include "strset.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "xalloc.h"

/* The slot holding s, or the empty one where it would go; cap is a power of two. */
static size_t find(char *const *slot, size_t cap, const char *s)
{
	size_t i = (size_t)mtc_hash(s, strlen(s), 0) & (cap - 1);
	while (slot[i] && strcmp(slot[i], s))
		i = (i + 1) & (cap - 1);
	return i;
}

static void grow(struct mtc_strset *set)
{
	size_t cap = set->cap ? 2 * set->cap : 16;
	char **slot = xcalloc(cap, sizeof *slot);
	for (size_t i = 0; i < set->cap; i++)
		if (set->slot[i])
			slot[find(slot, cap, set->slot[i])] = set->slot[i];
	free(set->slot);
	set->slot = slot;
	set->cap = cap;
}

int mtc_strset_add(struct mtc_strset *set, const char *s)
{
	size_t i;
	if (2 * (set->n + 1) > set->cap)
		grow(set);
	i = find(set->slot, set->cap, s);
	if (set->slot[i])
		return 1;
	set->slot[i] = xstrdup(s);
	set->n++;
	return 0;
}

int mtc_strset_has(const struct mtc_strset *set, const char *s)
{
	return set->cap && set->slot[find(set->slot, set->cap, s)];
}

void mtc_strset_free(struct mtc_strset *set)
{
	for (size_t i = 0; i < set->cap; i++)
		free(set->slot[i]);
	free(set->slot);
	memset(set, 0, sizeof *set);
}
