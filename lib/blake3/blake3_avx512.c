#include <immintrin.h>

#include "blake3_impl.h"

#define W 16
#define VEC __m512i
#define TARGET __attribute__((target("avx512f,tune=icelake-server")))
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
static TARGET B3_INLINE void transpose16(__m512i r[16])
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

static TARGET B3_INLINE void load_msg(const uint8_t *in, size_t stride, size_t off, __m512i m[16])
{
#pragma GCC unroll 16
	for (int l = 0; l < 16; l++) {
		m[l] = LOADU(in + l * stride + off);
	}
	transpose16(m);
}

/* Word i of lane l in h[i] becomes word i of CV l: 4x4 word transposes, then 128-bit pairs. */
static TARGET B3_INLINE void store_cvs(const __m512i h[8], uint8_t *out)
{
	__m512i t[8];
#pragma GCC unroll 2
	for (int g = 0; g < 8; g += 4) {
		__m512i a = _mm512_unpacklo_epi32(h[g], h[g + 1]);
		__m512i b = _mm512_unpackhi_epi32(h[g], h[g + 1]);
		__m512i c = _mm512_unpacklo_epi32(h[g + 2], h[g + 3]);
		__m512i d = _mm512_unpackhi_epi32(h[g + 2], h[g + 3]);
		t[g] = _mm512_unpacklo_epi64(a, c);
		t[g + 1] = _mm512_unpackhi_epi64(a, c);
		t[g + 2] = _mm512_unpacklo_epi64(b, d);
		t[g + 3] = _mm512_unpackhi_epi64(b, d);
	}
	/* t[k] (k < 4) holds words 0-3 of lanes k, 4 + k, 8 + k, 12 + k; t[4 + k] words 4-7. */
	const __m512i lo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
	const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m512i x = _mm512_permutex2var_epi64(t[k], lo, t[4 + k]);
		__m512i y = _mm512_permutex2var_epi64(t[k], hi, t[4 + k]);
		_mm256_storeu_si256((__m256i *)(void *)(out + 32 * k), _mm512_castsi512_si256(x));
		_mm256_storeu_si256((__m256i *)(void *)(out + 32 * (4 + k)),
				    _mm512_extracti64x4_epi64(x, 1));
		_mm256_storeu_si256((__m256i *)(void *)(out + 32 * (8 + k)), _mm512_castsi512_si256(y));
		_mm256_storeu_si256((__m256i *)(void *)(out + 32 * (12 + k)),
				    _mm512_extracti64x4_epi64(y, 1));
	}
}

#include "blake3_simd.h"
