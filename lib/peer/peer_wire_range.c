/*
 * Writing and hashing what arrives, a whole file or a range of one, and
 * joining a file's ranges into its digest (peer_wire.h). A range's units
 * are BLAKE3 subtrees of UNIT_CHUNKS chunks at the unit's place in the
 * file; the file's last unit (1 to MTC_WIRE_UNIT bytes) is kept as bytes,
 * since the root must be finalised over real input.
 */
#include "peer_wire.h"
#include "peer_wire_admit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "log.h"
#include "threads.h"
#include "xalloc.h"

#define UNIT_CHUNKS (MTC_WIRE_UNIT / MTC_BLAKE3_CHUNK_LEN)
#define RESERVE_UNITS (1 << 15) /* 1 MiB of chaining values: a range of 2 GiB */
/*
 * A smaller block is written on the caller's thread: handing it over costs
 * more than the work, and a connection waiting for idle CPU time over a few
 * bytes keeps its staging and its idle timeout waiting too.
 */
#define PUT_INLINE_MAX (64 << 10)

/* The file's last unit: the one whose bytes are kept. */
static uint64_t last_unit(const struct mtc_wire_entry *w)
{
	return (uint64_t)(w->file_size - 1) / MTC_WIRE_UNIT;
}

void mtc_wire_hash_start(struct mtc_wire_hash *h, struct mtc_wire_entry *w)
{
	memset(h, 0, sizeof *h);
	h->w = w;
	if (!w->file_size) {
		h->whole = xmalloc(sizeof *h->whole);
		mtc_blake3_init(h->whole);
		return;
	}
	h->next = (uint64_t)w->off / MTC_WIRE_UNIT;
	/* taken here, as the updates may run on a pool's thread (threads.h): room for a range of
	   up to RESERVE_UNITS units, and more only as they arrive, not as the range claims */
	h->cv_cap = w->size / MTC_WIRE_UNIT < RESERVE_UNITS ? (size_t)(w->size / MTC_WIRE_UNIT) + 1
							    : RESERVE_UNITS;
	w->cvs = xrealloc(w->cvs, h->cv_cap * MTC_BLAKE3_OUT_LEN);
	h->unit = xmalloc(MTC_WIRE_UNIT);
}

/* A whole unit of the range at b: hashed, or kept when it is the file's last. */
static void unit_done(struct mtc_wire_hash *h, const uint8_t *b, size_t len)
{
	struct mtc_wire_entry *w = h->w;
	if (h->next == last_unit(w)) { /* the gathering buffer becomes the tail: nothing allocated */
		if (b != h->unit)
			memcpy(h->unit, b, len);
		w->tail = h->unit;
		w->tail_len = len;
		h->unit = NULL;
	} else {
		if (w->ncv == h->cv_cap) {
			h->cv_cap = h->cv_cap ? 2 * h->cv_cap : 64;
			w->cvs = xrealloc(w->cvs, h->cv_cap * MTC_BLAKE3_OUT_LEN);
		}
		mtc_blake3_subtree(b, UNIT_CHUNKS, h->next * UNIT_CHUNKS,
				   w->cvs + MTC_BLAKE3_OUT_LEN * w->ncv++);
	}
	h->next++;
}

void mtc_wire_hash_update(struct mtc_wire_hash *h, const void *data, size_t len)
{
	const uint8_t *p = data;
	if (h->whole) {
		mtc_blake3_update(h->whole, p, len);
		return;
	}
	while (len) {
		if (!h->have && len >= MTC_WIRE_UNIT) {
			unit_done(h, p, MTC_WIRE_UNIT);
			p += MTC_WIRE_UNIT;
			len -= MTC_WIRE_UNIT;
			continue;
		}
		if (!h->unit) /* past the file's last unit: the callers' size checks keep this from happening */
			h->unit = xmalloc(MTC_WIRE_UNIT);
		size_t k = MTC_WIRE_UNIT - h->have < len ? MTC_WIRE_UNIT - h->have : len;
		memcpy(h->unit + h->have, p, k);
		h->have += k;
		p += k;
		len -= k;
		if (h->have == MTC_WIRE_UNIT) {
			unit_done(h, h->unit, MTC_WIRE_UNIT);
			h->have = 0;
		}
	}
}

struct put {
	int fd;
	struct mtc_wire_hash *h;
	const void *buf;
	size_t len;
	long long at;
	int rc, err;
};

