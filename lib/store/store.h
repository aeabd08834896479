#ifndef MTC_STORE_H
#define MTC_STORE_H

#include <stddef.h>

#include "result.h"

/*
 * Backup storage behind one small interface (mtc(7) §6.1). A location is a
 * directory path, file://PATH, or gs://bucket[/prefix]. Keys are relative to
 * the location, '/'-separated, with no empty, "." or ".." component; a key
 * ending in '/' names an empty directory (a zero-byte object on gs://).
 *
 * Visibility: a put is create-only and all-or-nothing. The directory backend
 * writes a hidden temporary name, fsyncs it, renames it into place without
 * replacing anything, and fsyncs the directory; listings never show
 * temporaries. gs:// creates with ifGenerationMatch=0.
 *
 * Every call returns 0 or -1 with errno set: ENOENT (no such object), EEXIST
 * (create-only put found one), EIO (integrity: checksum or size mismatch),
 * ETIMEDOUT (deadline), EACCES, EINVAL (bad key or URL), or another errno.
 * mtc_store_error() then says what happened in words ("HTTP 403: ...").
 */

/* The one errno -> result mapping: ENOENT not found, EIO integrity, ETIMEDOUT, EINVAL usage. */
enum mtc_result mtc_store_result(int e);

struct mtc_store;

struct mtc_store_options {
	const char *token_file;	 /* gs:// bearer token file (--token-file); NULL: environment */
	const char *s3_endpoint; /* s3:// endpoint URL (--s3-endpoint); NULL: as the AWS CLI finds it */
	int parallel;		 /* transfers in flight; 0: default (32) */
	double deadline;	 /* seconds for one operation with its retries; 0: default (600) */
	/*
	 * gs:// and s3://: a file of at least slice_threshold bytes moves as up to
	 * `slices` parallel streams: a get as ranged GETs into one file, a put as
	 * parts composed into the object (mtc(7) §6.1). 0: the defaults
	 * (MTC_STORE_SLICE_THRESHOLD, MTC_STORE_SLICES); slices is at most
	 * MTC_STORE_SLICES_MAX (a compose takes 32 sources); 1 turns slicing off.
	 */
	long long slice_threshold;
	int slices;
	int threads; /* a directory: the threads a put with a digest copies one file on; 0: one per CPU */
};

#define MTC_STORE_SLICE_THRESHOLD (64LL << 20)
#define MTC_STORE_SLICES 16
#define MTC_STORE_SLICES_MAX 32

struct mtc_store_object {
	char *name; /* relative to the listed prefix's location root: the full key */
	long long size;
	long long generation; /* gs:// generation; 0 on a directory */
	long long updated;    /* gs://: its last write, seconds since the epoch; 0 on a directory */
};

struct mtc_store_list {
	struct mtc_store_object *objects; /* sorted by name (strcmp) */
	size_t n_objects;
	char **prefixes; /* common prefixes, each ending in the delimiter, sorted */
	size_t n_prefixes;
};

/* One transfer of a batch: key <-> local path. err is 0 or the errno of its failure. */
struct mtc_store_xfer {
	const char *key;
	const char *path;
	long long size; /* out: bytes transferred (a get: the object's size) */
	int err;	/* out */
	/*
	 * Gets only. partial: download into this file in place, after the bytes
	 * it already holds (an interrupted earlier get of the same object and
	 * generation), one stream; renamed to path when whole. It is kept when
	 * the transfer fails, unless its bytes proved wrong. NULL: a fresh
	 * temporary, removed on failure. generation: read this one (0: the live one).
	 */
	const char *partial;
	long long generation;
	/*
	 * Gets with a partial only: where a sliced get records which byte ranges
	 * of the partial are whole (with their CRC32C and the generation), so
	 * that a killed get continues with the missing slices only. Written
	 * atomically, removed once the file is whole. NULL: not recorded.
	 */
	const char *slice_state;
	/*
	 * Puts to a directory only: the digest (digest.h) the file's bytes must
	 * have. They are hashed as they are written, and an object whose bytes
	 * differ is not published (err EBADMSG). NULL: not checked.
	 */
	const char *digest;
};

