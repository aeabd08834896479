/*
 * Shared strings and integers (see json_atoms.h): open addressing with linear
 * probing over the values themselves, kept at most half full.
 */
#include "json_atoms.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct mtc_json_atoms {
	json_t **slot;
	size_t n, cap;
};

/* A hash of an atom's bytes, eight at a time; the integers' apart from the strings'; never 0. */
static uint64_t hash_bytes(const void *p, size_t n, uint64_t salt)
{
	const unsigned char *b = p;
	uint64_t h = 0x9E3779B97F4A7C15ULL ^ salt ^ n, w;
	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
		h ^= h >> 32;
	}
	for (w = 0; n; n--)
		w = w << 8 | b[n - 1];
	h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
	return (h ^ h >> 29) | 1;
}

static uint64_t hash_of_int(json_int_t i)
{
	return hash_bytes(&i, sizeof i, 1);
}

/* 0 for a value that is not an atom. */
static uint64_t hash_of(const json_t *v)
{
	if (json_is_string(v))
		return hash_bytes(json_string_value(v), json_string_length(v), 0);
	if (json_is_integer(v))
		return hash_of_int(json_integer_value(v));
	return 0;
}

static int same_string(const json_t *v, const char *s, size_t n)
{
	return json_is_string(v) && json_string_length(v) == n && !memcmp(json_string_value(v), s, n);
}

static int same(const json_t *a, const json_t *b)
{
	if (a == b)
		return 1;
	if (json_is_integer(b))
		return json_is_integer(a) && json_integer_value(a) == json_integer_value(b);
	return same_string(a, json_string_value(b), json_string_length(b));
}

/* The slot holding a value equal to v, or the empty one where it would go. */
static size_t find(json_t *const *slot, size_t cap, const json_t *v, uint64_t h)
{
	size_t i = (size_t)h & (cap - 1);
	while (slot[i] && !same(slot[i], v))
		i = (i + 1) & (cap - 1);
	return i;
}

json_t *mtc_json_atom_string(const struct mtc_json_atoms *a, const char *s, size_t n)
{
	size_t i;
	if (!a || !a->cap)
		return NULL;
	for (i = (size_t)hash_bytes(s, n, 0) & (a->cap - 1); a->slot[i]; i = (i + 1) & (a->cap - 1))
		if (same_string(a->slot[i], s, n))
			return a->slot[i];
	return NULL;
}

json_t *mtc_json_atom_integer(const struct mtc_json_atoms *a, json_int_t v)
{
	size_t i;
	if (!a || !a->cap)
		return NULL;
	for (i = (size_t)hash_of_int(v) & (a->cap - 1); a->slot[i]; i = (i + 1) & (a->cap - 1))
		if (json_is_integer(a->slot[i]) && json_integer_value(a->slot[i]) == v)
			return a->slot[i];
	return NULL;
}

static void grow(struct mtc_json_atoms *a)
{
	size_t cap = a->cap ? 2 * a->cap : 64;
	json_t **slot = xcalloc(cap, sizeof *slot);
	for (size_t i = 0; i < a->cap; i++)
		if (a->slot[i])
			slot[find(slot, cap, a->slot[i], hash_of(a->slot[i]))] = a->slot[i];
	free(a->slot);
	a->slot = slot;
	a->cap = cap;
}

struct mtc_json_atoms *mtc_json_atoms_new(void)
{
	return xcalloc(1, sizeof(struct mtc_json_atoms));
}

void mtc_json_share(struct mtc_json_atoms *a, json_t *v)
{
	size_t i, k;
	json_t *e;
	uint64_t h;

	json_array_foreach(v, i, e) {
		if (json_is_array(e)) {
			mtc_json_share(a, e);
			continue;
		}
		if (!(h = hash_of(e)))
			continue;
		if (2 * (a->n + 1) > a->cap)
			grow(a);
		k = find(a->slot, a->cap, e, h);
		if (!a->slot[k]) {
			a->slot[k] = json_incref(e);
			a->n++;
		} else if (a->slot[k] != e) {
			json_array_set(v, i, a->slot[k]);
		}
	}
}

void mtc_json_atoms_free(struct mtc_json_atoms *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->cap; i++)
		json_decref(a->slot[i]);
	free(a->slot);
	free(a);
}
