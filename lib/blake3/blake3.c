/*
 * BLAKE3 hash mode. The tree is built from whole chunks in power-of-two
 * subtrees aligned on the chunk counter; a subtree is compressed only when
 * more input follows it, so the root (which carries the ROOT flag) is always
 * finished in mtc_blake3_final.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>

#include "blake3.h"
#include "blake3_impl.h"

#define CHUNK MTC_BLAKE3_CHUNK_LEN
#define LEAF_CHUNKS 256		/* one subtree hashed with one CV buffer on the stack */
#define PARALLEL_MIN (1u << 20) /* smaller subtrees stay on the calling thread */

static inline uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void store32(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	p[2] = (uint8_t)(w >> 16);
	p[3] = (uint8_t)(w >> 24);
}

static inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#define G(a, b, c, d, x, y)                   \
	do {                                  \
		v[a] = v[a] + v[b] + (x);     \
		v[d] = rotr(v[d] ^ v[a], 16); \
		v[c] = v[c] + v[d];           \
		v[b] = rotr(v[b] ^ v[c], 12); \
		v[a] = v[a] + v[b] + (y);     \
		v[d] = rotr(v[d] ^ v[a], 8);  \
		v[c] = v[c] + v[d];           \
		v[b] = rotr(v[b] ^ v[c], 7);  \
	} while (0)

/* The full 16-word state after the 7 rounds, before the feed-forward. */
static void compress_rounds(const uint32_t cv[8], const uint8_t block[64], uint8_t block_len,
			    uint64_t counter, uint8_t flags, uint32_t v[16])
{
	uint32_t m[16];
	for (int i = 0; i < 16; i++)
		m[i] = load32(block + 4 * i);
	for (int i = 0; i < 8; i++)
		v[i] = cv[i];
	for (int i = 0; i < 4; i++)
		v[8 + i] = mtc_blake3_iv[i];
	v[12] = (uint32_t)counter;
	v[13] = (uint32_t)(counter >> 32);
	v[14] = block_len;
	v[15] = flags;
	for (int r = 0; r < 7; r++) {
		const uint8_t *s = mtc_blake3_schedule[r];
		G(0, 4, 8, 12, m[s[0]], m[s[1]]);
		G(1, 5, 9, 13, m[s[2]], m[s[3]]);
		G(2, 6, 10, 14, m[s[4]], m[s[5]]);
		G(3, 7, 11, 15, m[s[6]], m[s[7]]);
		G(0, 5, 10, 15, m[s[8]], m[s[9]]);
		G(1, 6, 11, 12, m[s[10]], m[s[11]]);
		G(2, 7, 8, 13, m[s[12]], m[s[13]]);
		G(3, 4, 9, 14, m[s[14]], m[s[15]]);
	}
}

static void compress_cv(uint32_t cv[8], const uint8_t block[64], uint8_t block_len, uint64_t counter,
			uint8_t flags)
{
	uint32_t v[16];
	compress_rounds(cv, block, block_len, counter, flags, v);
	for (int i = 0; i < 8; i++)
		cv[i] = v[i] ^ v[i + 8];
}

static void many_portable1(const uint8_t *in, size_t blocks, const uint32_t key[8], uint64_t counter,
			   uint8_t flags, uint8_t flag_start, uint8_t flag_end, uint8_t *out)
{
	uint32_t cv[8];
	memcpy(cv, key, sizeof cv);
	uint8_t bf = flags | flag_start;
	for (size_t b = 0; b < blocks; b++) {
		if (b + 1 == blocks)
			bf |= flag_end;
		compress_cv(cv, in + 64 * b, 64, counter, bf);
		bf = flags;
	}
	for (int i = 0; i < 8; i++)
		store32(out + 4 * i, cv[i]);
}

struct simd {
	const char *name;
	int width;
	mtc_b3_many_fn *fn;
	const char *cpu;
};

static const struct simd simds[] = {
	{ "avx512", 16, mtc_b3_many_avx512, "avx512f" },
	{ "avx2", 8, mtc_b3_many_avx2, "avx2" },
	{ "sse41", 4, mtc_b3_many_sse41, "sse4.1" },
	{ "portable", 1, NULL, NULL },
};
#define N_SIMD (sizeof simds / sizeof simds[0])

static _Atomic int simd_choice = -1;

static int cpu_has(const struct simd *s)
{
	if (!s->cpu)
		return 1;
	__builtin_cpu_init();
	if (!strcmp(s->cpu, "avx512f"))
		return __builtin_cpu_supports("avx512f");
	if (!strcmp(s->cpu, "avx2"))
		return __builtin_cpu_supports("avx2");
	return __builtin_cpu_supports("sse4.1");
}

