/*
 * BLAKE3 against the official test-vector inputs (byte i = i mod 251) at the
 * official lengths plus a few large ones for the threaded tree. Expected
 * values: `b3sum -l 131` (Debian b3sum 1.2.0) of those inputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "blake3/blake3.h"
#include "digest.h"
#include "tap.h"

static const struct {
	size_t len;
	const char *hex;
} vectors[] = {
	{ 0,
	  "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262e00f03e7b69af26b7faaf09fcd333050338ddfe085b8cc869ca98b206c08243a26f5487789e8f660afe6c99ef9e0c52b92e7393024a80459cf91f476f9ffdbda7001c22e159b402631f277ca96f2defdf1078282314e763699a31c5363165421cce14d" },
	{ 1,
	  "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213c3a6cb8bf623e20cdb535f8d1a5ffb86342d9c0b64aca3bce1d31f60adfa137b358ad4d79f97b47c3d5e79f179df87a3b9776ef8325f8329886ba42f07fb138bb502f4081cbcec3195c5871e6c23e2cc97d3c69a613eba131e5f1351f3f1da786545e5" },
	{ 1023,
	  "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11a182d27a591b05592b15607500e1e8dd56bc6c7fc063715b7a1d737df5bad3339c56778957d870eb9717b57ea3d9fb68d1b55127bba6a906a4a24bbd5acb2d123a37b28f9e9a81bbaae360d58f85e5fc9d75f7c370a0cc09b6522d9c8d822f2f28f485" },
	{ 1024,
	  "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af71cf8107265ecdaf8505b95d8fcec83a98a6a96ea5109d2c179c47a387ffbb404756f6eeae7883b446b70ebb144527c2075ab8ab204c0086bb22b7c93d465efc57f8d917f0b385c6df265e77003b85102967486ed57db5c5ca170ba441427ed9afa684e" },
	{ 1025,
	  "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444f4c4a22b4b399155358a994e52bf255de60035742ec71bd08ac275a1b51cc6bfe332b0ef84b409108cda080e6269ed4b3e2c3f7d722aa4cdc98d16deb554e5627be8f955c98e1d5f9565a9194cad0c4285f93700062d9595adb992ae68ff12800ab67a" },
	{ 2048,
	  "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a9a60bf80001410ec9eea6698cd537939fad4749edd484cb541aced55cd9bf54764d063f23f6f1e32e12958ba5cfeb1bf618ad094266d4fc3c968c2088f677454c288c67ba0dba337b9d91c7e1ba586dc9a5bc2d5e90c14f53a8863ac75655461cea8f9" },
	{ 2049,
	  "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b687952256303096de31d71d74103403822a2e0bc1eb193e7aecc9643a76b7bbc0c9f9c52e8783aae98764ca468962b5c2ec92f0c74eb5448d519713e09413719431c802f948dd5d90425a4ecdadece9eb178d80f26efccae630734dff63340285adec2aed3b51073ad3" },
	{ 3072,
	  "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd29a3f6b0b978d6608335c09dc94ccf682f9951cdfc501bfe47b9c9189a6fc7b404d120258506341a6d802857322fbd20d3e5dae05b95c88793fa83db1cb08e7d8008d1599b6209d78336e24839724c191b2a52a80448306e0daa84a3fdb566661a37e11" },
	{ 3073,
	  "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd39a27ae3b79d68d89da9bf25bc27139ae65a324918a5f9b7828181e52cf373c84f35b639b7fccbb985b6f2fa56aea0c18f531203497b8bbd3a07ceb5926f1cab74d14bd66486d9a91eba99059a98bd1cd25876b2af5a76c3e9eed554ed72ea952b603bf" },
	{ 4096,
	  "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e9690289e9409ddb1b99768eafe1623da896faf7e1114bebeadc1be30829b6f8af707d85c298f4f0ff4d9438aef948335612ae921e76d411c3a9111df62d27eaf871959ae0062b5492a0feb98ef3ed4af277f5395172dbe5c311918ea0074ce0036454f620" },
	{ 4097,
	  "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb99505f91b0b5600a11251652eacfa9497b31cd3c409ce2e45cfe6c0a016967316c426bd26f619eab5d70af9a418b845c608840390f361630bd497b1ab44019316357c61dbe091ce72fc16dc340ac3d6e009e050b3adac4b5b2c92e722cffdc46501531956" },
	{ 5120,
	  "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833acc61c8fdc114a2010ce8038c853e121e1544985133fccdd0a2d507e8e615e611e9a0ba4f47915f49e53d721816a9198e8b30f12d20ec3689989175f1bf7a300eee0d9321fad8da232ece6efb8e9fd81b42ad161f6b9550a069e66b11b40487a5f5059" },
	{ 5121,
	  "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff96adaab0613a6146cdaabe498c3a94e529d3fc1da2bd08edf54ed64d40dcd6777647eac51d8277d70219a9694334a68bc8f0f23e20b0ff70ada6f844542dfa32cd4204ca1846ef76d811cdb296f65e260227f477aa7aa008bac878f72257484f2b6c95" },
	{ 6144,
	  "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca2054d742022da6fdda444ebc384b04a54c3ac5839b49da7d39f6d8a9db03deab32aade156c1c0311e9b3435cde0ddba0dce7b26a376cad121294b689193508dd63151603c6ddb866ad16c2ee41585d1633a2cea093bea714f4c5d6b903522045b20395c83" },
	{ 6145,
	  "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f18a2cfdd73c6e39dd75ce7c1c6e3ef238fd54465f053b25d21044ccb2093beb015015532b108313b5829c3621ce324b8e14229091b7c93f32db2e4e63126a377d2a63a3597997d4f1cba59309cb4af240ba70cebff9a23d5e3ff0cdae2cfd54e070022" },
	{ 7168,
	  "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a5707c321c83361793b9af62a40f43b523df1c8633cecb4cd14d00bdc79c78fca5165b863893f6d38b02ff7236c5a9a8ad2dba87d24c547cab046c29fc5bc1ed142e1de4763613bb162a5a538e6ef05ed05199d751f9eb58d332791b8d73fb74e4fce95" },
	{ 7169,
	  "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e781798a8b20534be1ca9eb2ae2df3fae2ea60e48c6fb0b850b1385b5de0fe460dbe9d9f9b0d8db4435da75c601156df9d047f4ede008732eb17adc05d96180f8a73548522840779e6062d643b79478a6e8dbce68927f36ebf676ffa7d72d5f68f050b119c8" },
	{ 8192,
	  "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a635fe51a27db045a567c1ad51be5aa34c01c6651c4d9b5b5ac5d0fd58cf18dd61a47778566b797a8c67df7b1d60b97b19288d2d877bb2df417ace009dcb0241ca1257d62712b6a4043b4ff33f690d849da91ea3bf711ed583cb7b7a7da2839ba71309bbf" },
	{ 8193,
	  "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3bb2282aa69be089359ea1154b9a9286c4a56af4de975a9aa4a5c497654914d279bea60bb6d2cf7225a2fa0ff5ef56bbe4b149f3ed15860f78b4e2ad04e158e375c1e0c0b551cd7dfc82f1b155c11b6b3ed51ec9edb30d133653bb5709d1dbd55f4e1ff6" },
	{ 16384,
	  "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde49d764c270176e53e97bdffa58d549073f2c660be0e81293767ed4e4929f9ad34bbb39a529334c57c4a381ffd2a6d4bfdbf1482651b172aa883cc13408fa67758a3e47503f93f87720a3177325f7823251b85275f64636a8f1d599c2e49722f42e93893" },
	{ 31744,
	  "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47860cc51f2b0c28a7b77304bd55fe73af663c02d3f52ea053ba43431ca5bab7bfea2f5e9d7121770d88f70ae9649ea713087d1914f7f312147e247f87eb2d4ffef0ac978bf7b6579d57d533355aa20b8b77b13fd09748728a5cc327a8ec470f4013226f" },
	{ 102400,
	  "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085e01c59dab908c04c3342b816941a26d69c2605ebee5ec5291cc55e15b76146e6745f0601156c3596cb75065a9c57f35585a52e1ac70f69131c23d611ce11ee4ab1ec2c009012d236648e77be9295dd0426f29b764d65de58eb7d01dd42248204f45f8e" },
	{ 1048576,
	  "74cb441fd087764ca9c3694da742ebe30cbeb3060a17009ca81825c7a8d10343595c8e732e658489960cfae70951ca2c8c30c90ecd0d3769ce505ae0df7446aca343592d01da4911422257b02ff75cfd703b016c2b7ac3fd2f7760b7a4d7649184fefa69b77446d8efc6d093cc1e315c7fd918618e7dda337d278a36c2f74245e2fa28" },
	{ 1048577,
	  "2f053cd7472cf0cd2f9adaf45c1180255b91b9a865404a63671a0ee5f792ed33a131af9e51c941f9ffab2d9d36016ccb7a2b60195263874a1a66df85b4994d872bd46ac2941533a5dae91fa66dab1343d82e05117746d56acc37e5fba2ef58cd060bd857011dd7b099798a8582a59e4c172e9e93113c38afa88ba87afd63ea88d5f692" },
	{ 9000001,
	  "4ab3b3b4b5293a5a00e42679f357f45c7cd0aec7845f0a5958928e15041f268739eb62b0d53a61bf642e9f0e7d6e3b2d7c7399f18abf9c146472335a6c91dcc392850eee93514ee6a415022ce48df51d3838e7be9a623960a4cee53e66f4ac7a7fbd398882208bcedfc45878234a5aafa4f7b013e4265f54ab72d5d6b78b31d9982070" },
};
#define N_VECTORS (sizeof vectors / sizeof vectors[0])

static uint8_t *input(size_t len)
{
	uint8_t *p = malloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i % 251);
	return p;
}

static void check_one_shot(const char *simd, size_t len, const char *want, int threads)
{
	uint8_t *in = input(len), out[131];
	char hex[263];
	struct mtc_blake3 h;
	mtc_blake3_init(&h);
	mtc_blake3_set_threads(&h, threads);
	mtc_blake3_update(&h, in, len);
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, hex);
	is_str(hex, want, "%s, %d thread(s): %zu bytes, 131 bytes out", simd, threads, len);
	free(in);
}

/* Feeds the input in pieces of irregular sizes: the result must not depend on them. */
static void check_pieces(const char *simd, size_t len, const char *want)
{
	static const size_t steps[] = { 1, 63, 64, 65, 1000, 1024, 4096, 5000, 70000, 16384, 2048 };
	const size_t nsteps = sizeof steps / sizeof *steps;
	uint8_t *in = input(len), out[32];
	char hex[65];
	struct mtc_blake3 h;
	mtc_blake3_init(&h);
	size_t off = 0;
	for (int i = 0; off < len; i++) {
		size_t take = steps[i % nsteps] < len - off ? steps[i % nsteps] : len - off;
		mtc_blake3_update(&h, in + off, take);
		off += take;
	}
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, hex);
	ok(!strncmp(hex, want, 64), "%s: %zu bytes fed in irregular pieces", simd, len);
	free(in);
}

