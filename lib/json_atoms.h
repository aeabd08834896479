#ifndef MTC_JSON_ATOMS_H
#define MTC_JSON_ATOMS_H

#include <jansson.h>

/*
 * The one copy of each string and integer found in arrays, shared by many
 * documents: mtc_json_share replaces, in v's arrays (at any depth), each
 * string or integer equal to one already held by the set with that one, and
 * adds the others. A document keeps its values alive on its own; the set
 * holds a reference to each of its members until it is freed.
 */
struct mtc_json_atoms;

struct mtc_json_atoms *mtc_json_atoms_new(void);
void mtc_json_share(struct mtc_json_atoms *a, json_t *v);
void mtc_json_atoms_free(struct mtc_json_atoms *a);

/* The member equal to a string of n bytes, or to an integer; NULL if none (or a is NULL). Borrowed. */
json_t *mtc_json_atom_string(const struct mtc_json_atoms *a, const char *s, size_t n);
json_t *mtc_json_atom_integer(const struct mtc_json_atoms *a, json_int_t v);

#endif
