/* The one hash of lib/'s tables (see hash.h). */
#include "hash.h"

#include <string.h>

uint64_t mtc_hash(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 0x9E3779B97F4A7C15ULL ^ seed ^ n, w;
	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
		h ^= h >> 32;
	}
	for (w = 0; n; n--)
		w = w << 8 | b[n - 1];
	h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
	return (h ^ h >> 29) | 1;
}