static int simd_index(void)
{
	int i = atomic_load(&simd_choice);
	if (i >= 0)
		return i;
	for (i = 0; !cpu_has(&simds[i]); i++)
		;
	atomic_store(&simd_choice, i);
	return i;
}

const char *mtc_blake3_simd(void) { return simds[simd_index()].name; }

int mtc_blake3_set_simd(const char *name)
{
	for (size_t i = 0; i < N_SIMD; i++)
		if (!strcmp(simds[i].name, name)) {
			if (!cpu_has(&simds[i])) {
				errno = ENOTSUP;
				return -1;
			}
			atomic_store(&simd_choice, (int)i);
			return 0;
		}
	errno = EINVAL;
	return -1;
}

/* n inputs at in + i * stride, each blocks full blocks; n CVs to out. */
static void hash_many(const uint8_t *in, size_t stride, size_t n, size_t blocks, const uint32_t key[8],
		      uint64_t counter, int inc, uint8_t flags, uint8_t flag_start, uint8_t flag_end,
		      uint8_t *out)
{
	for (int s = simd_index(); s < (int)N_SIMD; s++) {
		size_t w = (size_t)simds[s].width;
		while (n >= w) {
			if (simds[s].fn)
				simds[s].fn(in, stride, blocks, key, counter, inc, flags, flag_start,
					    flag_end, out);
			else
				many_portable1(in, blocks, key, counter, flags, flag_start, flag_end,
					       out);
			in += w * stride;
			out += w * MTC_BLAKE3_OUT_LEN;
			counter += inc ? w : 0;
			n -= w;
		}
	}
}

/* Reduces n (a power of two) adjacent CVs to keep (1 or 2, at most n), in place. */
static void reduce_cvs(uint8_t *cvs, size_t n, size_t keep, const uint32_t key[8])
{
	uint8_t tmp[LEAF_CHUNKS / 2 * MTC_BLAKE3_OUT_LEN];
	while (n > keep) {
		size_t half = n / 2;
		for (size_t i = 0; i < half; i += LEAF_CHUNKS / 2) {
			size_t k = half - i < LEAF_CHUNKS / 2 ? half - i : LEAF_CHUNKS / 2;
			hash_many(cvs + 64 * i, 64, k, 1, key, 0, 0, B3_PARENT, 0, 0, tmp);
			memcpy(cvs + 32 * i, tmp, 32 * k);
		}
		n = half;
	}
}

/*
 * The chaining value of a subtree of n chunks (a power of two), never the
 * root; with keep 2 (n >= 2) the CVs of its two halves instead, 64 bytes.
 */
static void subtree_cvs(const uint8_t *in, size_t n, uint64_t counter, const uint32_t key[8],
			size_t keep, uint8_t *out)
{
	uint8_t cvs[LEAF_CHUNKS * MTC_BLAKE3_OUT_LEN];
	if (n <= LEAF_CHUNKS) {
		hash_many(in, CHUNK, n, CHUNK / 64, key, counter, 1, 0, B3_CHUNK_START, B3_CHUNK_END,
			  cvs);
	} else {
		size_t parts = n / LEAF_CHUNKS < LEAF_CHUNKS ? n / LEAF_CHUNKS : LEAF_CHUNKS;
		size_t each = n / parts;
		for (size_t p = 0; p < parts; p++)
			subtree_cvs(in + p * each * CHUNK, each, counter + p * each, key, 1,
				    cvs + 32 * p);
		n = parts;
	}
	reduce_cvs(cvs, n, keep, key);
	memcpy(out, cvs, 32 * keep);
}

struct split {
	const uint8_t *in;
	size_t each;
	size_t parts;
	uint64_t counter;
	const uint32_t *key;
	uint8_t *cvs;
	atomic_size_t next;
};

static void *split_worker(void *arg)
{
	struct split *s = arg;
	size_t p;
	while ((p = atomic_fetch_add(&s->next, 1)) < s->parts)
		subtree_cvs(s->in + p * s->each * CHUNK, s->each, s->counter + p * s->each, s->key, 1,
			    s->cvs + 32 * p);
	return NULL;
}

/* subtree_cvs over several threads; falls back to the calling thread alone. */
static void subtree_cvs_parallel(const uint8_t *in, size_t n, uint64_t counter, const uint32_t key[8],
				 int threads, size_t keep, uint8_t *out)
{
	size_t parts = 1;
	while (parts < (size_t)threads * 4 && parts < LEAF_CHUNKS && n / parts >= 2 * LEAF_CHUNKS)
		parts *= 2;
	if (threads < 2 || parts < 2) {
		subtree_cvs(in, n, counter, key, keep, out);
		return;
	}
	uint8_t cvs[LEAF_CHUNKS * MTC_BLAKE3_OUT_LEN];
	struct split s = { in, n / parts, parts, counter, key, cvs, 0 };
	pthread_t tid[64];
	int started = 0;
	for (int t = 1; t < threads && t < 64; t++)
		if (pthread_create(&tid[started], NULL, split_worker, &s) == 0)
			started++;
	split_worker(&s);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	reduce_cvs(cvs, parts, keep, key);
	memcpy(out, cvs, 32 * keep);
}

