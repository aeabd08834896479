#ifndef MTC_MANIFEST_TEXT_H
#define MTC_MANIFEST_TEXT_H

#include <stddef.h>

#include "manifest.h"

/*
 * The longest manifest text read: by the daemon from a peer, whose memory
 * stays bounded (mtc(7) §4.3), and by the programs that run once from a
 * backup or a file. A tree whose manifest is longer than the first is
 * committed and backed up, but not replicated (commit warns).
 */
#define MTC_MANIFEST_BODY_MAX (16 << 20)
#define MTC_MANIFEST_MAX (256 << 20)

/*
 * Reads a manifest's JSON text (digest.h's form: an array of objects with
 * "path", "type", "size" and "digest"; other keys with plain values are
 * ignored) straight into m, without building a JSON tree: a peer's manifest
 * of 100k entries then costs about its own size in memory, not ten times
 * it. Every entry is checked as mtc_manifest_add_entry checks it. 0, or -1
 * with a one-line reason in err (m is then empty).
 */
int mtc_manifest_parse(const char *text, size_t len, struct mtc_manifest *m, char *err, size_t errlen);

/*
 * The same from a regular file of at most max bytes, read through a
 * mapping whose pages are let go behind the parser: it costs the entries,
 * not the text too.
 */
int mtc_manifest_parse_fd(int fd, size_t max, struct mtc_manifest *m, char *err, size_t errlen);

/*
 * The text of m: the compact JSON of mtc_manifest_to_json, the bytes a
 * backup stores as <hash>.manifest and a peer keeps and sends (malloc'd).
 */
char *mtc_manifest_text(const struct mtc_manifest *m);

#endif
