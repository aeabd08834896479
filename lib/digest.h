#ifndef MTC_DIGEST_H
#define MTC_DIGEST_H

#include <stddef.h>

#include <jansson.h>

/*
 * The content digest of mtc(7) §3.5, bit-identical to the reference merkle.py:
 *   file       BLAKE3(content) as 64 lowercase hex
 *   directory  "D" + hex BLAKE3 of the children's digests, sorted bytewise
 *              (strcmp), joined by "\n" with no trailing newline; a child
 *              directory contributes its own "D…" digest; an empty directory
 *              is "D" + BLAKE3(""); names are not hashed.
 * Symlinks are followed, as the reference does (with a depth limit: ELOOP).
 * Anything that is neither a regular file nor a directory is EINVAL.
 *
 * The manifest adds what the digest leaves out: every file and directory
 * below the root with its relative path, so a verifier catches renames.
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

/*
 * Digest of a file or directory tree. threads caps the hashing threads
 * (0: one per online CPU). manifest may be NULL; otherwise it is filled
 * (after mtc_manifest_init). Returns 0, or -1 with errno on I/O error.
 */
int mtc_digest_path(const char *path, int threads, char out[MTC_DIGEST_LEN],
		    struct mtc_manifest *manifest);

/* The digest of one regular file (64 hex), and its size when size is not NULL. */
int mtc_digest_file(const char *path, int threads, char out[MTC_DIGEST_LEN], long long *size);

/* Total bytes of the files below path (after mtc_digest_path, manifest->entries of ""). */
long long mtc_manifest_bytes(const struct mtc_manifest *m);

/*
 * 0 when a (wanted) and b (found) list the same paths with the same types,
 * sizes and digests; 1 otherwise, with why naming the first file that
 * differs, or else the first difference.
 */
int mtc_manifest_compare(const struct mtc_manifest *a, const struct mtc_manifest *b, char *why,
			 size_t whylen);

/* [{"path":…, "type":"file"|"dir", "size":…, "digest":…}, …] */
json_t *mtc_manifest_to_json(const struct mtc_manifest *m);

/*
 * The steps of reading that form (manifest_text.h reads it without building
 * a JSON tree): entry i is checked (a clean
 * relative path, "file" or "dir", a size >= 0, a digest of its kind) and
 * added; the sealed manifest is sorted by path, each path once. 0, or -1
 * with err.
 */
int mtc_manifest_add_entry(struct mtc_manifest *m, const char *path, const char *type,
			   long long size, const char *digest, size_t i, char *err, size_t errlen);
int mtc_manifest_seal(struct mtc_manifest *m, char *err, size_t errlen);

#endif