enum { MTC_STORE_REPLACE = 1 }; /* put flag: overwrite instead of create-only */

/* Progress of long transfers: bytes done so far over all transfers of the call. */
typedef void (*mtc_store_progress_fn)(void *arg, long long done, long long total);

int mtc_store_open(const char *url, const struct mtc_store_options *opt, struct mtc_store **out,
		   char *err, size_t errlen);
void mtc_store_close(struct mtc_store *s);
/* The location as given (normalised: no trailing '/'). */
const char *mtc_store_url(const struct mtc_store *s);
/* 1 for gs://, 0 for a directory. */
int mtc_store_is_remote(const struct mtc_store *s);
/*
 * 1 when url starts gs:, s3: or file: in any case but is not that URL
 * (s3:/b, S3://b, a gs:// or s3:// without a bucket): err says how to write
 * it, errno EINVAL. Such a name is never taken for a local path.
 */
int mtc_store_misspelt_url(const char *url, char *err, size_t errlen);
/* The reason for the last failure on s, never NULL. */
const char *mtc_store_error(const struct mtc_store *s);
void mtc_store_set_progress(struct mtc_store *s, mtc_store_progress_fn fn, void *arg);

int mtc_store_put_file(struct mtc_store *s, const char *key, const char *path, int flags);
int mtc_store_put_buf(struct mtc_store *s, const char *key, const void *buf, size_t len, int flags);
/* Parallel puts; returns -1 if any failed (see each err; errno is the first failure's). */
int mtc_store_put_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags);

/* Whole object to path, written to a temporary name and renamed when whole. */
int mtc_store_get_file(struct mtc_store *s, const char *key, const char *path);
/* Whole object of at most max bytes into a NUL-terminated malloc'd buffer; EFBIG if larger. */
int mtc_store_get_buf(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len);
/* Exactly len bytes at offset into buf; EIO if the object ends before. */
int mtc_store_get_range(struct mtc_store *s, const char *key, long long offset, void *buf, size_t len);
int mtc_store_get_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n);

/*
 * Objects whose key starts with prefix (may be "" or NULL). With a delimiter
 * (normally "/"), keys holding it after the prefix are rolled up into
 * prefixes instead. Call mtc_store_list_free even on failure.
 */
int mtc_store_list(struct mtc_store *s, const char *prefix, const char *delim,
		   struct mtc_store_list *out);
void mtc_store_list_free(struct mtc_store_list *l);
/* The object named name in a listing (sorted: a binary search), or NULL. */
const struct mtc_store_object *mtc_store_list_find(const struct mtc_store_list *l, const char *name);

/* Size and generation of one object (out->name is set to NULL). */
int mtc_store_stat(struct mtc_store *s, const char *key, struct mtc_store_object *out);
int mtc_store_delete(struct mtc_store *s, const char *key);
/* Deletes every object under prefix (which should end in '/'), in parallel; none is not an error. */
int mtc_store_delete_prefix(struct mtc_store *s, const char *prefix);

/*
 * The temporaries under prefix (which ends in '/') whose writers are gone
 * (tmpname.h): each passed to fn (where it is, its bytes), removed when
 * remove. How many, or -1 (mtc_store_error). A store that leaves no
 * temporaries of its own under a prefix has none.
 */
typedef void mtc_store_leftover_fn(const char *where, long long bytes, void *arg);
long mtc_store_leftovers(struct mtc_store *s, const char *prefix, int remove, mtc_store_leftover_fn *fn,
			 void *arg);

/* "123", "64K", "64M", "1G", "1T" (powers of 1024; "KiB" and "MiB" too) → bytes; -1 if not one. */
int mtc_store_parse_size(const char *text, long long *out);

/* Checks a key's grammar: 1 valid, 0 not. */
int mtc_store_valid_key(const char *key);

#endif
