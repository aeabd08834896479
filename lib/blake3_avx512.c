#include <immintrin.h>

#include "blake3_impl.h"

#define W 16
#define VEC __m512i
#define TARGET __attribute__((target("avx512f")))
#define MANY_FN mtc_b3_many_avx512
#define LOADU(p) _mm512_loadu_si512((const void *)(p))
#define STOREU(p, x) _mm512_storeu_si512((void *)(p), x)
#define SET1(x) _mm512_set1_epi32((int)(x))
#define ADD(a, b) _mm512_add_epi32(a, b)
#define XOR(a, b) _mm512_xor_si512(a, b)
#define ROT16(x) _mm512_ror_epi32(x, 16)
#define ROT12(x) _mm512_ror_epi32(x, 12)
#define ROT8(x) _mm512_ror_epi32(x, 8)
#define ROT7(x) _mm512_ror_epi32(x, 7)

/*
 * Rows r[0..15] of 16 words become columns: a 4x4 transpose of words
 * inside each 128-bit lane, then a 4x4 transpose of the lanes.
 */
static TARGET inline void transpose16(__m512i r[16])
{
	__m512i t[16], u[16];
#pragma GCC unroll 16
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
#pragma GCC unroll 16
	for (int i = 0; i < 16; i += 4) {
		u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
#pragma GCC unroll 16
	for (int k = 0; k < 4; k++) {
		__m512i a = u[k], b = u[4 + k], c = u[8 + k], d = u[12 + k];
		__m512i x0 = _mm512_shuffle_i32x4(a, b, 0x44), x1 = _mm512_shuffle_i32x4(a, b, 0xEE);
		__m512i y0 = _mm512_shuffle_i32x4(c, d, 0x44), y1 = _mm512_shuffle_i32x4(c, d, 0xEE);
		r[k] = _mm512_shuffle_i32x4(x0, y0, 0x88);
		r[4 + k] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
		r[8 + k] = _mm512_shuffle_i32x4(x1, y1, 0x88);
		r[12 + k] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
	}
}

static TARGET inline void load_msg(const uint8_t *in, size_t stride, size_t off, __m512i m[16])
{
#pragma GCC unroll 16
	for (int l = 0; l < 16; l++) {
		m[l] = LOADU(in + l * stride + off);
	}
	transpose16(m);
}

#include "blake3_simd.h"