static void put_block(void *arg)
{
	struct put *p = arg;
	const struct mtc_wire_entry *w = p->h ? p->h->w : NULL;

	p->rc = w && w->file_size ? mtc_wire_write_range(p->fd, p->buf, p->len, w->off + p->at)
				  : mtc_write_all(p->fd, p->buf, p->len);
	if (p->rc < 0)
		p->err = errno;
	else if (p->h)
		mtc_wire_hash_update(p->h, p->buf, p->len);
}

int mtc_wire_put(struct mtc_bg_pool *pool, int fd, struct mtc_wire_hash *h, const void *buf, size_t len,
		 long long at)
{
	struct put p = { .fd = fd, .h = h, .buf = buf, .len = len, .at = at };

	if (len < PUT_INLINE_MAX)
		put_block(&p);
	else
		mtc_bg_call(pool, put_block, &p);
	errno = p.err;
	return p.rc;
}

void mtc_wire_hash_end(struct mtc_wire_hash *h)
{
	if (h->whole) {
		uint8_t out[MTC_BLAKE3_OUT_LEN];
		mtc_blake3_final(h->whole, out, sizeof out);
		mtc_hex(out, sizeof out, h->w->digest);
		free(h->whole);
	} else if (h->have) {
		unit_done(h, h->unit, h->have); /* a short unit ends only the file's last range */
	}
	free(h->unit);
	memset(h, 0, sizeof *h);
}

/* Ranges after the whole entries, each file's in order. */
static int by_path_then_range(const void *x, const void *y)
{
	const struct mtc_wire_entry *a = x, *b = y;
	int c = strcmp(a->path, b->path);
	if (c)
		return c;
	if (!a->file_size != !b->file_size)
		return a->file_size ? 1 : -1;
	return a->off < b->off ? -1 : a->off > b->off;
}

static void entry_free(struct mtc_wire_entry *e)
{
	free(e->path);
	free(e->cvs);
	free(e->tail);
}

/* The digest of the file whose ranges are r[0..n), which cover it in order. */
static int join_file(struct mtc_wire_entry *r, size_t n, char digest[66], char *err, size_t errlen)
{
	struct mtc_blake3 *h = xmalloc(sizeof *h);
	uint8_t out[MTC_BLAKE3_OUT_LEN];
	char file[216] = "the file"; /* a one-file object's ranges have no path */
	long long at = 0;
	int rc = 0;

	if (*r->path)
		snprintf(file, sizeof file, "'%.200s'", r->path);

	mtc_blake3_init(h);
	for (size_t i = 0; i < n && !rc; i++) {
		if (r[i].off != at || r[i].file_size != r[0].file_size || r[i].is_dir)
			rc = mtc_fail(err, errlen, "%s: its ranges overlap or leave a gap at %lld", file,
				      at);
		for (size_t u = 0; u < r[i].ncv && !rc; u++)
			mtc_blake3_push_subtree(h, r[i].cvs + MTC_BLAKE3_OUT_LEN * u, UNIT_CHUNKS);
		at += r[i].size;
	}
	if (!rc && (at != r[0].file_size || !r[n - 1].tail))
		rc = mtc_fail(err, errlen, "%s: %lld of its %lld bytes arrived", file, at,
			      r[0].file_size);
	if (!rc) {
		mtc_blake3_update(h, r[n - 1].tail, r[n - 1].tail_len);
		mtc_blake3_final(h, out, sizeof out);
		mtc_hex(out, sizeof out, digest);
	}
	free(h);
	return rc;
}

int mtc_wire_join(struct mtc_wire_list *l, char *err, size_t errlen)
{
	size_t out = 0, i = 0;
	int rc = 0;

	if (l->n) /* a session's list is NULL until a range arrives; qsort wants a pointer */
		qsort(l->e, l->n, sizeof *l->e, by_path_then_range);
	while (i < l->n) {
		size_t j = i + 1;
		while (j < l->n && !strcmp(l->e[j].path, l->e[i].path))
			j++;
		if (!rc && j - i > 1 && !l->e[i].file_size)
			rc = mtc_fail(err, errlen, "'%.200s' arrived more than once", l->e[i].path);
		if (!rc && l->e[i].file_size) {
			char digest[66];
			if (!(rc = join_file(&l->e[i], j - i, digest, err, errlen))) {
				struct mtc_wire_entry whole = { .path = l->e[i].path,
								.size = l->e[i].file_size };
				memcpy(whole.digest, digest, sizeof digest);
				l->e[i].path = NULL;
				for (size_t k = i; k < j; k++)
					entry_free(&l->e[k]);
				l->e[out++] = whole;
				i = j;
				continue;
			}
		}
		for (; i < j; i++)
			l->e[out++] = l->e[i];
	}
	l->n = out;
	return rc;
}
