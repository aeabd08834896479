#include <immintrin.h>

#include "blake3_impl.h"

#define W 4
#define VEC __m128i
#define TARGET __attribute__((target("sse4.1")))
#define MANY_FN mtc_b3_many_sse41
#define LOADU(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define STOREU(p, x) _mm_storeu_si128((__m128i *)(void *)(p), x)
#define SET1(x) _mm_set1_epi32((int)(x))
#define ADD(a, b) _mm_add_epi32(a, b)
#define XOR(a, b) _mm_xor_si128(a, b)
#define ROT16(x) _mm_shuffle_epi8(x, _mm_set_epi8(13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2))
#define ROT8(x) _mm_shuffle_epi8(x, _mm_set_epi8(12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1))
#define ROT12(x) _mm_or_si128(_mm_srli_epi32(x, 12), _mm_slli_epi32(x, 20))
#define ROT7(x) _mm_or_si128(_mm_srli_epi32(x, 7), _mm_slli_epi32(x, 25))

static TARGET B3_INLINE void transpose4(__m128i *a, __m128i *b, __m128i *c, __m128i *d)
{
	__m128i t0 = _mm_unpacklo_epi32(*a, *b), t1 = _mm_unpackhi_epi32(*a, *b);
	__m128i t2 = _mm_unpacklo_epi32(*c, *d), t3 = _mm_unpackhi_epi32(*c, *d);
	*a = _mm_unpacklo_epi64(t0, t2);
	*b = _mm_unpackhi_epi64(t0, t2);
	*c = _mm_unpacklo_epi64(t1, t3);
	*d = _mm_unpackhi_epi64(t1, t3);
}

static TARGET B3_INLINE void load_msg(const uint8_t *in, size_t stride, size_t off, __m128i m[16])
{
#pragma GCC unroll 16
	for (int g = 0; g < 4; g++) {
#pragma GCC unroll 16
		for (int l = 0; l < 4; l++)
			m[4 * g + l] = LOADU(in + l * stride + off + 16 * g);
		transpose4(&m[4 * g], &m[4 * g + 1], &m[4 * g + 2], &m[4 * g + 3]);
	}
}

static TARGET B3_INLINE void store_cvs(const __m128i h[8], uint8_t *out)
{
	__m128i a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	transpose4(&a, &b, &c, &d);
	transpose4(&e, &f, &g, &k);
	STOREU(out, a);
	STOREU(out + 16, e);
	STOREU(out + 32, b);
	STOREU(out + 48, f);
	STOREU(out + 64, c);
	STOREU(out + 80, g);
	STOREU(out + 96, d);
	STOREU(out + 112, k);
}

#include "blake3_simd.h"
