#include <immintrin.h>

#include "blake3_impl.h"

#define W 8
#define VEC __m256i
#define TARGET __attribute__((target("avx2")))
#define MANY_FN mtc_b3_many_avx2
#define LOADU(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STOREU(p, x) _mm256_storeu_si256((__m256i *)(void *)(p), x)
#define SET1(x) _mm256_set1_epi32((int)(x))
#define ADD(a, b) _mm256_add_epi32(a, b)
#define XOR(a, b) _mm256_xor_si256(a, b)
#define ROT16(x)                                                                                     \
	_mm256_shuffle_epi8(x, _mm256_set_epi8(13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2, \
					       13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2))
#define ROT8(x)                                                                                      \
	_mm256_shuffle_epi8(x, _mm256_set_epi8(12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1, \
					       12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1))
#define ROT12(x) _mm256_or_si256(_mm256_srli_epi32(x, 12), _mm256_slli_epi32(x, 20))
#define ROT7(x) _mm256_or_si256(_mm256_srli_epi32(x, 7), _mm256_slli_epi32(x, 25))

/* Rows r[0..7] of 8 words become columns. */
static TARGET B3_INLINE void transpose8(__m256i r[8])
{
	__m256i t[8], u[8];
#pragma GCC unroll 16
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
	}
#pragma GCC unroll 16
	for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
#pragma GCC unroll 16
	for (int k = 0; k < 4; k++) {
		r[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
		r[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
	}
}

static TARGET B3_INLINE void load_msg(const uint8_t *in, size_t stride, size_t off, __m256i m[16])
{
#pragma GCC unroll 16
	for (int l = 0; l < 8; l++) {
		m[l] = LOADU(in + l * stride + off);
		m[8 + l] = LOADU(in + l * stride + off + 32);
	}
	transpose8(m);
	transpose8(m + 8);
}

static TARGET B3_INLINE void store_cvs(const __m256i h[8], uint8_t *out)
{
	__m256i r[8];
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++)
		r[i] = h[i];
	transpose8(r);
#pragma GCC unroll 8
	for (int l = 0; l < 8; l++)
		STOREU(out + 32 * l, r[l]);
}

#include "blake3_simd.h"
