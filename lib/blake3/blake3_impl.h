#ifndef MTC_BLAKE3_IMPL_H
#define MTC_BLAKE3_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* Shared by the portable and SIMD compressions; not part of the public API. */

/* The SIMD helpers must melt into their kernel: a call would spill every vector. */
#define B3_INLINE inline __attribute__((always_inline))

enum {
	B3_CHUNK_START = 1,
	B3_CHUNK_END = 2,
	B3_PARENT = 4,
	B3_ROOT = 8,
};

/* Static so that every compression unit can fold the schedule into constants. */
static const uint32_t mtc_blake3_iv[8] = { 0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
					   0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19 };

static const uint8_t mtc_blake3_schedule[7][16] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
	{ 2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8 },
	{ 3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1 },
	{ 10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6 },
	{ 12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4 },
	{ 9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7 },
	{ 11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13 },
};

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