/* Whole subtrees of `chunks` chunks pushed one by one, then the tail: the one-shot hash. */
static void check_subtrees(const char *simd, size_t len, const char *want, size_t chunks)
{
	uint8_t *in = input(len), out[32], cv[32];
	char hex[65];
	struct mtc_blake3 h;
	mtc_blake3_init(&h);
	size_t bytes = chunks * MTC_BLAKE3_CHUNK_LEN, done_ = 0;
	for (; len - done_ > bytes; done_ += bytes) {
		mtc_blake3_subtree(in + done_, chunks, done_ / MTC_BLAKE3_CHUNK_LEN, cv);
		mtc_blake3_push_subtree(&h, cv, chunks);
	}
	mtc_blake3_update(&h, in + done_, len - done_);
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, hex);
	ok(!strncmp(hex, want, 64), "%s: %zu bytes in subtrees of %zu chunks", simd, len, chunks);
	free(in);
}

/* Files around the digest's 4 MiB segments (hashed apart, on threads) against the one-shot hash. */
static void check_files(void)
{
	static const size_t sizes[] = { 4194303, 4194304, 4194305, 8388608, 8388609, 12582913 };
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/mtc-blake3.XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		ok(0, "temporary directory in %s", tmp);
		return;
	}
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint8_t *in = input(sizes[i]), raw[32];
		char want[65], got[MTC_DIGEST_LEN];
		mtc_blake3(in, sizes[i], raw);
		mtc_hex(raw, 32, want);
		snprintf(path, sizeof path, "%s/f%zu", dir, sizes[i]);
		FILE *f = fopen(path, "wb");
		int written = f && fwrite(in, 1, sizes[i], f) == sizes[i];
		if (f)
			fclose(f);
		ok(written, "wrote %zu bytes", sizes[i]);
		for (int threads = 1; threads <= 3; threads += 2) {
			long long size = -1;
			int rc = mtc_digest_file(path, threads, got, &size);
			ok(rc == 0 && !strcmp(got, want) && size == (long long)sizes[i],
			   "file of %zu bytes on %d thread(s)", sizes[i], threads);
		}
		free(in);
	}
	char d[MTC_DIGEST_LEN];
	struct mtc_manifest m;
	mtc_manifest_init(&m);
	ok(mtc_digest_path(dir, 3, d, &m) == 0 && m.n == 7 && d[0] == 'D',
	   "directory of segmented files on 3 threads");
	for (size_t i = 0; i < m.n; i++) {
		char one[MTC_DIGEST_LEN];
		if (!*m.entries[i].path)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, m.entries[i].path);
		mtc_digest_file(path, 1, one, NULL);
		is_str(m.entries[i].digest, one, "%s in the manifest", m.entries[i].path);
		unlink(path);
	}
	mtc_manifest_free(&m);
	rmdir(dir);
}

