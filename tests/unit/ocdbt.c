/*
 * OCDBT decoding at the byte level: varints, the frame (magic, length,
 * version, compression, CRC-32C), data file tables (the cases of
 * tensorstore's data file table tests, encoded here by hand), B+tree nodes
 * and a manifest built byte by byte; and Python's bytes repr, which the
 * logical digest hashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/crc32c.h"
#include "ocdbt/ocdbt_format.h"
#include "ocdbt/orbax_digest.h"
#include "tap.h"

#define B(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })

static void varint(const uint8_t *in, size_t len, int want_ok, uint64_t want, const char *name)
{
	struct mtc_ocdbt_in c = { in, in + len, 0 };
	uint64_t v;
	int r = mtc_ocdbt_varint(&c, &v);
	if (want_ok)
		ok(r == 0 && v == want && c.p == c.end, "varint %s = %llu", name,
		   (unsigned long long)want);
	else
		ok(r < 0, "varint %s is refused", name);
}

/* Our own framing: header, body as given, CRC-32C; compression 1 zstd-compresses it. */
static size_t frame(uint32_t magic, int compression, const uint8_t *body, size_t len, uint8_t *out)
{
	size_t n = 12;
	out[0] = (uint8_t)(magic >> 24), out[1] = (uint8_t)(magic >> 16);
	out[2] = (uint8_t)(magic >> 8), out[3] = (uint8_t)magic;
	out[n++] = 0;
	out[n++] = (uint8_t)compression;
	if (compression)
		n += ZSTD_compress(out + n, ZSTD_compressBound(len), body, len, 3);
	else
		memcpy(out + n, body, len), n += len;
	uint64_t total = n + 4;
	for (int i = 0; i < 8; i++)
		out[4 + i] = (uint8_t)(total >> (8 * i));
	uint32_t crc = mtc_crc32c(0, out, n);
	for (int i = 0; i < 4; i++)
		out[n++] = (uint8_t)(crc >> (8 * i));
	return n;
}

static void node_err(const uint8_t *body, size_t len, const char *want, const char *name)
{
	uint8_t buf[256];
	char err[256] = "";
	struct mtc_ocdbt_node node;
	size_t n = frame(MTC_OCDBT_BTREE_MAGIC, 0, body, len, buf);
	int r = mtc_ocdbt_decode_node(buf, n, "", 0, &node, err, sizeof err);
	ok(r < 0 && strstr(err, want), "node %s: refused with '%s' (%s)", name, want, err);
}

static void table_err(const uint8_t *in, size_t len, const char *want, const char *name)
{
	struct mtc_ocdbt_in c = { in, in + len, 0 };
	struct mtc_ocdbt_table t;
	char err[256] = "";
	int r = mtc_ocdbt_read_table(&c, "", 0, &t, err, sizeof err);
	ok(r < 0 && strstr(err, want), "table %s: refused with '%s' (%s)", name, want, err);
}

static void tables(void)
{
	/* tensorstore's AddBasePath case: (base, relative) pairs sorted, read with transitive "x/" */
	static const uint8_t enc[] = { 5, 0, 1, 0, 1,	1,   2,	  1,   2,   1,	 0,
				       1, 1, 1, 1, 'y', 'a', 'b', 'c', 'b', 'd', 'e' };
	static const char *want[] = { "x/y", "x/ab", "x/ac", "x/bd", "x/be" };
	static const size_t want_base[] = { 2, 3, 3, 3, 3 };
	struct mtc_ocdbt_in c = { enc, enc + sizeof enc, 0 };
	struct mtc_ocdbt_table t;
	char err[256] = "";
	int r = mtc_ocdbt_read_table(&c, "x/", 2, &t, err, sizeof err);
	ok(r == 0 && t.n == 5 && c.p == c.end, "table with base paths decodes (%s)", err);
	for (size_t i = 0; r == 0 && i < t.n; i++) {
		is_str(t.v[i].path, want[i], "table path %zu", i);
		is_int(t.v[i].base_len, want_base[i], "table base length %zu", i);
	}
	if (r == 0)
		mtc_ocdbt_table_free(&t);

	static const uint8_t zero[] = { 0 };
	c = (struct mtc_ocdbt_in){ zero, zero + 1, 0 };
	ok(mtc_ocdbt_read_table(&c, "", 0, &t, err, sizeof err) == 0 && t.n == 0,
	   "empty table is one byte");
	mtc_ocdbt_table_free(&t);
	table_err(B(0x80), "unexpected end", "truncated count");
	table_err(B(1, 0x81, 0x80, 0x04), "varint", "suffix length over 16 bits");
	table_err(B(1, 5, 0x80, 0x80, 0x04), "varint", "base length over 16 bits");
	table_err(B(2, 0x80, 0x80, 0x04, 0, 0), "varint", "prefix length over 16 bits");
	table_err(B(1, 5, 6, 'a', 'b', 'c', 'd', 'e'), "bad lengths", "base longer than path");
	table_err(B(2, 2, 1, 1, 0, 0, 'a', 'b'), "bad lengths", "prefix longer than previous path");
	table_err(B(1, 2, 0, 'a', 0), "NUL byte", "NUL in a path");
}

