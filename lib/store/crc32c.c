#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u /* reflected Castagnoli */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/* Slicing-by-8. */
uint32_t mtc_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	pthread_once(&table_once, make_table);
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
		      table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

/*
 * Combining: with the CRC as a polynomial over GF(2) in reflected bit order
 * (bit 31 is x^0), crc(A B) = crc(A) * x^(8 |B|) + crc(B) mod P; the
 * pre- and post-inversion cancel out. x^(8n) comes from the powers x^(2^k).
 */
static uint32_t mulmod(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t bit = 1u << 31; bit; bit >>= 1) {
		if (a & bit)
			p ^= b;
		b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
	}
	return p;
}

/* x^(8n) mod P. */
static uint32_t x_pow_8n(uint64_t n)
{
	uint32_t result = 1u << 31, sq = 1u << 23; /* x^0; x^8 */

	while (n) {
		if (n & 1)
			result = mulmod(result, sq);
		sq = mulmod(sq, sq);
		n >>= 1;
	}
	return result;
}

#if defined(__x86_64__)
/*
 * The crc32 instruction takes three cycles but can start one a cycle, so
 * three runs over three neighbouring blocks go at once; each earlier run is
 * then carried over the later blocks' length by a table (see shift below).
 */
#define LONG_BLOCK 4096
#define SHORT_BLOCK 256

static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shifts_once = PTHREAD_ONCE_INIT;

/* Multiplying by x^(8 len) is linear: one table row per byte of the CRC. */
static void make_shift(uint32_t t[4][256], size_t len)
{
	uint32_t k = x_pow_8n(len);

	for (int j = 0; j < 4; j++)
		for (uint32_t b = 0; b < 256; b++)
			t[j][b] = mulmod(b << (8 * j), k);
}

static void make_shifts(void)
{
	make_shift(shift_long, LONG_BLOCK);
	make_shift(shift_short, SHORT_BLOCK);
}

/* A raw CRC register carried over as many zero bytes as the table t was made for. */
static uint64_t shift(const uint32_t t[4][256], uint64_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][(c >> 24) & 0xff];
}

__attribute__((target("sse4.2"))) static uint64_t three_way(uint64_t c, const unsigned char **p,
							    size_t *len, size_t block,
							    const uint32_t t[4][256])
{
	for (; *len >= 3 * block; *p += 3 * block, *len -= 3 * block) {
		const unsigned char *a = *p, *b = a + block, *d = b + block;
		uint64_t c1 = 0, c2 = 0;

		for (size_t i = 0; i < block; i += 8) {
			uint64_t x, y, z;
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			memcpy(&z, d + i, 8);
			c = __builtin_ia32_crc32di(c, x);
			c1 = __builtin_ia32_crc32di(c1, y);
			c2 = __builtin_ia32_crc32di(c2, z);
		}
		c = shift(t, c) ^ c1;
		c = shift(t, c) ^ c2;
	}
	return c;
}

/* The unaligned head and the tail a byte at a time. */
__attribute__((target("sse4.2"))) uint32_t mtc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	pthread_once(&shifts_once, make_shifts);
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	c = three_way(c, &p, &len, LONG_BLOCK, shift_long);
	c = three_way(c, &p, &len, SHORT_BLOCK, shift_short);
	while (len >= 8) {
		uint64_t a;
		memcpy(&a, p, 8);
		c = __builtin_ia32_crc32di(c, a);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

int mtc_crc32c_hw_available(void)
{
	__builtin_cpu_init();
	return !!__builtin_cpu_supports("sse4.2");
}
#else
uint32_t mtc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return mtc_crc32c_portable(crc, buf, len);
}

int mtc_crc32c_hw_available(void) { return 0; }
#endif

uint32_t mtc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static int hw = -1;
	if (hw < 0)
		hw = mtc_crc32c_hw_available();
	return hw ? mtc_crc32c_hw(crc, buf, len) : mtc_crc32c_portable(crc, buf, len);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void mtc_crc32c_base64(uint32_t crc, char out[9])
{
	unsigned char b[4] = { crc >> 24, crc >> 16, crc >> 8, crc };
	uint32_t v = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];

	out[0] = b64[v >> 18];
	out[1] = b64[(v >> 12) & 63];
	out[2] = b64[(v >> 6) & 63];
	out[3] = b64[v & 63];
	v = (uint32_t)b[3] << 16;
	out[4] = b64[v >> 18];
	out[5] = b64[(v >> 12) & 63];
	out[6] = '=';
	out[7] = '=';
	out[8] = '\0';
}

int mtc_crc32c_from_base64(const char *s, uint32_t *crc)
{
	uint64_t v = 0;

	if (strlen(s) != 8 || strcmp(s + 6, "=="))
		return -1;
	for (int i = 0; i < 6; i++) {
		const char *at = s[i] ? strchr(b64, s[i]) : NULL;
		if (!at)
			return -1;
		v = v << 6 | (uint64_t)(at - b64);
	}
	if (v & 0xf) /* 36 bits carry 32: the last 4 must be zero */
		return -1;
	*crc = (uint32_t)(v >> 4);
	return 0;
}

uint32_t mtc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return mulmod(crc_a, x_pow_8n(len_b)) ^ crc_b;
}