void mtc_blake3_init(struct mtc_blake3 *h)
{
	memset(h, 0, offsetof(struct mtc_blake3, stage)); /* the stage is written before it is read */
	memcpy(h->key, mtc_blake3_iv, sizeof h->key);
	memcpy(h->cv, mtc_blake3_iv, sizeof h->cv);
	h->threads = 1;
}

void mtc_blake3_set_threads(struct mtc_blake3 *h, int threads)
{
	h->threads = threads < 1 ? 1 : threads;
}

static size_t chunk_len(const struct mtc_blake3 *h)
{
	return (size_t)h->blocks_compressed * 64 + h->buf_len;
}

static uint8_t chunk_start_flag(const struct mtc_blake3 *h)
{
	return h->blocks_compressed == 0 ? B3_CHUNK_START : 0;
}

/*
 * Merges finished subtrees until the stack holds popcount(total_chunks)
 * entries. Called only when more input is known to follow, so no merge
 * here is ever the root.
 */
static void merge_stack(struct mtc_blake3 *h, uint64_t total_chunks)
{
	while (h->cv_stack_len > (unsigned)__builtin_popcountll(total_chunks)) {
		uint8_t *pair = h->cv_stack + 32 * (h->cv_stack_len - 2);
		uint32_t key[8];
		memcpy(key, h->key, sizeof key);
		many_portable1(pair, 1, key, 0, B3_PARENT, 0, 0, pair);
		h->cv_stack_len--;
	}
}

static void push_cv(struct mtc_blake3 *h, const uint8_t cv[32], uint64_t total_chunks)
{
	merge_stack(h, total_chunks);
	memcpy(h->cv_stack + 32 * h->cv_stack_len, cv, 32);
	h->cv_stack_len++;
}

static void finish_chunk(struct mtc_blake3 *h)
{
	uint8_t out[32];
	compress_cv(h->cv, h->buf, h->buf_len, h->chunk_counter, chunk_start_flag(h) | B3_CHUNK_END);
	for (int i = 0; i < 8; i++)
		store32(out + 4 * i, h->cv[i]);
	push_cv(h, out, h->chunk_counter);
	h->chunk_counter++;
	memcpy(h->cv, h->key, sizeof h->cv);
	h->buf_len = 0;
	h->blocks_compressed = 0;
}

static size_t chunk_update(struct mtc_blake3 *h, const uint8_t *p, size_t len)
{
	size_t used = 0;
	while (len > 0) {
		if (h->buf_len == 64) {
			compress_cv(h->cv, h->buf, 64, h->chunk_counter, chunk_start_flag(h));
			h->blocks_compressed++;
			h->buf_len = 0;
		}
		size_t room = 64 - (size_t)h->buf_len;
		size_t take = room < len ? room : len;
		memcpy(h->buf + h->buf_len, p, take);
		h->buf_len += (uint8_t)take;
		p += take;
		len -= take;
		used += take;
	}
	return used;
}

static void update_staged(struct mtc_blake3 *h, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0) {
		if (chunk_len(h) == CHUNK)
			finish_chunk(h);
		if (chunk_len(h) > 0 || len <= CHUNK) {
			size_t take = CHUNK - chunk_len(h) < len ? CHUNK - chunk_len(h) : len;
			chunk_update(h, p, take);
			merge_stack(h, h->chunk_counter);
			p += take;
			len -= take;
			continue;
		}
		/*
		 * The largest aligned subtree that fits, as the reference does:
		 * it may be all that is left, so it goes on the stack as its two
		 * halves and is never compressed as the root here.
		 */
		size_t n = 1, keep;
		while (2 * n * CHUNK <= len && (h->chunk_counter & (2 * n - 1)) == 0)
			n *= 2;
		keep = n > 1 ? 2 : 1;
		uint8_t cvs[64];
		if (n * CHUNK >= PARALLEL_MIN && h->threads > 1)
			subtree_cvs_parallel(p, n, h->chunk_counter, h->key, h->threads, keep, cvs);
		else
			subtree_cvs(p, n, h->chunk_counter, h->key, keep, cvs);
		for (size_t k = 0; k < keep; k++) {
			push_cv(h, cvs + 32 * k, h->chunk_counter);
			h->chunk_counter += n / keep;
		}
		p += n * CHUNK;
		len -= n * CHUNK;
	}
}

