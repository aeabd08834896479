#ifndef MTC_BLAKE3_H
#define MTC_BLAKE3_H

#include <stddef.h>
#include <stdint.h>

/*
 * BLAKE3 (hash mode only), written from the specification. The chunk and
 * parent compressions run on the widest SIMD the CPU offers (AVX-512, AVX2,
 * SSE4.1, else portable C), chosen once at run time; large inputs are split
 * into subtrees hashed on several threads.
 */

#define MTC_BLAKE3_OUT_LEN 32
#define MTC_BLAKE3_BLOCK_LEN 64
#define MTC_BLAKE3_CHUNK_LEN 1024
#define MTC_BLAKE3_MAX_DEPTH 54
/* Input that comes in small or uneven pieces gathers here into whole SIMD batches. */
#define MTC_BLAKE3_STAGE_LEN (16 * MTC_BLAKE3_CHUNK_LEN)

struct mtc_blake3 {
	uint32_t key[8];
	uint32_t cv[8];
	uint64_t chunk_counter;
	uint8_t buf[MTC_BLAKE3_BLOCK_LEN];
	uint8_t buf_len;
	uint8_t blocks_compressed;
	uint8_t cv_stack_len;
	int threads;
	uint8_t cv_stack[MTC_BLAKE3_MAX_DEPTH * MTC_BLAKE3_OUT_LEN];
	size_t stage_len;
	uint8_t stage[MTC_BLAKE3_STAGE_LEN];
};

void mtc_blake3_init(struct mtc_blake3 *h);
/* Threads for large updates (1, the default, hashes on the calling thread). */
void mtc_blake3_set_threads(struct mtc_blake3 *h, int threads);
void mtc_blake3_update(struct mtc_blake3 *h, const void *data, size_t len);
/* Any output length (extendable output); 32 bytes is the hash. */
void mtc_blake3_final(const struct mtc_blake3 *h, uint8_t *out, size_t out_len);

/*
 * Tree pieces, for callers that hash parts of one input on their own threads
 * (a large file mapped piece by piece). mtc_blake3_subtree gives the chaining
 * value of `chunks` whole chunks (a power of two) that start at chunk
 * `counter` (a multiple of chunks). mtc_blake3_push_subtree appends it to h,
 * which must hold no partial chunk and stand at chunk `counter`; at least one
 * more byte must follow before mtc_blake3_final.
 */
void mtc_blake3_subtree(const void *in, size_t chunks, uint64_t counter, uint8_t cv[MTC_BLAKE3_OUT_LEN]);
void mtc_blake3_push_subtree(struct mtc_blake3 *h, const uint8_t cv[MTC_BLAKE3_OUT_LEN], size_t chunks);

void mtc_blake3(const void *data, size_t len, uint8_t out[MTC_BLAKE3_OUT_LEN]);
/* Lowercase hex of len bytes into out (2 * len + 1 bytes). */
void mtc_hex(const uint8_t *in, size_t len, char *out);

/* The SIMD path in use: "avx512", "avx2", "sse41" or "portable". */
const char *mtc_blake3_simd(void);
/* Forces a path (tests, benchmarks); -1 with ENOTSUP when the CPU lacks it. */
int mtc_blake3_set_simd(const char *name);

#endif
