#ifndef MTC_BLAKE3_IMPL_H
#define MTC_BLAKE3_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* Shared by the portable and SIMD compressions; not part of the public API. */

enum {
	B3_CHUNK_START = 1,
	B3_CHUNK_END = 2,
	B3_PARENT = 4,
	B3_ROOT = 8,
};

extern const uint32_t mtc_blake3_iv[8];
extern const uint8_t mtc_blake3_schedule[7][16];

/*
 * Hashes exactly W inputs, input l at in + l * stride, each `blocks` full
 * blocks long, writing W 32-byte chaining values to out. Counters are
 * counter + l when inc, else counter for all.
 */
typedef void mtc_b3_many_fn(const uint8_t *in, size_t stride, size_t blocks, const uint32_t key[8],
			    uint64_t counter, int inc, uint8_t flags, uint8_t flag_start,
			    uint8_t flag_end, uint8_t *out);

mtc_b3_many_fn mtc_b3_many_sse41;
mtc_b3_many_fn mtc_b3_many_avx2;
mtc_b3_many_fn mtc_b3_many_avx512;

#endif