static void nodes(void)
{
	uint8_t buf[512];
	char err[256] = "";
	struct mtc_ocdbt_node node;

	/* tensorstore's corrupt-node cases */
	node_err(B(), "unexpected end", "empty body");
	node_err(B(0), "unexpected end", "height only");
	node_err(B(0, 0, 0, 0), "entry count 0", "leaf with zero entries");
	node_err(B(1, 0, 0, 0), "entry count 0", "interior with zero entries");

	/* a leaf: keys "ab" (inline "xyz") and "ac" (6 bytes at offset 5 of d/f) */
	static const uint8_t leaf[] = { 0,   1,	  3, 0, 'd', '/', 'f', 2, 1,   2,   1,	'a',
					'b', 'c', 3, 6, 0,   1,	  0,   5, 'x', 'y', 'z' };
	size_t n = frame(MTC_OCDBT_BTREE_MAGIC, 0, leaf, sizeof leaf, buf);
	int r = mtc_ocdbt_decode_node(buf, n, "t/", 2, &node, err, sizeof err);
	ok(r == 0 && node.height == 0 && node.n == 2, "leaf decodes (%s)", err);
	if (r == 0) {
		ok(node.e[0].key_len == 2 && !memcmp(node.e[0].key, "ab", 2) && node.e[0].len == 3 &&
			   node.e[0].value && !memcmp(node.e[0].value, "xyz", 3),
		   "leaf: inline value of 'ab'");
		ok(node.e[1].key_len == 2 && !memcmp(node.e[1].key, "ac", 2) && !node.e[1].value &&
			   node.e[1].len == 6 && node.e[1].ref.file == 0 && node.e[1].ref.offset == 5,
		   "leaf: out-of-line value of 'ac'");
		is_str(node.table.v[0].path, "t/d/f", "leaf: data file below the transitive path");
		mtc_ocdbt_node_free(&node);
	}
	n = frame(MTC_OCDBT_BTREE_MAGIC, 1, leaf, sizeof leaf, buf);
	r = mtc_ocdbt_decode_node(buf, n, "", 0, &node, err, sizeof err);
	ok(r == 0 && node.n == 2 && !memcmp(node.e[0].value, "xyz", 3), "zstd leaf decodes (%s)", err);
	if (r == 0)
		mtc_ocdbt_node_free(&node);

	static const uint8_t unordered[] = { 0, 0, 2, 0, 1, 1, 'b', 'a', 0, 0, 0, 0 };
	node_err(unordered, sizeof unordered, "not above", "keys out of order");
	static const uint8_t kind2[] = { 0, 0, 1, 1, 'a', 0, 2 };
	node_err(kind2, sizeof kind2, "bad kind", "value kind 2");
	static const uint8_t trailing[] = { 0, 0, 1, 1, 'a', 0, 0, 9 };
	node_err(trailing, sizeof trailing, "after the node body", "a byte after the body");
	static const uint8_t badid[] = { 0, 0, 1, 1, 'a', 4, 1, 0, 0 };
	node_err(badid, sizeof badid, "bad reference", "file id beyond the table");

	/* an interior node: one child "k" at bytes 7..27 of d/n, subtree prefix 1 */
	static const uint8_t interior[] = { 1, 1, 3, 0, 'd', '/', 'n', 1, 1, 1, 'k', 0, 7, 20, 4, 9, 0 };
	n = frame(MTC_OCDBT_BTREE_MAGIC, 0, interior, sizeof interior, buf);
	r = mtc_ocdbt_decode_node(buf, n, "", 0, &node, err, sizeof err);
	ok(r == 0 && node.height == 1 && node.n == 1 && node.e[0].subtree_prefix == 1 &&
		   node.e[0].ref.offset == 7 && node.e[0].ref.length == 20,
	   "interior node decodes (%s)", err);
	if (r == 0)
		mtc_ocdbt_node_free(&node);
}

