#ifndef MTC_DIGEST_COPY_H
#define MTC_DIGEST_COPY_H

#include "digest.h"

/*
 * Copies the first size bytes of the open file in to the open file out (both
 * from offset 0), on up to threads threads (0: one per online CPU), and gives
 * the digest (digest.h) of the bytes handed to out: each piece is hashed in
 * the buffer it is written from, so what lands is what was hashed, with no
 * second read of either file. progress (may be NULL) gets every piece's
 * length, from any thread. 0, or -1 with errno (ENODATA: in is shorter).
 */
int mtc_digest_copy(int in, int out, long long size, int threads,
		    void (*progress)(void *arg, long long n), void *arg, char digest[MTC_DIGEST_LEN]);

#endif
