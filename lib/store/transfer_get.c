/*
 * Downloads on the transfer engine (transfer.h).
 * Invariants: a download writes to a temporary name, pins every range to
 * one generation, checks the CRC32C the server reports (or says it could
 * not) and is renamed into place only when whole; a sidecar is replaced
 * atomically and every range it names is checked again before it is kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "crc32c.h"
#include "fault.h"
#include "fsutil.h"
#include "log.h"
#include "tmpname.h"
#include "transfer.h"
#include "xalloc.h"

#define SLICE_MIN (256LL << 10) /* the smallest slice worth its own request */
#define SLICE_SAVE (16LL << 20) /* a slice records its progress this often, or 4 times */

/*
 * A get opens with a short ranged GET (D_FIRST) that tells the object's size,
 * generation and CRC32C. A smaller object than the slice threshold then goes
 * on in one stream (D_WHOLE), its CRC32C computed as the bytes arrive. A
 * larger one is sliced: the file is pre-allocated and the bytes still missing
 * are cut into up to `slices` ranges, each a child op (D_PART) that writes at
 * its offset and keeps the CRC32C of its range; once all are in, the ranges'
 * CRC32Cs are combined and compared with the object's. With a sidecar the
 * whole ranges are recorded as they grow, so that a killed get continues with
 * the missing ones (D_RESUME), from the same generation.
 */
enum { D_FIRST, D_WHOLE, D_PART, D_WAIT, D_RESUME };

static const struct op_type download_type;

static void save_slices(struct op *p);
static void spawn_slices(struct op *p);

static int dl_prepare(struct op *op, struct req *r)
{
	struct xfer *g = op->xf;

	if (op->state == D_RESUME) {
		op->state = D_WAIT;
		spawn_slices(op);
		op->now = V_WAIT;
		return 1;
	}
	g->api->get(op, r);
	r->sink_fd = op->parent ? op->parent->fd : op->fd;
	r->sink_off = op->off + op->done;
	r->crc_on = 1;
	r->crc = op->crc;
	if (op->state == D_FIRST)
		xfer_header(r, "Range: bytes=%lld-%lld", op->done, g->first - 1);
	else if (op->state == D_PART)
		xfer_header(r, "Range: bytes=%lld-%lld", op->off + op->done, op->off + op->len - 1);
	else if (op->done)
		xfer_header(r, "Range: bytes=%lld-", op->done);
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Drops empty ranges and sorts the rest. */
static void tidy_slices(struct op *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_sl; i++)
		if (p->sl[i].len > 0)
			p->sl[n++] = p->sl[i];
	p->n_sl = n;
	if (n) /* sl is NULL before the first slice */
		qsort(p->sl, n, sizeof *p->sl, cmp_slice);
}

static void spawn_slice(struct op *p, long long off, long long len)
{
	struct op *c = xfer_op_new(p->s, &download_type);

	c->parent = p;
	c->name = xstrdup(p->name);
	c->state = D_PART;
	c->off = off;
	c->len = len;
	c->generation = p->generation;
	c->slot = p->n_sl;
	xfer_add_slice(p, off, 0, 0);
	p->pending++;
	xfer_add(p->xf->engine, c);
}

/* Cuts the bytes the ranges do not cover into up to g->slices children. */
static void spawn_slices(struct op *p)
{
	long long missing = 0, at = 0, piece;
	size_t n;

	tidy_slices(p);
	n = p->n_sl;
	for (size_t i = 0; i <= n; i++) {
		long long end = i < n ? p->sl[i].off : p->size;
		missing += end > at ? end - at : 0;
		if (i < n)
			at = p->sl[i].off + p->sl[i].len;
	}
	piece = (missing + p->xf->slices - 1) / p->xf->slices;
	if (piece < SLICE_MIN)
		piece = SLICE_MIN;
	at = 0;
	for (size_t i = 0; i <= n; i++) {
		long long end = i < n ? p->sl[i].off : p->size;
		while (at < end) {
			long long gap = end - at, k = (gap + piece - 1) / piece, len = (gap + k - 1) / k;
			spawn_slice(p, at, len);
			at += len;
		}
		if (i < n)
			at = p->sl[i].off + p->sl[i].len;
	}
	save_slices(p);
}

