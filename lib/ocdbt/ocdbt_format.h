#ifndef MTC_OCDBT_FORMAT_H
#define MTC_OCDBT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decoding of OCDBT, the B+tree format of tensorstore's "ocdbt" key-value
 * store (what Orbax writes), from bytes in memory. The format, in our words:
 *
 * Every encoded object (manifest, version tree node, B+tree node) is framed
 *   magic u32be | length u64le (the whole object) | version uleb128 (0)
 *   | compression uleb128 (0 none, 1 zstd) | body | CRC-32C u32le of all before it
 * and the body, once decompressed, must be used up exactly.
 *
 * A data file table names the files that references point into: a count,
 * then columns of path prefix lengths (shared with the previous path), path
 * suffix lengths, base path lengths, then the suffix bytes. A file's full
 * path is transitive + base + relative; nodes reached through it take
 * transitive + base as their own transitive path.
 *
 * The manifest body: uuid[16], manifest kind (byte: 0 single, 1 numbered),
 * max inline value bytes, max decoded node bytes (uleb128), version tree
 * arity log2 (byte, 1..16), compression method (uleb128; zstd adds a level
 * i32le). A single-kind manifest goes on with a data file table, the latest
 * versions inline and the references to older version tree nodes. A
 * numbered one stops there: the versions are in manifest.<16 hex digits>.
 *
 * A B+tree node body: height (byte), data file table, entry count, then
 * columns: key prefix lengths, key suffix lengths, (interior only) subtree
 * common prefix lengths, key suffixes; a leaf has value lengths, value kinds
 * (byte: 0 inline, 1 in a data file), file ids and offsets of the out-of-line
 * values, then the inline values; an interior node has the children's
 * file ids, offsets, lengths and three statistics columns.
 *
 * Every function returns 0, or -1 with a one-line reason in err.
 */

#define MTC_OCDBT_MANIFEST_MAGIC 0x0cdb3a2aU
#define MTC_OCDBT_VERSION_NODE_MAGIC 0x0cdb1234U
#define MTC_OCDBT_BTREE_MAGIC 0x0cdb20deU
#define MTC_OCDBT_MAX_KEY 65535
#define MTC_OCDBT_MAX_PATH 65535
#define MTC_OCDBT_MAX_INLINE (1024 * 1024)
#define MTC_OCDBT_MAX_ARITY (1024 * 1024)
/* No decompressed body may grow past this (memory bound against zstd bombs). */
#define MTC_OCDBT_MAX_DECODED (256u * 1024 * 1024)

/* A cursor over bytes; a read past the end or a bad value sets bad. */
struct mtc_ocdbt_in {
	const uint8_t *p, *end;
	int bad;
};

int mtc_ocdbt_varint(struct mtc_ocdbt_in *in, uint64_t *v);

/*
 * Checks the frame of one encoded object (magic, length, version, CRC-32C)
 * and gives its body, decompressed when needed (*owned is then malloc'd and
 * the caller frees it; else NULL and the body points into buf).
 */
int mtc_ocdbt_unframe(const uint8_t *buf, size_t len, uint32_t magic, const uint8_t **body,
		      size_t *body_len, uint8_t **owned, char *err, size_t errlen);

/* One file of a data file table. */
struct mtc_ocdbt_path {
	char *path; /* full path below the store root, NUL-terminated */
	size_t len;
	size_t base_len; /* bytes of path that nodes read through it take as transitive */
};

struct mtc_ocdbt_table {
	struct mtc_ocdbt_path *v;
	size_t n;
};

int mtc_ocdbt_read_table(struct mtc_ocdbt_in *in, const char *transitive, size_t tlen,
			 struct mtc_ocdbt_table *t, char *err, size_t errlen);
void mtc_ocdbt_table_free(struct mtc_ocdbt_table *t);

/* A byte range of a data file: index into the table of the object holding it. */
struct mtc_ocdbt_ref {
	uint64_t file, offset, length;
};

#define MTC_OCDBT_MISSING UINT64_MAX /* offset and length of an empty tree's root */

struct mtc_ocdbt_manifest {
	uint8_t uuid[16];
	int numbered; /* config only: the versions are in manifest.<hex> */
	uint64_t max_inline, max_decoded;
	unsigned arity_log2;
	int zstd;
	struct mtc_ocdbt_table table;
	/* The latest version (single kind only). */
	uint64_t generation;
	unsigned root_height;
	struct mtc_ocdbt_ref root; /* offset MTC_OCDBT_MISSING: no keys */
};

int mtc_ocdbt_decode_manifest(const uint8_t *buf, size_t len, struct mtc_ocdbt_manifest *m, char *err,
			      size_t errlen);
void mtc_ocdbt_manifest_free(struct mtc_ocdbt_manifest *m);

struct mtc_ocdbt_entry {
	const uint8_t *key; /* node-relative (without the subtree prefix), in the node's key buffer */
	size_t key_len;
	size_t subtree_prefix;	  /* interior: bytes of key that prefix every key below */
	uint64_t len;		  /* leaf: value bytes */
	const uint8_t *value;	  /* leaf: the inline value, or NULL when out of line */
	struct mtc_ocdbt_ref ref; /* leaf out of line: the value; interior: the child node */
};

struct mtc_ocdbt_node {
	unsigned height;
	struct mtc_ocdbt_table table;
	struct mtc_ocdbt_entry *e;
	size_t n;
	uint8_t *keys;	/* key buffer */
	uint8_t *owned; /* decompressed body, when compressed */
};

/* transitive: the path prefix of the node's data file table (see above). */
int mtc_ocdbt_decode_node(const uint8_t *buf, size_t len, const char *transitive, size_t tlen,
			  struct mtc_ocdbt_node *node, char *err, size_t errlen);
void mtc_ocdbt_node_free(struct mtc_ocdbt_node *node);

/* Writes the reason into err; returns -1 (the decoders' and the reader's error path). */
int mtc_ocdbt_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
