#ifndef MTC_HASH_H
#define MTC_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * The one hash of lib/'s tables (strset.c, json_atoms.c, lkg.c): n bytes at
 * p, eight at a time, under seed; never 0, so a table may mark an empty slot
 * with 0. A table that holds what a peer chose takes a random seed.
 */
uint64_t mtc_hash(const void *p, size_t n, uint64_t seed);

#endif