/* The sidecar: a temporary + rename (a kill leaves the old or the new one); a range is re-checked on resume. */
static void save_slices(struct op *p)
{
	json_t *j, *a;
	struct mtc_tmp t;
	char *text;
	char b64[9];

	if (!p->sidecar)
		return;
	a = json_array();
	for (size_t i = 0; i < p->n_sl; i++)
		if (p->sl[i].len > 0)
			json_array_append_new(a, json_pack("[I, I, I]", (json_int_t)p->sl[i].off,
							   (json_int_t)p->sl[i].len,
							   (json_int_t)p->sl[i].crc));
	j = json_pack("{s:I, s:I, s:o}", "generation", (json_int_t)p->generation, "size",
		      (json_int_t)p->size, "slices", a);
	if (p->have_expect) {
		mtc_crc32c_base64(p->expect_crc, b64);
		json_object_set_new(j, "crc32c", json_string(b64));
	}
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (mtc_tmp_beside(p->sidecar, &t) < 0 || mtc_write_all(t.fd, text, strlen(text)) < 0 ||
	    rename(t.path, p->sidecar) < 0) {
		mtc_debug("cannot record the slices of '%s' in '%s': %s", p->name, p->sidecar,
			  strerror(errno));
		mtc_tmp_discard(&t);
	}
	mtc_tmp_release(&t);
	free(text);
}

/* A child of a sliced download has done bytes of its range with crc (op_type.received). */
static void slice_progress(struct op *c, long long done, uint32_t crc)
{
	struct op *p = c->parent;
	struct slice *sl = &p->sl[c->slot];
	long long every = c->len / 4 < SLICE_SAVE ? c->len / 4 : SLICE_SAVE;

	sl->len = done;
	sl->crc = crc;
	if (p->sidecar && (done - c->saved >= every || done == c->len)) {
		c->saved = done;
		save_slices(p);
		mtc_fault_stall("slice-saved", p->name);
	}
}

/* The whole object is in the temporary file and its CRC32C is got: check it and make it visible. */
static enum verdict dl_verify(struct op *op, uint32_t got)
{
	int e;

	if (!op->have_expect) {
		mtc_debug("'%s': the server sent no crc32c; not checked", op->name);
	} else if (got != op->expect_crc) {
		snprintf(op->lasterr, sizeof op->lasterr,
			 "cannot download '%s': crc32c mismatch: received %08x, stored %08x", op->name,
			 got, op->expect_crc);
		if (op->crc_retries++ < 2 && mtc_now() < op->deadline) {
			mtc_warn("%s; downloading again", op->lasterr);
			if (ftruncate(op->fd, 0) < 0)
				return xfer_fail(op, errno, "cannot truncate '%s':", op->tmp);
			op->done = op->crc = 0;
			op->generation = op->x ? op->x->generation : 0;
			op->state = op->resume && !op->sl ? D_WHOLE : D_FIRST;
			free(op->sl);
			op->sl = NULL;
			op->n_sl = 0;
			if (op->sidecar)
				unlink(op->sidecar);
			return V_RETRY;
		}
		op->err = EIO;
		return V_FAIL;
	}
	if (fsync(op->fd) < 0) {
		e = errno;
		return xfer_fail(op, e, "cannot write '%s': %s", op->tmp, strerror(e));
	}
	/* the temporary's lock (tmpname.h) is held until it has its name */
	if (rename(op->tmp, op->path) < 0 || mtc_fsync_parent(op->path) < 0) {
		e = errno;
		return xfer_fail(op, e, "cannot rename into '%s': %s", op->path, strerror(e));
	}
	e = close(op->fd) < 0 ? errno : 0;
	op->fd = -1;
	if (e)
		return xfer_fail(op, e, "cannot write '%s': %s", op->path, strerror(e));
	if (op->sidecar)
		unlink(op->sidecar);
	return V_DONE;
}

/* All slices are in: the ranges must cover the object; their CRC32Cs combined are the object's. */
static enum verdict dl_verify_slices(struct op *p)
{
	uint32_t crc = 0;
	long long at = 0;

	tidy_slices(p);
	for (size_t i = 0; i < p->n_sl; i++) {
		if (p->sl[i].off != at)
			return xfer_fail(p, EIO, "cannot download '%s': bytes %lld to %lld are missing",
					 p->name, at, p->sl[i].off);
		crc = mtc_crc32c_combine(crc, p->sl[i].crc, (uint64_t)p->sl[i].len);
		at += p->sl[i].len;
	}
	if (at != p->size)
		return xfer_fail(p, EIO, "cannot download '%s': %lld of %lld bytes", p->name, at,
				 p->size);
	return dl_verify(p, crc);
}

/*
 * The first range is in and the object is big: pre-allocate the file (so that
 * a full disk shows now) and slice the rest. On tmpfs the file is only sized:
 * allocating there zeroes memory that the slices overwrite (0.3 s a GiB).
 */
