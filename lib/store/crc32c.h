#ifndef MTC_CRC32C_H
#define MTC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C (Castagnoli), as GCS reports it: crc32c("123456789") = 0xE3069283.
 * Pass the previous result to continue a running checksum (start with 0).
 * Uses the SSE4.2 crc32 instruction when the CPU has it.
 */
uint32_t mtc_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t mtc_crc32c_portable(uint32_t crc, const void *buf, size_t len);
/* 0 when the hardware path is unavailable (then mtc_crc32c is the portable one). */
int mtc_crc32c_hw_available(void);
/* The CRC32C of A followed by B, from crc(A), crc(B) and B's length in bytes. */
uint32_t mtc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint32_t mtc_crc32c_hw(uint32_t crc, const void *buf, size_t len);

/* The base64 of the big-endian bytes, as in x-goog-hash: crc32c=... (9 bytes with NUL). */
void mtc_crc32c_base64(uint32_t crc, char out[9]);
/* Parses that form back; -1 if it is not one. */
int mtc_crc32c_from_base64(const char *s, uint32_t *crc);

#endif
