#ifndef MTC_PEER_MANIFEST_H
#define MTC_PEER_MANIFEST_H

#include <stddef.h>

#include "digest.h"
#include "manifest_text.h"
#include "peer_wire.h"

/*
 * The name-aware check of a directory <hash>.data (mtc(7) §3.5): its
 * manifest, the text of manifest_text.h's mtc_manifest_text, the same
 * bytes mtc-backup stores as <hash>.manifest. Peers keep it beside the data
 * as <dir>/<hash>.manifest. A manifest is accepted only when it is
 * consistent: clean relative paths within the limits, every directory's
 * size and digest composed from what is below it. Its root composes to the
 * hash, or, for a logical name (data_name.h: a tree with a DIR/manifest.ocdbt
 * file), to the tree's merkle digest: then the name is checked on the tree
 * itself once it has arrived. So a tree
 * checked against its manifest and its name cannot swap, rename or resize
 * files the way the digest alone allows.
 */

/* 0 when m may be the manifest of a tree named hash (a "D" hash); else -1 and err. */
int mtc_peer_manifest_check(const struct mtc_manifest *m, const char *hash,
			    const struct mtc_wire_limits *lim, char *err, size_t errlen);

/* Parses text and checks it against hash as above. 0, or -1 with err (m is then empty). */
int mtc_peer_manifest_parse(const char *text, size_t len, const char *hash,
			    const struct mtc_wire_limits *lim, struct mtc_manifest *m, char *err,
			    size_t errlen);

/*
 * The manifest of dir/<hash>.data: dir/<hash>.manifest when it is there and
 * valid, else computed from the data, which must match its name, and kept
 * there for the next time. text (may be NULL) gets its text. 0; 1 when the
 * data does not match its name (err); -1 on I/O error (err).
 */
int mtc_peer_manifest_local(const char *dir, const char *hash, struct mtc_manifest *m, char **text,
			    char *err, size_t errlen);

/*
 * The files of m dealt into at most k pieces of about equal bytes (largest
 * first, equal sizes by path then offset, each to the lightest piece); the
 * directories go first in piece 0, so empty ones travel too. With ranges, a
 * file over a piece's share (and over MTC_RANGE_MIN) is cut into ranges of
 * whole units (peer_wire.h), so that one big file uses every connection.
 * The same manifest always gives the same pieces, so both ends of a
 * transfer can compute them. bins: k arrays the caller frees, pointing into
 * m's paths. Returns the number of pieces used.
 */
#define MTC_RANGE_MIN (16LL << 20)
int mtc_manifest_split(const struct mtc_manifest *m, int k, int ranges, struct mtc_wire_part **bins,
		       size_t *counts);

#endif
