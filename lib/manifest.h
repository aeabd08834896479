#ifndef MTC_MANIFEST_H
#define MTC_MANIFEST_H

#include <stddef.h>

#include <jansson.h>

/*
 * A manifest adds what the content digest (digest.h) leaves out: every file
 * and directory below the root with its relative path, type, size and
 * digest, so a verifier catches renames. manifest_text.h reads and writes
 * its text.
 */

#define MTC_DIGEST_LEN 66 /* "D" + 64 hex + NUL */

enum mtc_entry_type { MTC_ENTRY_FILE, MTC_ENTRY_DIR };

struct mtc_manifest_entry {
	char *path; /* relative, '/'-separated; "" is the root itself */
	enum mtc_entry_type type;
	long long size; /* file bytes; for a directory the total below it */
	char digest[MTC_DIGEST_LEN];
};

struct mtc_manifest {
	struct mtc_manifest_entry *entries; /* sorted by path (strcmp) */
	size_t n;
	size_t cap;
};

void mtc_manifest_init(struct mtc_manifest *m);
void mtc_manifest_free(struct mtc_manifest *m);

/* Appends the first len bytes of path as an entry (m stays unsorted until mtc_manifest_sort). */
void mtc_manifest_append(struct mtc_manifest *m, const char *path, size_t len, enum mtc_entry_type type,
			 long long size, const char *digest);
void mtc_manifest_sort(struct mtc_manifest *m);

/* Total bytes of the files below path (after mtc_digest_path, manifest->entries of ""). */
long long mtc_manifest_bytes(const struct mtc_manifest *m);

/*
 * 0 when a (wanted) and b (found) list the same paths with the same types,
 * sizes and digests; 1 otherwise, with err naming the first file that
 * differs, or else the first difference.
 */
int mtc_manifest_compare(const struct mtc_manifest *a, const struct mtc_manifest *b, char *err,
			 size_t errlen);

/* [{"path":…, "type":"file"|"dir", "size":…, "digest":…}, …] */
json_t *mtc_manifest_to_json(const struct mtc_manifest *m);

/*
 * The steps of reading that form (manifest_text.h reads it without building
 * a JSON tree): entry i is checked (a clean
 * relative path, "file" or "dir", a size >= 0, a digest of its kind) and
 * added; the sealed manifest is sorted by path, each path once. 0, or -1
 * with err.
 */
int mtc_manifest_add_entry(struct mtc_manifest *m, const char *path, const char *type, long long size,
			   const char *digest, size_t i, char *err, size_t errlen);
int mtc_manifest_seal(struct mtc_manifest *m, char *err, size_t errlen);

#endif
