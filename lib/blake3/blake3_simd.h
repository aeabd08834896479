/*
 * The W-way compression shared by the SIMD paths: each vector lane hashes
 * one input. Included by blake3_<isa>.c after it defines VEC, W, TARGET,
 * MANY_FN, LOADU, STOREU, SET1, ADD, XOR, ROT16, ROT12, ROT8, ROT7,
 * load_msg(in, stride, off, m) (the transposed message words) and
 * store_cvs(h, out) (the W chaining values, little-endian, one after another).
 */

#define G(a, b, c, d, x, y)                     \
	do {                                    \
		v[a] = ADD(ADD(v[a], v[b]), x); \
		v[d] = ROT16(XOR(v[d], v[a]));  \
		v[c] = ADD(v[c], v[d]);         \
		v[b] = ROT12(XOR(v[b], v[c]));  \
		v[a] = ADD(ADD(v[a], v[b]), y); \
		v[d] = ROT8(XOR(v[d], v[a]));   \
		v[c] = ADD(v[c], v[d]);         \
		v[b] = ROT7(XOR(v[b], v[c]));   \
	} while (0)

TARGET void MANY_FN(const uint8_t *in, size_t stride, size_t blocks, const uint32_t key[8],
		    uint64_t counter, int inc, uint8_t flags, uint8_t flag_start, uint8_t flag_end,
		    uint8_t *out)
{
	VEC h[8], v[16];
	uint32_t lo[W], hi[W];
	uint64_t step = inc ? 1 : 0;
	for (int l = 0; l < W; l++) {
		uint64_t c = counter + step * (uint64_t)l;
		lo[l] = (uint32_t)c;
		hi[l] = (uint32_t)(c >> 32);
	}
	VEC clo = LOADU(lo), chi = LOADU(hi);
#pragma GCC unroll 16
	for (int i = 0; i < 8; i++)
		h[i] = SET1(key[i]);
	uint8_t bf = flags | flag_start;
	/* Each block's words are transposed one block ahead, into the other half of mb. */
	VEC mb[2][16];
	load_msg(in, stride, 0, mb[0]);
	for (size_t b = 0; b < blocks; b++) {
		/* Chunk groups lie back to back: fetch the next group, W lines per block. */
#pragma GCC unroll 16
		for (int l = 0; l < W; l++)
			_mm_prefetch((const char *)((uintptr_t)in + W * stride +
						    (b * W + (size_t)l) * 64),
				     _MM_HINT_T1);
		if (b + 1 < blocks)
			load_msg(in, stride, (b + 1) * 64, mb[(b + 1) & 1]);
		const VEC *m = mb[b & 1];
		if (b + 1 == blocks)
			bf |= flag_end;
#pragma GCC unroll 16
		for (int i = 0; i < 8; i++)
			v[i] = h[i];
#pragma GCC unroll 16
		for (int i = 0; i < 4; i++)
			v[8 + i] = SET1(mtc_blake3_iv[i]);
		v[12] = clo;
		v[13] = chi;
		v[14] = SET1(64);
		v[15] = SET1(bf);
#pragma GCC unroll 7
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
#pragma GCC unroll 16
		for (int i = 0; i < 8; i++)
			h[i] = XOR(v[i], v[i + 8]);
		bf = flags;
	}
	store_cvs(h, out);
}

#undef G
