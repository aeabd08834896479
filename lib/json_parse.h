#ifndef MTC_JSON_PARSE_H
#define MTC_JSON_PARSE_H

#include <stddef.h>

#include <jansson.h>

struct mtc_json_atoms;

/*
 * A JSON reader for the bodies the coordinator takes from every rank: it
 * accepts what json_loadb(buf, len, 0, ...) accepts (an object or an array at
 * the top, UTF-8 only, no \u0000, integers within json_int_t, depth at most
 * 2048) and gives the same value, but refuses a NUL byte anywhere (jansson
 * skips one after a number or a literal), in a fraction of the time, since it
 * reads from the buffer in place rather than a byte at a time through a
 * stream. With atoms, a string or an integer in an array that equals one of
 * them is that shared value (see json_atoms.h), not a copy. NULL and a
 * one-line reason on bad input.
 */
json_t *mtc_json_parse(const char *buf, size_t len, const struct mtc_json_atoms *atoms, char *err,
		       size_t errlen);

/*
 * The keys worth keeping of an object, in a table that ends with a NULL key.
 * sub is the table for the objects within the value (an object, or the
 * objects in a list, at any depth; NULL: they keep no key); a list in the
 * value may hold at most max_items entries, a string at most max_bytes
 * (0: no limit).
 */
struct mtc_json_keep {
	const char *key;
	const struct mtc_json_keep *sub;
	size_t max_items, max_bytes;
};

/*
 * mtc_json_parse of a document whose objects keep only the keys of keep (the
 * top level's table): any other key's value is read for its syntax, as
 * mtc_json_parse would, and dropped without being built, so that what a
 * document costs is bounded by the tables and not by what it holds. A list or
 * a string longer than its key allows fails the parse ("a list of more than N
 * entries").
 */
json_t *mtc_json_parse_kept(const char *buf, size_t len, const struct mtc_json_atoms *atoms,
			    const struct mtc_json_keep *keep, char *err, size_t errlen);

#endif
