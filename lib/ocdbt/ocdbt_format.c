/*
 * OCDBT objects decoded from memory (the format is described in
 * ocdbt_format.h). Invariant: a decoder either accepts the whole object, with
 * every length, bound, CRC and ordering rule checked, or returns -1 and
 * leaves nothing allocated.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/crc32c.h"
#include "ocdbt_format.h"
#include "xalloc.h"

#define fail mtc_ocdbt_fail

int mtc_ocdbt_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static size_t left(const struct mtc_ocdbt_in *in) { return (size_t)(in->end - in->p); }

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* uleb128 of at most `bits` bits: no more bytes than they need, no bits past them. */
static uint64_t varint_bits(struct mtc_ocdbt_in *in, unsigned bits)
{
	uint64_t v = 0;
	for (unsigned shift = 0; !in->bad; shift += 7) {
		if (in->p == in->end || shift >= bits) {
			in->bad = 1;
			break;
		}
		uint8_t b = *in->p++;
		if (shift + 7 > bits && (b & 0x7f) >> (bits - shift)) {
			in->bad = 1;
			break;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	return 0;
}

int mtc_ocdbt_varint(struct mtc_ocdbt_in *in, uint64_t *v)
{
	*v = varint_bits(in, 64);
	return in->bad ? -1 : 0;
}

static uint64_t u64(struct mtc_ocdbt_in *in) { return varint_bits(in, 64); }
static uint32_t u32(struct mtc_ocdbt_in *in) { return (uint32_t)varint_bits(in, 32); }

static uint16_t u16(struct mtc_ocdbt_in *in)
{
	uint32_t v = u32(in);
	if (v > 0xffff)
		in->bad = 1;
	return (uint16_t)v;
}

static uint8_t byte(struct mtc_ocdbt_in *in)
{
	if (in->bad || in->p == in->end) {
		in->bad = 1;
		return 0;
	}
	return *in->p++;
}

static const uint8_t *take(struct mtc_ocdbt_in *in, size_t n)
{
	if (in->bad || left(in) < n) {
		in->bad = 1;
		return NULL;
	}
	const uint8_t *p = in->p;
	in->p += n;
	return p;
}

static int truncated(struct mtc_ocdbt_in *in, const char *what, char *err, size_t errlen)
{
	if (!in->bad)
		return 0;
	return fail(err, errlen, "%s: bad varint or unexpected end of data", what);
}

/* Decompresses a zstd stream of one or more frames, up to MTC_OCDBT_MAX_DECODED bytes. */
static int unzstd(const uint8_t *src, size_t len, uint8_t **out, size_t *out_len, char *err,
		  size_t errlen)
{
	ZSTD_DStream *z = ZSTD_createDStream();
	size_t cap = len * 4 + 4096, n = 0, r = 1;
	uint8_t *buf = NULL;
	int rc = -1;
	if (!z || ZSTD_isError(ZSTD_initDStream(z))) {
		fail(err, errlen, "cannot start zstd");
		goto out;
	}
	if (cap > MTC_OCDBT_MAX_DECODED)
		cap = MTC_OCDBT_MAX_DECODED;
	buf = xmalloc(cap);
	ZSTD_inBuffer in = { src, len, 0 };
	while (in.pos < in.size || r != 0) {
		if (n == cap) {
			if (cap == MTC_OCDBT_MAX_DECODED) {
				fail(err, errlen, "decompressed body larger than %u bytes",
				     MTC_OCDBT_MAX_DECODED);
				goto out;
			}
			cap = cap > MTC_OCDBT_MAX_DECODED / 2 ? MTC_OCDBT_MAX_DECODED : cap * 2;
			buf = xrealloc(buf, cap);
		}
		ZSTD_outBuffer o = { buf, cap, n };
		size_t before = in.pos;
		r = ZSTD_decompressStream(z, &o, &in);
		if (ZSTD_isError(r)) {
			fail(err, errlen, "bad zstd data: %s", ZSTD_getErrorName(r));
			goto out;
		}
		if (o.pos == n && in.pos == before && o.pos < cap) {
			fail(err, errlen, "truncated zstd data");
			goto out;
		}
		n = o.pos;
	}
	*out = buf;
	*out_len = n;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	ZSTD_freeDStream(z);
	return rc;
}

int mtc_ocdbt_unframe(const uint8_t *buf, size_t len, uint32_t magic, const uint8_t **body,
		      size_t *body_len, uint8_t **owned, char *err, size_t errlen)
{
	*owned = NULL;
	if (len < 4 + 8 + 4)
		return fail(err, errlen, "too short (%zu bytes)", len);
	uint32_t m = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
	if (m != magic)
		return fail(err, errlen, "bad magic 0x%08x (want 0x%08x)", m, magic);
	uint64_t l = le(buf + 4, 8);
	if (l != len)
		return fail(err, errlen, "length in header %llu, object has %zu bytes",
			    (unsigned long long)l, len);
	if (mtc_crc32c(0, buf, len - 4) != (uint32_t)le(buf + len - 4, 4))
		return fail(err, errlen, "bad CRC-32C");
	struct mtc_ocdbt_in in = { buf + 12, buf + len - 4, 0 };
	uint32_t version = u32(&in), compression = u32(&in);
	if (truncated(&in, "header", err, errlen))
		return -1;
	if (version != 0)
		return fail(err, errlen, "unsupported format version %u", version);
	if (compression > 1)
		return fail(err, errlen, "unsupported compression format %u", compression);
	if (compression == 0) {
		*body = in.p;
		*body_len = left(&in);
		return 0;
	}
	if (unzstd(in.p, left(&in), owned, body_len, err, errlen) < 0)
		return -1;
	*body = *owned;
	return 0;
}

void mtc_ocdbt_table_free(struct mtc_ocdbt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

int mtc_ocdbt_read_table(struct mtc_ocdbt_in *in, const char *transitive, size_t tlen,
			 struct mtc_ocdbt_table *t, char *err, size_t errlen)
{
	t->v = NULL;
	t->n = 0;
	uint64_t n = u64(in);
	if (truncated(in, "data file table", err, errlen))
		return -1;
	/* every file takes at least two bytes (suffix and base lengths) */
	if (n > left(in) / 2)
		return fail(err, errlen, "data file table: %llu files in %zu bytes",
			    (unsigned long long)n, left(in));
	uint16_t *len = xcalloc(n ? 3 * n : 1, sizeof *len), *pre = len, *suf = len + n,
		 *base = len + 2 * n;
	for (uint64_t i = 1; i < n; i++)
		pre[i] = u16(in);
	for (uint64_t i = 0; i < n; i++)
		suf[i] = u16(in);
	for (uint64_t i = 0; i < n; i++)
		base[i] = u16(in);
	if (truncated(in, "data file table", err, errlen))
		goto bad;
	t->v = xcalloc(n ? n : 1, sizeof *t->v);
	for (size_t i = 0; i < n; i++) {
		size_t plen = (size_t)pre[i] + suf[i];
		size_t prev_len = i ? t->v[i - 1].len - tlen : 0;
		size_t prev_base = i ? t->v[i - 1].base_len - tlen : 0;
		if (plen > MTC_OCDBT_MAX_PATH - tlen || base[i] > plen || pre[i] > prev_len ||
		    (pre[i] > (base[i] < prev_base ? base[i] : prev_base) && base[i] != prev_base)) {
			fail(err, errlen, "data file table: bad lengths of path %zu", i);
			goto bad;
		}
		const uint8_t *s = take(in, suf[i]);
		if (!s || memchr(s, 0, suf[i])) {
			fail(err, errlen, "data file table: %s in path %zu",
			     s ? "NUL byte" : "unexpected end of data", i);
			goto bad;
		}
		char *p = xmalloc(tlen + plen + 1);
		memcpy(p, transitive, tlen);
		if (pre[i])
			memcpy(p + tlen, t->v[i - 1].path + tlen, pre[i]);
		memcpy(p + tlen + pre[i], s, suf[i]);
		p[tlen + plen] = '\0';
		t->v[i] = (struct mtc_ocdbt_path){ p, tlen + plen, tlen + base[i] };
		t->n = i + 1;
	}
	free(len);
	return 0;
bad:
	free(len);
	mtc_ocdbt_table_free(t);
	return -1;
}

/* ids, offsets, lengths columns of n references; MTC_OCDBT_MISSING pairs only if allowed */
static int read_refs(struct mtc_ocdbt_in *in, struct mtc_ocdbt_ref *r, size_t n, size_t stride,
		     const struct mtc_ocdbt_table *t, int allow_missing, const char *what, char *err,
		     size_t errlen)
{
#define REF(i) ((struct mtc_ocdbt_ref *)((char *)r + (i)*stride))
	for (size_t i = 0; i < n; i++)
		REF(i)->file = u64(in);
	for (size_t i = 0; i < n; i++)
		REF(i)->offset = u64(in);
	for (size_t i = 0; i < n; i++)
		REF(i)->length = u64(in);
	if (truncated(in, what, err, errlen))
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct mtc_ocdbt_ref *x = REF(i);
		if (x->file >= t->n)
			return fail(err, errlen, "%s: data file id %llu not in table of %zu", what,
				    (unsigned long long)x->file, t->n);
		if (allow_missing && x->offset == MTC_OCDBT_MISSING && x->length == MTC_OCDBT_MISSING)
			continue;
		if (x->offset > INT64_MAX || x->length > INT64_MAX - x->offset)
			return fail(err, errlen, "%s: bad offset/length %llu/%llu", what,
				    (unsigned long long)x->offset, (unsigned long long)x->length);
	}
	return 0;
#undef REF
}

void mtc_ocdbt_manifest_free(struct mtc_ocdbt_manifest *m) { mtc_ocdbt_table_free(&m->table); }

/* The inline versions: count, generations, root heights, roots, statistics, commit times. */
static int read_versions(struct mtc_ocdbt_in *in, struct mtc_ocdbt_manifest *m, char *err, size_t errlen)
{
	uint64_t n = u64(in);
	if (truncated(in, "versions", err, errlen))
		return -1;
	if (n == 0 || n > (1u << m->arity_log2))
		return fail(err, errlen, "versions: count %llu outside [1, %u]", (unsigned long long)n,
			    1u << m->arity_log2);
	struct ver {
		struct mtc_ocdbt_ref ref;
		uint64_t gen, stats[3];
		unsigned height;
	} *v = xcalloc(n, sizeof *v);
	int rc = -1;
	for (size_t i = 0; i < n; i++)
		v[i].gen = u64(in);
	for (size_t i = 0; i < n; i++)
		v[i].height = byte(in);
	if (read_refs(in, &v[0].ref, n, sizeof *v, &m->table, 1, "versions", err, errlen) < 0)
		goto out;
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < n; i++)
			v[i].stats[k] = u64(in);
	take(in, 8 * n); /* commit times */
	if (truncated(in, "versions", err, errlen))
		goto out;
	for (size_t i = 0; i < n; i++) {
		int missing = v[i].ref.offset == MTC_OCDBT_MISSING;
		if (v[i].gen == 0 || (i && v[i].gen <= v[i - 1].gen)) {
			fail(err, errlen, "versions: generation numbers not increasing");
			goto out;
		}
		if (missing && (v[i].height || v[i].stats[0] || v[i].stats[1] || v[i].stats[2])) {
			fail(err, errlen, "versions: empty generation with height or statistics");
			goto out;
		}
	}
	m->generation = v[n - 1].gen;
	m->root_height = v[n - 1].height;
	m->root = v[n - 1].ref;
	rc = 0;
out:
	free(v);
	return rc;
}

/* References to older version tree nodes: checked for form, never followed (only the latest version is read). */
static int read_version_nodes(struct mtc_ocdbt_in *in, struct mtc_ocdbt_manifest *m, char *err,
			      size_t errlen)
{
	uint64_t n = u64(in), max = 63 / m->arity_log2 - 1;
	if (truncated(in, "version nodes", err, errlen))
		return -1;
	if (n > max)
		return fail(err, errlen, "version nodes: count %llu exceeds %llu", (unsigned long long)n,
			    (unsigned long long)max);
	struct mtc_ocdbt_ref refs[64];
	uint64_t gen[64];
	for (size_t i = 0; i < n; i++)
		gen[i] = u64(in);
	if (read_refs(in, refs, n, sizeof *refs, &m->table, 0, "version nodes", err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		u64(in); /* generations below */
	take(in, 8 * n); /* commit times */
	unsigned prev_height = 256;
	for (size_t i = 0; i < n; i++) {
		unsigned h = byte(in);
		if (!in->bad && (h == 0 || h > max || h >= prev_height || gen[i] == 0 ||
				 (i && gen[i] <= gen[i - 1]) || gen[i] >= m->generation))
			return fail(err, errlen, "version nodes: bad height or generation of %zu", i);
		prev_height = h;
	}
	return truncated(in, "version nodes", err, errlen);
}

int mtc_ocdbt_decode_manifest(const uint8_t *buf, size_t len, struct mtc_ocdbt_manifest *m, char *err,
			      size_t errlen)
{
	const uint8_t *body;
	size_t blen;
	uint8_t *owned;
	memset(m, 0, sizeof *m);
	if (mtc_ocdbt_unframe(buf, len, MTC_OCDBT_MANIFEST_MAGIC, &body, &blen, &owned, err, errlen) < 0)
		return -1;
	struct mtc_ocdbt_in in = { body, body + blen, 0 };
	const uint8_t *uuid = take(&in, 16);
	unsigned kind = byte(&in);
	m->max_inline = u32(&in);
	m->max_decoded = u32(&in);
	m->arity_log2 = byte(&in);
	uint32_t method = u32(&in);
	if (truncated(&in, "config", err, errlen))
		goto bad;
	memcpy(m->uuid, uuid, 16);
	if (kind > 1 || m->arity_log2 == 0 || m->arity_log2 > 16 || method > 1) {
		fail(err, errlen, "config: bad manifest kind %u, arity log2 %u or compression %u", kind,
		     m->arity_log2, method);
		goto bad;
	}
	m->numbered = kind == 1;
	m->zstd = method == 1;
	if (m->zstd) {
		const uint8_t *p = take(&in, 4);
		int32_t level = p ? (int32_t)(uint32_t)le(p, 4) : 0;
		if (truncated(&in, "config", err, errlen))
			goto bad;
		if (level < -(1 << 17) || level > 22) {
			fail(err, errlen, "config: zstd level %d out of range", level);
			goto bad;
		}
	}
	if (!m->numbered) {
		if (mtc_ocdbt_read_table(&in, "", 0, &m->table, err, errlen) < 0 ||
		    read_versions(&in, m, err, errlen) < 0 ||
		    read_version_nodes(&in, m, err, errlen) < 0)
			goto bad;
	}
	if (in.p != in.end) {
		fail(err, errlen, "%zu bytes after the manifest body", left(&in));
		goto bad;
	}
	free(owned);
	return 0;
bad:
	free(owned);
	mtc_ocdbt_manifest_free(m);
	return -1;
}

void mtc_ocdbt_node_free(struct mtc_ocdbt_node *node)
{
	mtc_ocdbt_table_free(&node->table);
	free(node->e);
	free(node->keys);
	free(node->owned);
	memset(node, 0, sizeof *node);
}

/* The key columns: prefix lengths, suffix lengths, (interior) subtree prefix lengths, suffixes. */
static int read_keys(struct mtc_ocdbt_in *in, struct mtc_ocdbt_node *node, char *err, size_t errlen)
{
	size_t n = node->n, total = 0;
	uint16_t *pre = xcalloc(2 * n, sizeof *pre), *suf = pre + n;
	int rc = -1;
	for (size_t i = 1; i < n; i++)
		pre[i] = u16(in);
	for (size_t i = 0; i < n; i++)
		suf[i] = u16(in);
	for (size_t i = 0; node->height && i < n; i++)
		node->e[i].subtree_prefix = u16(in);
	if (truncated(in, "keys", err, errlen))
		goto out;
	for (size_t i = 0, prev = 0; i < n; i++) {
		size_t klen = (size_t)pre[i] + suf[i];
		if (pre[i] > prev || klen > MTC_OCDBT_MAX_KEY || node->e[i].subtree_prefix > klen) {
			fail(err, errlen, "keys: bad lengths of key %zu", i);
			goto out;
		}
		node->e[i].key_len = klen;
		total += klen;
		prev = klen;
	}
	if (total > MTC_OCDBT_MAX_DECODED) {
		fail(err, errlen, "keys: %zu bytes in one node", total);
		goto out;
	}
	node->keys = xmalloc(total ? total : 1);
	uint8_t *k = node->keys;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *s = take(in, suf[i]);
		if (!s) {
			truncated(in, "keys", err, errlen);
			goto out;
		}
		if (i) {
			const uint8_t *prev = node->e[i - 1].key;
			size_t rest = node->e[i - 1].key_len - pre[i];
			int c = memcmp(prev + pre[i], s, rest < suf[i] ? rest : suf[i]);
			if (c > 0 || (c == 0 && rest >= suf[i])) {
				fail(err, errlen, "keys: key %zu not above the one before", i);
				goto out;
			}
			memcpy(k, prev, pre[i]);
		}
		memcpy(k + pre[i], s, suf[i]);
		node->e[i].key = k;
		k += node->e[i].key_len;
	}
	rc = 0;
out:
	free(pre);
	return rc;
}

static int read_leaf_values(struct mtc_ocdbt_in *in, struct mtc_ocdbt_node *node, char *err,
			    size_t errlen)
{
	size_t n = node->n, nind = 0;
	for (size_t i = 0; i < n; i++)
		node->e[i].len = u64(in);
	uint8_t *kind = xmalloc(n);
	for (size_t i = 0; i < n; i++) {
		kind[i] = byte(in);
		nind += kind[i] == 1;
		if (!in->bad && (kind[i] > 1 || (!kind[i] && node->e[i].len > MTC_OCDBT_MAX_INLINE))) {
			free(kind);
			return fail(err, errlen, "leaf: bad kind or inline length of value %zu", i);
		}
	}
	struct mtc_ocdbt_ref *r = xcalloc(nind ? nind : 1, sizeof *r);
	int rc = -1;
	if (truncated(in, "leaf values", err, errlen))
		goto out;
	for (size_t i = 0; i < nind; i++)
		r[i].file = u64(in);
	for (size_t i = 0; i < nind; i++)
		r[i].offset = u64(in);
	for (size_t i = 0, j = 0; i < n; i++)
		if (kind[i])
			r[j++].length = node->e[i].len;
	if (truncated(in, "leaf values", err, errlen))
		goto out;
	for (size_t i = 0, j = 0; i < n; i++) {
		if (!kind[i]) {
			node->e[i].value = take(in, node->e[i].len);
			if (truncated(in, "leaf values", err, errlen))
				goto out;
			continue;
		}
		struct mtc_ocdbt_ref *x = &r[j++];
		if (x->file >= node->table.n || x->offset > INT64_MAX ||
		    x->length > INT64_MAX - x->offset) {
			fail(err, errlen, "leaf: bad reference of value %zu", i);
			goto out;
		}
		node->e[i].ref = *x;
	}
	rc = 0;
out:
	free(kind);
	free(r);
	return rc;
}

int mtc_ocdbt_decode_node(const uint8_t *buf, size_t len, const char *transitive, size_t tlen,
			  struct mtc_ocdbt_node *node, char *err, size_t errlen)
{
	const uint8_t *body;
	size_t blen;
	memset(node, 0, sizeof *node);
	if (mtc_ocdbt_unframe(buf, len, MTC_OCDBT_BTREE_MAGIC, &body, &blen, &node->owned, err, errlen) <
	    0)
		return -1;
	if (!node->owned) { /* inline values point into the body: keep it */
		node->owned = xmalloc(blen ? blen : 1);
		memcpy(node->owned, body, blen);
		body = node->owned;
	}
	struct mtc_ocdbt_in in = { body, body + blen, 0 };
	node->height = byte(&in);
	if (truncated(&in, "node", err, errlen) ||
	    mtc_ocdbt_read_table(&in, transitive, tlen, &node->table, err, errlen) < 0)
		goto bad;
	uint32_t n = u32(&in);
	if (truncated(&in, "node", err, errlen))
		goto bad;
	/* each entry takes at least two bytes */
	if (n == 0 || n > MTC_OCDBT_MAX_ARITY || n > left(&in) / 2) {
		fail(err, errlen, "node: bad entry count %u", n);
		goto bad;
	}
	node->n = n;
	node->e = xcalloc(n, sizeof *node->e);
	if (read_keys(&in, node, err, errlen) < 0)
		goto bad;
	if (node->height == 0) {
		if (read_leaf_values(&in, node, err, errlen) < 0)
			goto bad;
	} else {
		if (read_refs(&in, &node->e[0].ref, n, sizeof *node->e, &node->table, 0, "children", err,
			      errlen) < 0)
			goto bad;
		for (size_t i = 0; i < 3 * (size_t)n; i++)
			u64(&in); /* statistics */
		if (truncated(&in, "children", err, errlen))
			goto bad;
	}
	if (in.p != in.end) {
		fail(err, errlen, "%zu bytes after the node body", left(&in));
		goto bad;
	}
	return 0;
bad:
	mtc_ocdbt_node_free(node);
	return -1;
}
