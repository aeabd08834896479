/*
 * A copy that hashes what it writes (digest_copy.h). The file is cut into
 * units of UNIT_CHUNKS whole BLAKE3 chunks; threads take units from a shared
 * counter, read each into their own buffer (small enough to stay in cache),
 * hash it there as one subtree and write it at its place. The last unit is
 * kept and hashed last, on top of the units' chaining values, in order.
 */
#include "digest_copy.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blake3/blake3.h"
#include "cpu_count.h"
#include "fsutil.h"
#include "threads.h"
#include "xalloc.h"

#define UNIT_CHUNKS 1024
#define UNIT ((long long)UNIT_CHUNKS * MTC_BLAKE3_CHUNK_LEN)

struct copy {
	int in, out;
	long long size, last; /* last: the index of the unit holding the last byte */
	uint8_t *cvs;	      /* one per unit before the last */
	uint8_t *tail;
	size_t tail_len;
	atomic_llong next;
	atomic_int err;
	void (*progress)(void *arg, long long n);
	void *arg;
};

static void *copy_units(void *arg)
{
	struct copy *c = arg;
	uint8_t *buf = xmalloc((size_t)(c->size < UNIT ? c->size : UNIT));

	for (long long u; !atomic_load(&c->err) && (u = atomic_fetch_add(&c->next, 1)) <= c->last;) {
		long long off = u * UNIT;
		size_t len = (size_t)(c->size - off < UNIT ? c->size - off : UNIT);
		if (mtc_pread_all(c->in, buf, len, off) < 0 ||
		    mtc_pwrite_all(c->out, buf, len, off) < 0) {
			int e = errno, none = 0;
			atomic_compare_exchange_strong(&c->err, &none, e ? e : EIO);
			break;
		}
		if (u < c->last)
			mtc_blake3_subtree(buf, UNIT_CHUNKS, (uint64_t)u * UNIT_CHUNKS,
					   c->cvs + (size_t)u * MTC_BLAKE3_OUT_LEN);
		else {
			c->tail = buf;
			c->tail_len = len;
			buf = NULL;
		}
		if (c->progress)
			c->progress(c->arg, (long long)len);
	}
	free(buf);
	return NULL;
}

int mtc_digest_copy(int in, int out, long long size, int threads,
		    void (*progress)(void *arg, long long n), void *arg, char digest[MTC_DIGEST_LEN])
{
	struct copy c = { .in = in, .out = out, .size = size, .progress = progress, .arg = arg };
	struct mtc_blake3 *h = xmalloc(sizeof *h);
	uint8_t raw[MTC_BLAKE3_OUT_LEN];

	mtc_blake3_init(h);
	if (size > 0) {
		c.last = (size - 1) / UNIT;
		c.cvs = xmalloc((size_t)(c.last ? c.last : 1) * MTC_BLAKE3_OUT_LEN);
		if (threads <= 0)
			threads = mtc_cpu_count();
		mtc_run_threads((size_t)(c.last + 1 < threads ? c.last + 1 : threads), copy_units, &c);
		if (!atomic_load(&c.err)) {
			for (long long u = 0; u < c.last; u++)
				mtc_blake3_push_subtree(h, c.cvs + (size_t)u * MTC_BLAKE3_OUT_LEN,
							UNIT_CHUNKS);
			mtc_blake3_update(h, c.tail, c.tail_len);
		}
		free(c.cvs);
		free(c.tail);
	}
	mtc_blake3_final(h, raw, sizeof raw);
	free(h);
	if (atomic_load(&c.err)) {
		errno = atomic_load(&c.err);
		return -1;
	}
	mtc_hex(raw, sizeof raw, digest);
	return 0;
}
