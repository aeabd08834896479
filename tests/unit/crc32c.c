#include <stdlib.h>
#include <string.h>

#include "store/crc32c.h"
#include "tap.h"

static const struct {
	const char *in;
	uint32_t crc;
} vectors[] = {
	{ "", 0x00000000 },
	{ "a", 0xC1D04330 },
	{ "123456789", 0xE3069283 },
	{ "The quick brown fox jumps over the lazy dog", 0x22620404 },
};

int main(void)
{
	unsigned char zeros[32] = { 0 }, ones[32], inc[32], big[100003];
	char b64[9];
	uint32_t crc;

	memset(ones, 0xff, sizeof ones);
	for (int i = 0; i < 32; i++)
		inc[i] = (unsigned char)i;
	for (size_t i = 0; i < sizeof vectors / sizeof *vectors; i++) {
		size_t n = strlen(vectors[i].in);
		is_int(mtc_crc32c_portable(0, vectors[i].in, n), vectors[i].crc, "portable '%s'",
		       vectors[i].in);
		is_int(mtc_crc32c(0, vectors[i].in, n), vectors[i].crc, "dispatched '%s'",
		       vectors[i].in);
		is_int(mtc_crc32c_hw(0, vectors[i].in, n), vectors[i].crc, "hardware '%s'",
		       vectors[i].in);
	}
	/* RFC 3720 B.4 */
	is_int(mtc_crc32c(0, zeros, 32), 0x8A9136AA, "32 zero bytes");
	is_int(mtc_crc32c(0, ones, 32), 0x62A8AB43, "32 0xff bytes");
	is_int(mtc_crc32c(0, inc, 32), 0x46DD794E, "32 incrementing bytes");
	is_int(mtc_crc32c_portable(0, inc, 32), 0x46DD794E, "the same, portable");

	srand(7);
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (unsigned char)rand();
	for (size_t off = 0; off < 9; off++) {
		uint32_t p = mtc_crc32c_portable(0, big + off, sizeof big - off);
		ok(mtc_crc32c_hw(0, big + off, sizeof big - off) == p,
		   "hardware and portable agree at offset %zu", off);
	}
	static const size_t edges[] = {
		767, 768, 769, 2303, 2304, 12287, 12288, 12289, 12288 + 2304 + 7, 3 * 12288 + 768 - 1
	};
	for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
		is_int(mtc_crc32c_hw(0, big + 8, edges[i]), mtc_crc32c_portable(0, big + 8, edges[i]),
		       "hardware and portable agree over %zu bytes, at a block's edge", edges[i]);
	crc = mtc_crc32c(0, big, 1000);
	crc = mtc_crc32c(crc, big + 1000, sizeof big - 1000);
	is_int(crc, mtc_crc32c(0, big, sizeof big), "a running checksum continues");
	for (size_t cut = 0; cut <= sizeof big; cut += sizeof big / 7 + 1) {
		uint32_t a = mtc_crc32c(0, big, cut), b = mtc_crc32c(0, big + cut, sizeof big - cut);
		is_int(mtc_crc32c_combine(a, b, sizeof big - cut), mtc_crc32c(0, big, sizeof big),
		       "combining the crc32c of the first %zu bytes with the rest's", cut);
	}
	is_int(mtc_crc32c_combine(0xE3069283, 0, 0), 0xE3069283, "combining with nothing");

	mtc_crc32c_base64(0xE3069283, b64);
	is_str(b64, "4waSgw==", "base64 of the big-endian bytes");
	ok(mtc_crc32c_from_base64("4waSgw==", &crc) == 0 && crc == 0xE3069283, "and back");
	ok(mtc_crc32c_from_base64("4waSgw=", &crc) < 0, "a short form is refused");
	ok(mtc_crc32c_from_base64("4waSg!==", &crc) < 0, "a bad character is refused");
	mtc_crc32c_base64(0, b64);
	is_str(b64, "AAAAAA==", "zero");
	ok(mtc_crc32c_hw_available() == 0 || mtc_crc32c_hw_available() == 1, "hardware probe");
	return done();
}
