/*
 * libFuzzer target: untrusted bytes into the OCDBT decoders, as a manifest
 * and as a B+tree node. Invariant: a decoder either refuses with a reason or
 * gives a result whose every reference lies inside its own table, keys in
 * strictly increasing order and inline values inside the decoded body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ocdbt/ocdbt_format.h"

static void check_node(const struct mtc_ocdbt_node *n)
{
	for (size_t i = 0; i < n->n; i++) {
		const struct mtc_ocdbt_entry *e = &n->e[i];
		if (!e->value && e->ref.file >= n->table.n)
			abort();
		if (e->value && e->len > MTC_OCDBT_MAX_INLINE)
			abort();
		if (i) {
			const struct mtc_ocdbt_entry *p = &n->e[i - 1];
			size_t m = p->key_len < e->key_len ? p->key_len : e->key_len;
			int c = memcmp(p->key, e->key, m);
			if (c > 0 || (c == 0 && p->key_len >= e->key_len))
				abort();
		}
		volatile uint8_t sink = 0;
		for (uint64_t k = 0; e->value && k < e->len; k++)
			sink ^= e->value[k];
		(void)sink;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct mtc_ocdbt_manifest m;
	struct mtc_ocdbt_node node;
	if (mtc_ocdbt_decode_manifest(data, size, &m, err, sizeof err) == 0) {
		if (!m.numbered && m.root.offset != MTC_OCDBT_MISSING && m.root.file >= m.table.n)
			abort();
		mtc_ocdbt_manifest_free(&m);
	}
	if (mtc_ocdbt_decode_node(data, size, "t/", 2, &node, err, sizeof err) == 0) {
		check_node(&node);
		mtc_ocdbt_node_free(&node);
	}
	return 0;
}
