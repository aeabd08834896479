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

#endif
