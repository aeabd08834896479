#ifndef MTC_ORBAX_DIGEST_H
#define MTC_ORBAX_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"

/*
 * The logical digest of an Orbax step, bit-identical to the reference
 * replicator's (framework "orbax"): its content, not its files, so two saves
 * of the same arrays agree however tensorstore laid the bytes out.
 *   1. the store: the first entry of step_dir, in directory (readdir) order,
 *      that is a directory holding a regular file manifest.ocdbt (symlinks
 *      followed);
 *   2. every key of the store's latest version with the BLAKE3 of its value
 *      (64 lowercase hex);
 *   3. in key order (bytewise), the line  repr(key) TAB hex LF  for each,
 *      where repr is Python's repr of the key as bytes (b'…'), all fed to one
 *      BLAKE3; the digest is "D" + its hex.
 * Returns 1 with the digest in out; 0 when step_dir holds no such store (the
 * caller uses the merkle digest of digest.h instead); -1 with a one-line
 * reason in err when the store cannot be read or is malformed. Values are
 * hashed on `threads` threads (0: one per online CPU), each read once.
 */
int mtc_orbax_digest(const char *step_dir, int threads, char out[MTC_DIGEST_LEN], char *err,
		     size_t errlen);

/*
 * Python's repr() of a bytes object: b'…' (b"…" when the bytes hold ' and
 * no "), backslash and the quote escaped, \t \n \r, other bytes below 0x20 or
 * from 0x7f as \xhh. out holds 4 * len + 4 bytes; returns the length written
 * (NUL-terminated).
 */
size_t mtc_py_bytes_repr(const uint8_t *s, size_t len, char *out);

#endif