static enum verdict start_slicing(struct op *op)
{
	struct statfs fs;
	int e = fstatfs(op->fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC
			? EOPNOTSUPP
			: posix_fallocate(op->fd, 0, op->size);

	if (e == EOPNOTSUPP || e == EINVAL)
		e = ftruncate(op->fd, op->size) < 0 ? errno : 0;
	if (e)
		return xfer_fail(op, e, "cannot allocate %lld bytes for '%s': %s", op->size, op->tmp,
				 strerror(e));
	free(op->sl);
	op->sl = NULL;
	op->n_sl = 0;
	xfer_add_slice(op, 0, op->done, op->crc);
	op->state = D_WAIT;
	spawn_slices(op);
	return V_WAIT;
}

static enum verdict dl_finish(struct op *op, struct req *r)
{
	long long first_len;

	op->done += r->written;
	op->crc = r->crc;
	if (op->state == D_PART) {
		if (xfer_transient(r))
			return V_RETRY;
		if (r->status != 206)
			return xfer_fail_with(op, r, "cannot download");
		return op->done < op->len ? V_AGAIN : V_DONE;
	}
	if (r->generation && !op->generation)
		op->generation = r->generation;
	if (r->have_crc) {
		op->expect_crc = r->srv_crc;
		op->have_expect = 1;
	}
	if (xfer_transient(r))
		return V_RETRY;
	if (r->status == 404)
		return xfer_fail(op, ENOENT, "no such object '%s'", op->name);
	if (r->status == 416 && op->state == D_FIRST && op->done == 0) {
		op->state = D_WHOLE;
		return V_AGAIN;
	}
	if ((r->status == 416 || r->status == 200) && op->resume && op->done > r->written) {
		/* the partial is longer than the object, or the range was ignored: start over */
		if (ftruncate(op->fd, 0) < 0)
			return xfer_fail(op, errno, "cannot truncate '%s': %s", op->tmp,
					 strerror(errno));
		op->done = op->crc = 0;
		return V_AGAIN;
	}
	if (r->status == 200 && op->done == r->written) {
		op->size = op->done;
		return dl_verify(op, op->crc);
	}
	if (r->status != 206 || r->total < 0)
		return xfer_fail_with(op, r, "cannot download");
	op->size = r->total;
	if (op->state == D_WHOLE)
		return op->done < op->size ? V_AGAIN : dl_verify(op, op->crc);
	first_len = op->size < op->xf->first ? op->size : op->xf->first;
	if (op->done < first_len)
		return V_AGAIN;
	if (op->done == op->size)
		return dl_verify(op, op->crc);
	if (op->size < op->xf->threshold || op->xf->slices < 2) {
		op->state = D_WHOLE;
		return V_AGAIN;
	}
	return start_slicing(op);
}

static void dl_complete(struct op *op)
{
	struct op *p = op->parent;

	if (p) {
		if (op->err && !p->child_err) {
			p->child_err = op->err;
			snprintf(p->lasterr, sizeof p->lasterr, "%s", op->lasterr);
		}
		if (--p->pending == 0) {
			enum verdict v;
			save_slices(p);
			if (p->child_err) {
				p->err = p->child_err;
				v = V_FAIL;
			} else {
				v = dl_verify_slices(p);
			}
			xfer_settle(p->xf->engine, p, v);
		}
		return;
	}
	if (op->err && op->tmp && (!op->resume || op->err == EIO)) {
		unlink(op->tmp);
		if (op->sidecar)
			unlink(op->sidecar);
	}
	if (op->fd >= 0) {
		close(op->fd);
		op->fd = -1;
	}
	if (op->x) {
		op->x->err = op->err;
		op->x->size = op->err ? 0 : op->size;
	}
}

static const struct op_type download_type = {
	.prepare = dl_prepare, .finish = dl_finish, .complete = dl_complete, .received = slice_progress
};

/*
 * Continues a sliced partial from its sidecar: same generation, ranges inside
 * the object, each range's bytes still matching its CRC32C (those that do not
 * are fetched again). 1 if it can go on, 0 if the sidecar does not fit (then
 * start afresh), -1 on an error.
 */
static int open_sliced(struct op *op)
{
	char *text = NULL;
	size_t len;
	json_t *j, *v;
	const char *b64;
	struct stat st;
	size_t i;
	int ok;

	if (mtc_read_file(op->sidecar, 1 << 20, &text, &len) < 0)
		return errno == ENOENT ? 0 : -1;
	j = json_loadb(text, len, 0, NULL);
	free(text);
	ok = json_is_integer(json_object_get(j, "generation")) &&
	     json_integer_value(json_object_get(j, "generation")) == op->generation && op->generation &&
	     json_is_integer(json_object_get(j, "size")) && json_is_array(json_object_get(j, "slices"));
	op->size = ok ? json_integer_value(json_object_get(j, "size")) : 0;
	b64 = json_string_value(json_object_get(j, "crc32c"));
	if (ok && b64 && mtc_crc32c_from_base64(b64, &op->expect_crc) == 0)
		op->have_expect = 1;
	ok = ok && op->size > 0 && fstat(op->fd, &st) == 0 && st.st_size <= op->size;
	json_array_foreach (ok ? json_object_get(j, "slices") : NULL, i, v) {
		json_int_t off = json_integer_value(json_array_get(v, 0));
		json_int_t n = json_integer_value(json_array_get(v, 1));
		json_int_t crc = json_integer_value(json_array_get(v, 2));
		uint32_t got;
		if (off < 0 || n <= 0 || off + n > st.st_size || crc < 0 || crc > 0xffffffffLL)
			continue;
		if (xfer_crc_of_range(op->fd, off, n, &got) == 0 && got == (uint32_t)crc)
			xfer_add_slice(op, off, n, got);
		else
			mtc_debug("'%s': bytes %lld to %lld no longer match; fetching them again",
				  op->tmp, (long long)off, (long long)(off + n));
	}
	json_decref(j);
	tidy_slices(op);
	for (i = 1; ok && i < op->n_sl; i++)
		ok = op->sl[i - 1].off + op->sl[i - 1].len <= op->sl[i].off;
	if (ok && st.st_size < op->size && ftruncate(op->fd, op->size) < 0)
		return -1;
	if (!ok) {
		free(op->sl);
		op->sl = NULL;
		op->n_sl = 0;
		op->have_expect = 0;
		return 0;
	}
	op->resume = 1;
	op->state = D_RESUME;
	return 1;
}

/*
 * Continues a partial file: from its sidecar when it has one, else from its
 * last byte, fetched again so that the answer carries the object's crc32c
 * and confirms its length; the crc covers the bytes kept too.
 */
static int open_partial(struct op *op)
{
	struct stat st;
	int rc;

	op->resume = 1;
	op->state = D_WHOLE;
	op->fd = open(op->tmp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (op->fd < 0)
		return -1;
	if (op->sidecar) {
		rc = open_sliced(op);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		/* a sidecar that does not fit: what the partial holds is of no use */
		if (access(op->sidecar, F_OK) == 0) {
			unlink(op->sidecar);
			if (ftruncate(op->fd, 0) < 0)
				return -1;
			op->state = D_FIRST;
			op->size = 0;
			return 0;
		}
	}
	if (fstat(op->fd, &st) < 0)
		return -1;
	if (st.st_size == 0) { /* nothing yet: a fresh get, sliced if the object is big */
		op->state = D_FIRST;
		return 0;
	}
	op->done = (long long)st.st_size - 1;
	return xfer_crc_of_range(op->fd, 0, op->done, &op->crc);
}

/* x's download (xfer_make): a directory is made here; a file goes to a temporary beside it */
static int download_of(struct mtc_store *s, struct mtc_store_xfer *x, int flags, struct op **opp)
{
	struct op *op = *opp = xfer_op_new(s, &download_type);
	struct mtc_tmp t;

	op->name = xfer_name(s->impl, x->key);
	op->x = x;
	op->path = x->path;
	op->state = D_FIRST;
	op->generation = x->generation;
	if (x->key[strlen(x->key) - 1] == '/') {
		if (mtc_mkdir_p(x->path, 0755) == 0)
			return 1;
		xfer_fail(op, errno, "cannot create '%s': %s", x->path, strerror(errno));
		return -1;
	}
	if (x->partial) {
		op->tmp = xstrdup(x->partial);
		op->sidecar = x->slice_state ? xstrdup(x->slice_state) : NULL;
		if (open_partial(op) == 0)
			return 0;
		xfer_fail(op, errno, "cannot continue '%s': %s", op->tmp, strerror(errno));
		return -1;
	}
	if (mtc_tmp_beside(x->path, &t) == 0) {
		op->tmp = t.path;
		op->fd = t.fd;
		return 0;
	}
	xfer_fail(op, errno, "cannot create a temporary for '%s': %s", x->path, strerror(errno));
	return -1;
}

int xfer_get_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n)
{
	return xfer_run_many(s, x, n, 0, download_of);
}

int xfer_get_file(struct mtc_store *s, const char *key, const char *path)
{
	struct mtc_store_xfer x = { .key = key, .path = path };
	s->progress_done = s->progress_total = 0;
	return xfer_get_many(s, &x, 1);
}
