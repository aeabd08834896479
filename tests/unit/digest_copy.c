/*
 * mtc_digest_copy: the copy holds the source's bytes and the digest is the
 * file's (mtc_digest_file), at sizes around its 1 MiB units and on one and
 * several threads; a source shorter than asked is an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "digest_copy.h"
#include "fsutil.h"
#include "tap.h"

static long long seen;
static void count(void *arg, long long n) { (void)arg, seen += n; }

int main(void)
{
	static const long long sizes[] = { 0, 1, 1023, 1 << 20, (1 << 20) + 1, 3 << 20, (5 << 20) - 7 };
	char dir[] = "/tmp/mtc-digest-copy.XXXXXX", src[64], dst[64];
	size_t max = 5 << 20;
	unsigned char *data = malloc(max), *back = malloc(max);

	if (!mkdtemp(dir) || !data || !back)
		return 1;
	for (size_t i = 0; i < max; i++)
		data[i] = (unsigned char)(i * 7919 >> 3 ^ i % 251);
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(dst, sizeof dst, "%s/dst", dir);
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
		for (int threads = 1; threads <= 3; threads += 2) {
			long long n = sizes[k];
			char want[MTC_DIGEST_LEN], got[MTC_DIGEST_LEN] = "";
			int in, out, rc;
			FILE *f = fopen(src, "wb");
			if (!f || fwrite(data, 1, (size_t)n, f) != (size_t)n || fclose(f))
				return 1;
			in = open(src, O_RDONLY);
			out = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
			seen = 0;
			rc = mtc_digest_copy(in, out, n, threads, count, NULL, got);
			ok(rc == 0 && mtc_digest_file(src, 1, want, NULL) == 0 && !strcmp(got, want) &&
				   seen == n,
			   "%lld bytes on %d thread(s): the file's digest, every byte counted", n,
			   threads);
			memset(back, 0, max);
			ok(mtc_pread_all(out, back, (size_t)n, 0) == 0 &&
				   !memcmp(back, data, (size_t)n) && lseek(out, 0, SEEK_END) == n,
			   "%lld bytes on %d thread(s): the copy holds the source's bytes", n, threads);
			close(in);
			close(out);
		}
	int in = open(src, O_RDONLY), out = open(dst, O_RDWR | O_TRUNC);
	char got[MTC_DIGEST_LEN];
	errno = 0;
	ok(mtc_digest_copy(in, out, (6 << 20) + 5, 2, NULL, NULL, got) < 0 && errno == ENODATA,
	   "a source shorter than the size asked is ENODATA");
	close(in);
	close(out);
	unlink(src);
	unlink(dst);
	rmdir(dir);
	free(data);
	free(back);
	return done();
}
