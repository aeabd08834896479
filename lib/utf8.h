#ifndef MTC_UTF8_H
#define MTC_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * The length of the well-formed UTF-8 sequence at p, which ends before end:
 * 1 for ASCII; shortest form, no surrogate, at most U+10FFFF; 0 if there is none.
 */
size_t mtc_utf8_len(const unsigned char *p, const unsigned char *end);

/* The UTF-8 of the code point cp (at most U+10FFFF) into out: 1 to 4 bytes, their count. */
size_t mtc_utf8_put(char *out, uint32_t cp);

#endif
