#ifndef MTC_OCDBT_H
#define MTC_OCDBT_H

#include <stddef.h>
#include <stdint.h>

/*
 * An OCDBT store on disk (a directory holding manifest.ocdbt), read as
 * tensorstore's ocdbt driver lists its latest version: the manifest (or the
 * newest manifest.<16 hex> of a numbered store), the latest version's B+tree
 * walked from its root, every key with its value's place. Data files are
 * paths below the store root (an absolute path or a ".." component is
 * refused; the last component is opened without following a symlink).
 *
 * Opening checks the whole tree (every CRC-32C, length, bound, the key
 * order); the values themselves are read later, in place: each data file
 * is mapped (read-only) when the store is opened, or read with pread where it
 * cannot be. A data file cut short while mapped ends the process with SIGBUS,
 * as a file cut short under the merkle digest does (digest.h): the stores
 * read here are in complete, renamed steps. Every function returns 0, or -1
 * with a one-line reason in err.
 */

struct mtc_ocdbt_file {
	char *path; /* below the root */
	int fd;
	uint64_t size;
	const uint8_t *map; /* the whole file, or NULL */
};

struct mtc_ocdbt_kv {
	uint8_t *key;
	size_t key_len;
	uint64_t len;	/* value bytes */
	uint8_t *value; /* an inline value, or NULL: bytes [offset, offset + len) of files[file] */
	size_t file;
	uint64_t offset;
};

struct mtc_ocdbt {
	char *root;
	int dirfd;
	uint64_t generation; /* the latest version; 0 for a store without one */
	struct mtc_ocdbt_file *files;
	size_t nfiles;
	struct mtc_ocdbt_kv *kv; /* sorted by key, bytewise; keys unique */
	size_t n;
};

int mtc_ocdbt_open(struct mtc_ocdbt *s, const char *dir, char *err, size_t errlen);
void mtc_ocdbt_close(struct mtc_ocdbt *s);

/*
 * Bytes [off, off + len) of kv's value: inline, in its file's mapping (paged
 * in now; mtc_ocdbt_drop lets them go), or read into buf (len bytes) where
 * the file is not mapped. NULL with a reason in err.
 */
const uint8_t *mtc_ocdbt_range(const struct mtc_ocdbt *s, const struct mtc_ocdbt_kv *kv, uint64_t off,
			       size_t len, uint8_t *buf, char *err, size_t errlen);

/* Unmaps the pages of a range mtc_ocdbt_range gave, if it was mapped. */
void mtc_ocdbt_drop(const struct mtc_ocdbt *s, const struct mtc_ocdbt_kv *kv, const uint8_t *p,
		    size_t len);

#endif
