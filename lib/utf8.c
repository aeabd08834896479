/* UTF-8, read and written (see utf8.h). */
#include "utf8.h"

size_t mtc_utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n = *p < 0x80		      ? 1
		   : *p >= 0xc2 && *p <= 0xdf ? 2
		   : *p >= 0xe0 && *p <= 0xef ? 3
		   : *p >= 0xf0 && *p <= 0xf4 ? 4
					      : 0;
	uint32_t cp;

	if (n < 2)
		return n;
	if ((size_t)(end - p) < n)
		return 0;
	cp = *p & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

size_t mtc_utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}