static void manifests(void)
{
	/* config (uuid, single, 100, 1000, arity 2^4, uncompressed); one file; one version */
	uint8_t body[128], buf[256];
	size_t n = 0;
	memset(body, 0xab, 16), n = 16;
	static const uint8_t rest[] = { 0, 100, 0xe8, 0x07, 4,	0, 1, 3, 0, 'd', '/', 'x', 1, 1, 0,
					0, 0,	50,   1,    50, 0, 1, 0, 0, 0,	 0,   0,   0, 0, 0 };
	memcpy(body + n, rest, sizeof rest), n += sizeof rest;
	struct mtc_ocdbt_manifest m;
	char err[256] = "";
	size_t len = frame(MTC_OCDBT_MANIFEST_MAGIC, 0, body, n, buf);
	int r = mtc_ocdbt_decode_manifest(buf, len, &m, err, sizeof err);
	ok(r == 0 && !m.numbered && m.max_inline == 100 && m.max_decoded == 1000 && m.arity_log2 == 4 &&
		   m.generation == 1 && m.root.length == 50 && m.table.n == 1,
	   "manifest decodes (%s)", err);
	if (r == 0)
		mtc_ocdbt_manifest_free(&m);

	/* tensorstore's corrupt-manifest cases */
	uint8_t bad[256];
	memcpy(bad, buf, len), memcpy(bad, "abcd", 4);
	ok(mtc_ocdbt_decode_manifest(bad, len, &m, err, sizeof err) < 0 && strstr(err, "magic"),
	   "wrong magic: %s", err);
	memcpy(bad, buf, len), bad[len] = 'x';
	ok(mtc_ocdbt_decode_manifest(bad, len + 1, &m, err, sizeof err) < 0 &&
		   strstr(err, "length in header"),
	   "a byte appended: %s", err);
	memcpy(bad, buf, len), bad[len - 1]++;
	ok(mtc_ocdbt_decode_manifest(bad, len, &m, err, sizeof err) < 0 && strstr(err, "CRC-32C"),
	   "checksum changed: %s", err);
	memcpy(bad, buf, len), bad[12] = 1;
	uint32_t crc = mtc_crc32c(0, bad, len - 4);
	for (int i = 0; i < 4; i++)
		bad[len - 4 + i] = (uint8_t)(crc >> (8 * i));
	ok(mtc_ocdbt_decode_manifest(bad, len, &m, err, sizeof err) < 0 && strstr(err, "version"),
	   "format version 1: %s", err);
	ok(mtc_ocdbt_decode_manifest(buf, 15, &m, err, sizeof err) < 0 && strstr(err, "too short"),
	   "15 bytes: %s", err);

	/* numbered: the config alone */
	body[16] = 1;
	len = frame(MTC_OCDBT_MANIFEST_MAGIC, 1, body, 22, buf);
	r = mtc_ocdbt_decode_manifest(buf, len, &m, err, sizeof err);
	ok(r == 0 && m.numbered, "zstd numbered manifest decodes (%s)", err);
	if (r == 0)
		mtc_ocdbt_manifest_free(&m);
}

static void repr(const char *in, size_t len, const char *want)
{
	char out[256];
	mtc_py_bytes_repr((const uint8_t *)in, len, out);
	is_str(out, want, "repr of %s", want);
}

int main(void)
{
	varint(B(0x00), 1, 0, "0");
	varint(B(0x7f), 1, 127, "127");
	varint(B(0x80, 0x01), 1, 128, "128");
	varint(B(0xe8, 0x07), 1, 1000, "1000");
	varint(B(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 1, UINT64_MAX, "2^64-1");
	varint(B(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02), 0, 0, "2^64");
	varint(B(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 0, 0, "of 11 bytes");
	varint(B(0x80), 0, 0, "cut short");
	varint(B(), 0, 0, "empty");
	tables();
	nodes();
	manifests();

	repr("", 0, "b''");
	repr("abc", 3, "b'abc'");
	repr("it's", 4, "b\"it's\"");
	repr("say \"hi\"", 8, "b'say \"hi\"'");
	repr("both ' and \"", 12, "b'both \\' and \"'");
	repr("back\\slash", 10, "b'back\\\\slash'");
	repr("\t\n\r", 3, "b'\\t\\n\\r'");
	repr("\x00\x01\x1f", 3, "b'\\x00\\x01\\x1f'");
	repr(" ~\x7f", 3, "b' ~\\x7f'");
	repr("\x80\xab\xff", 3, "b'\\x80\\xab\\xff'");
	repr("'\\", 2, "b\"'\\\\\"");
	return done();
}
