#ifndef MTC_STRSET_H
#define MTC_STRSET_H

#include <stddef.h>

/*
 * The one set of strings for "seen before": open addressing with linear
 * probing, kept at most half full; it holds its own copies. A zeroed
 * struct is an empty set.
 */
struct mtc_strset {
	char **slot;
	size_t n, cap;
};

/* 1 when s was in the set already; else adds it and returns 0. */
int mtc_strset_add(struct mtc_strset *set, const char *s);
int mtc_strset_has(const struct mtc_strset *set, const char *s);
void mtc_strset_free(struct mtc_strset *set);

#endif