int main(void)
{
	static const char *simds[] = { "portable", "sse41", "avx2", "avx512" };
	for (int s = 0; s < 4; s++) {
		if (mtc_blake3_set_simd(simds[s]) != 0) {
			ok(1, "# SKIP %s: not supported by this CPU", simds[s]);
			continue;
		}
		for (size_t i = 0; i < N_VECTORS; i++) {
			check_one_shot(simds[s], vectors[i].len, vectors[i].hex, 1);
			check_pieces(simds[s], vectors[i].len, vectors[i].hex);
		}
		check_one_shot(simds[s], vectors[N_VECTORS - 1].len, vectors[N_VECTORS - 1].hex, 3);
		check_one_shot(simds[s], vectors[N_VECTORS - 2].len, vectors[N_VECTORS - 2].hex, 2);
		check_subtrees(simds[s], vectors[N_VECTORS - 1].len, vectors[N_VECTORS - 1].hex, 4096);
		check_subtrees(simds[s], vectors[N_VECTORS - 2].len, vectors[N_VECTORS - 2].hex, 1);
		check_subtrees(simds[s], vectors[N_VECTORS - 3].len, vectors[N_VECTORS - 3].hex, 64);
	}
	check_files();
	uint8_t out[32];
	char hex[65];
	mtc_blake3("abc", 3, out);
	mtc_hex(out, 32, hex);
	is_str(hex, "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85",
	       "one-shot helper on \"abc\"");
	return done();
}