/*
 * The input reaches update_staged only in whole stages (and once, at the
 * end, the rest): the tree then advances in aligned subtrees of at least a
 * stage, hashed on the widest SIMD path, whatever sizes the caller's pieces
 * have (a socket or libcurl hands over odd sizes). Large pieces that start
 * on a stage boundary are hashed in place.
 */
void mtc_blake3_update(struct mtc_blake3 *h, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0) {
		if (h->stage_len == 0 && len >= MTC_BLAKE3_STAGE_LEN) {
			size_t whole = len - len % MTC_BLAKE3_STAGE_LEN;
			update_staged(h, p, whole);
			p += whole;
			len -= whole;
			continue;
		}
		size_t take = MTC_BLAKE3_STAGE_LEN - h->stage_len < len
				      ? MTC_BLAKE3_STAGE_LEN - h->stage_len
				      : len;
		memcpy(h->stage + h->stage_len, p, take);
		h->stage_len += take;
		p += take;
		len -= take;
		if (h->stage_len == MTC_BLAKE3_STAGE_LEN) {
			update_staged(h, h->stage, h->stage_len);
			h->stage_len = 0;
		}
	}
}

static void flush_stage(struct mtc_blake3 *h)
{
	update_staged(h, h->stage, h->stage_len);
	h->stage_len = 0;
}

void mtc_blake3_subtree(const void *in, size_t chunks, uint64_t counter, uint8_t cv[MTC_BLAKE3_OUT_LEN])
{
	subtree_cvs(in, chunks, counter, mtc_blake3_iv, 1, cv);
}

void mtc_blake3_push_subtree(struct mtc_blake3 *h, const uint8_t cv[MTC_BLAKE3_OUT_LEN], size_t chunks)
{
	flush_stage(h);
	push_cv(h, cv, h->chunk_counter);
	h->chunk_counter += chunks;
}

struct output {
	uint32_t cv[8];
	uint8_t block[64];
	uint8_t block_len;
	uint64_t counter;
	uint8_t flags;
};

void mtc_blake3_final(const struct mtc_blake3 *in, uint8_t *out, size_t out_len)
{
	struct mtc_blake3 copy;
	const struct mtc_blake3 *h = in;
	struct output o;
	if (in->stage_len) {
		copy = *in;
		flush_stage(&copy);
		h = &copy;
	}
	int top = h->cv_stack_len - 1;
	if (chunk_len(h) == 0 && top >= 1) {
		/* the input ended on a subtree: its two halves are the last parent */
		memcpy(o.cv, h->key, sizeof o.cv);
		memcpy(o.block, h->cv_stack + 32 * (top - 1), 64);
		o.block_len = 64;
		o.counter = 0;
		o.flags = B3_PARENT;
		top -= 2;
	} else {
		memcpy(o.cv, h->cv, sizeof o.cv);
		memset(o.block, 0, sizeof o.block);
		memcpy(o.block, h->buf, h->buf_len);
		o.block_len = h->buf_len;
		o.counter = h->chunk_counter;
		o.flags = chunk_start_flag(h) | B3_CHUNK_END;
	}
	for (int i = top; i >= 0; i--) {
		uint8_t right[32];
		compress_cv(o.cv, o.block, o.block_len, o.counter, o.flags);
		for (int k = 0; k < 8; k++)
			store32(right + 4 * k, o.cv[k]);
		memcpy(o.block, h->cv_stack + 32 * i, 32);
		memcpy(o.block + 32, right, 32);
		memcpy(o.cv, h->key, sizeof o.cv);
		o.block_len = 64;
		o.counter = 0;
		o.flags = B3_PARENT;
	}
	for (uint64_t t = 0; out_len > 0; t++) {
		uint32_t v[16];
		uint8_t block[64];
		compress_rounds(o.cv, o.block, o.block_len, t, o.flags | B3_ROOT, v);
		for (int i = 0; i < 8; i++) {
			store32(block + 4 * i, v[i] ^ v[i + 8]);
			store32(block + 32 + 4 * i, v[i + 8] ^ o.cv[i]);
		}
		size_t take = out_len < 64 ? out_len : 64;
		memcpy(out, block, take);
		out += take;
		out_len -= take;
	}
}

void mtc_blake3(const void *data, size_t len, uint8_t out[MTC_BLAKE3_OUT_LEN])
{
	struct mtc_blake3 h;
	mtc_blake3_init(&h);
	mtc_blake3_update(&h, data, len);
	mtc_blake3_final(&h, out, MTC_BLAKE3_OUT_LEN);
}

void mtc_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}
