/*
 * Shared strings and integers (see json_atoms.h): open addressing with linear
 * probing, kept at most half full; a slot keeps its value's hash, so that a
 * probe reads a value only when the hashes match.
 */
#include "json_atoms.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "hash.h"
#include "xalloc.h"

struct slot {
	uint64_t hash; /* 0: empty */
	json_t *v;
};

struct mtc_json_atoms {
	struct slot *slot;
	size_t n, cap;
	uint64_t seed; /* random: a peer cannot choose values that collide */
};

/* What is looked for: a string of n bytes at s, or (s NULL) the integer i. */
struct key {
	const char *s;
	size_t n;
	json_int_t i;
	uint64_t hash;
};

static struct key string_key(const struct mtc_json_atoms *a, const char *s, size_t n)
{
	return (struct key){ .s = s, .n = n, .hash = mtc_hash(s, n, a->seed) };
}

static struct key integer_key(const struct mtc_json_atoms *a, json_int_t i)
{
	return (struct key){ .i = i, .hash = mtc_hash(&i, sizeof i, ~a->seed) };
}

static int matches(const json_t *v, const struct key *k)
{
	if (!k->s)
		return json_is_integer(v) && json_integer_value(v) == k->i;
	return json_is_string(v) && json_string_length(v) == k->n &&
	       !memcmp(json_string_value(v), k->s, k->n);
}

/* The slot holding the value k names, or the empty one where it would go. */
static struct slot *find(struct slot *slot, size_t cap, const struct key *k)
{
	size_t i = (size_t)k->hash & (cap - 1);
	while (slot[i].hash && (slot[i].hash != k->hash || !matches(slot[i].v, k)))
		i = (i + 1) & (cap - 1);
	return &slot[i];
}

json_t *mtc_json_atom_string(const struct mtc_json_atoms *a, const char *s, size_t n)
{
	struct key k;
	if (!a || !a->cap)
		return NULL;
	k = string_key(a, s, n);
	return find(a->slot, a->cap, &k)->v;
}

json_t *mtc_json_atom_integer(const struct mtc_json_atoms *a, json_int_t v)
{
	struct key k;
	if (!a || !a->cap)
		return NULL;
	k = integer_key(a, v);
	return find(a->slot, a->cap, &k)->v;
}

static void grow(struct mtc_json_atoms *a)
{
	size_t cap = a->cap ? 2 * a->cap : 64;
	struct slot *slot = xcalloc(cap, sizeof *slot);
	for (size_t i = 0; i < a->cap; i++)
		if (a->slot[i].hash) {
			size_t j = (size_t)a->slot[i].hash & (cap - 1);
			while (slot[j].hash)
				j = (j + 1) & (cap - 1);
			slot[j] = a->slot[i];
		}
	free(a->slot);
	a->slot = slot;
	a->cap = cap;
}

struct mtc_json_atoms *mtc_json_atoms_new(void)
{
	struct mtc_json_atoms *a = xcalloc(1, sizeof *a);
	if (getrandom(&a->seed, sizeof a->seed, 0) != sizeof a->seed)
		a->seed = (uint64_t)(uintptr_t)a ^ (uint64_t)time(NULL);
	return a;
}

void mtc_json_share(struct mtc_json_atoms *a, json_t *v)
{
	size_t i;
	json_t *e;
	struct key k;
	struct slot *s;

	json_array_foreach (v, i, e) {
		if (json_is_array(e)) {
			mtc_json_share(a, e);
			continue;
		}
		if (json_is_string(e))
			k = string_key(a, json_string_value(e), json_string_length(e));
		else if (json_is_integer(e))
			k = integer_key(a, json_integer_value(e));
		else
			continue;
		if (2 * (a->n + 1) > a->cap)
			grow(a);
		s = find(a->slot, a->cap, &k);
		if (!s->hash) {
			*s = (struct slot){ k.hash, json_incref(e) };
			a->n++;
		} else if (s->v != e) {
			json_array_set(v, i, s->v);
		}
	}
}

void mtc_json_atoms_free(struct mtc_json_atoms *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->cap; i++)
		json_decref(a->slot[i].v);
	free(a->slot);
	free(a);
}
