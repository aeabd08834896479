#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "digest.h"
#include "digest_cache.h"
#include "fsutil.h"
#include "manifest.h"
#include "prehash.h"
#include "tap.h"
#include "walk.h"
#include "xalloc.h"

static char *root;

/* A background piece of work that ends only when told to (or after 10 s). */
struct slow_work {
	struct mtc_digest_cache *c;
	atomic_int go_on, ended;
};

static void *slow_work(void *arg)
{
	struct slow_work *w = arg;
	for (int i = 0; i < 1000 && !atomic_load(&w->go_on); i++)
		usleep(10000);
	mtc_digest_cache_end(w->c);
	atomic_store(&w->ended, 1);
	return NULL;
}

static char *path_of(const char *rel) { return xasprintf("%s/%s", root, rel); }

static void write_file(const char *rel, const char *text, size_t len)
{
	char *p = path_of(rel);
	FILE *f = fopen(p, "w");
	fwrite(text, 1, len, f);
	fclose(f);
	free(p);
}

static void make_dir(const char *rel)
{
	char *p = path_of(rel);
	mkdir(p, 0755);
	free(p);
}

/* rel is being written: its ctime is now (a pass must see it grow, not quiet). */
static void busy(const char *rel)
{
	char *p = path_of(rel);
	utimensat(AT_FDCWD, p, NULL, 0);
	free(p);
}

static void sleep_quiet(void) { usleep((useconds_t)(MTC_DIGEST_QUIET_S * 1e6) + 50000); }

/* Whether the cache knows rel's whole-file digest, and that it is the true one. */
static int knows(struct mtc_digest_cache *c, const char *rel)
{
	char *p = path_of(rel), hex[65], want[MTC_DIGEST_LEN];
	struct stat st;
	int hit = stat(p, &st) == 0 && mtc_digest_cache_get(c, &st, hex);
	int right = hit && mtc_digest_file(p, 1, want, NULL) == 0 && !strcmp(hex, want);
	free(p);
	return hit ? (right ? 1 : -1) : 0;
}

int main(void)
{
	char tmpl[] = "/tmp/mtc-digest-cache.XXXXXX";
	struct mtc_config cfg = { .job_name = "job", .node_rank = 3 };
	struct mtc_digest_cache *c = mtc_digest_cache_new();
	static char big[300000];

	root = mkdtemp(tmpl);
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 7 + i / 251);
	make_dir("7.orbax-checkpoint-tmp");
	make_dir("7.orbax-checkpoint-tmp/d");
	write_file("7.orbax-checkpoint-tmp/d/big", big, sizeof big);
	write_file("7.orbax-checkpoint-tmp/small", "small", 5);
	make_dir("step=8");
	write_file("step=8/f", "nemo", 4);
	write_file("job-s9-n3-w1.save", "torch", 5);
	write_file("job-s9-n4-w1.save", "other rank", 10);
	make_dir("other");
	write_file("other/f", "not a step", 10);

	is_int(mtc_prehash_pass(root, &cfg, 2, c), 0, "files written just now are not hashed");
	is_int(knows(c, "7.orbax-checkpoint-tmp/small"), 0, "nor known");
	sleep_quiet();
	is_int(mtc_prehash_pass(root, &cfg, 2, c), sizeof big + 5 + 4 + 5,
	       "once quiet, the files of Orbax's and NeMo's tmp dirs and this node's .save are");
	ok(knows(c, "7.orbax-checkpoint-tmp/d/big") == 1 && knows(c, "step=8/f") == 1 &&
		   knows(c, "job-s9-n3-w1.save") == 1,
	   "with their true digests");
	ok(!knows(c, "other/f") && !knows(c, "job-s9-n4-w1.save"),
	   "another dir and another rank's save are left alone");
	is_int(mtc_prehash_pass(root, &cfg, 2, c), 0, "a second pass hashes nothing again");

	/* the framework's rename of its tmp dir keeps what is known */
	char *from = path_of("7.orbax-checkpoint-tmp"), *to = path_of("7");
	rename(from, to);
	char want[MTC_DIGEST_LEN], got[MTC_DIGEST_LEN];
	long long known = -1;
	struct mtc_manifest m;
	mtc_manifest_init(&m);
	ok(mtc_digest_path(to, 1, want, NULL) == 0 &&
		   mtc_digest_path_cached(to, 1, c, got, &m, &known) == 0 && !strcmp(got, want),
	   "a step's digest with the cache is its digest");
	is_int(known, sizeof big + 5, "and its files were known after the step dir's rename");
	mtc_manifest_free(&m);

	/* a write after the hash, the size unchanged: the ctime tells */
	big[1000] ^= 1;
	write_file("7/d/big", big, sizeof big);
	is_int(knows(c, "7/d/big"), 0, "a file written again is not known");
	ok(mtc_digest_path(to, 1, want, NULL) == 0 &&
		   mtc_digest_path_cached(to, 1, c, got, NULL, &known) == 0 && !strcmp(got, want),
	   "and the step's digest is of its new bytes");
	is_int(known, 5, "only the unchanged file was taken from the cache");

	/* what a put accepts */
	char *small = path_of("7/small");
	struct stat before, after;
	char hex[65], other[65];
	memset(other, 'a', 64);
	other[64] = '\0';
	double since = mtc_wall_now();
	stat(small, &before);
	after = before;
	after.st_mtim.tv_nsec ^= 1;
	mtc_digest_cache_put(c, since, &before, &after, other);
	ok(!mtc_digest_cache_get(c, &before, hex) || strcmp(hex, other),
	   "a file that changed under its hash is not kept");
	write_file("fresh", "x", 1);
	char *fresh = path_of("fresh");
	since = mtc_wall_now();
	stat(fresh, &before);
	mtc_digest_cache_put(c, since, &before, &before, other);
	ok(!mtc_digest_cache_get(c, &before, hex), "nor one written just now");
	since = mtc_wall_now();
	stat(small, &before);
	mtc_digest_cache_put(c, since, &before, &before, other);
	ok(mtc_digest_cache_get(c, &before, hex) && !strcmp(hex, other),
	   "a quiet file whose figures held is kept with the digest put");

	/* a single file as the path is not looked up: the cache is for trees */
	mtc_digest_path_cached(small, 1, c, got, NULL, NULL);
	ok(strcmp(got, other) != 0, "a single file as the path is hashed, not looked up");

	/* sweeps */
	size_t held = mtc_digest_cache_files(c);
	mtc_digest_cache_sweep(c, MTC_DIGEST_KEEP_S);
	ok(held > 0 && mtc_digest_cache_files(c) == held, "a sweep keeps what was used lately");
	usleep(10000);
	mtc_digest_cache_sweep(c, 0.005);
	is_int((long long)mtc_digest_cache_files(c), 0, "and drops what was not");

	/* the worker slot */
	ok(mtc_digest_cache_begin(c), "the slot is free");
	ok(!mtc_digest_cache_begin(c), "and then taken");
	mtc_digest_cache_end(c);
	mtc_digest_cache_hold(c);
	ok(!mtc_digest_cache_begin(c), "a hold keeps work out");
	mtc_digest_cache_release(c);
	ok(mtc_digest_cache_begin(c), "until it is released");
	mtc_digest_cache_end(c);
	{
		/* work in the idle class may be starved: a hold does not wait for it to end */
		struct slow_work w = { .c = c };
		pthread_t t;
		ok(mtc_digest_cache_begin(c), "a background piece of work takes the slot");
		pthread_create(&t, NULL, slow_work, &w);
		mtc_digest_cache_hold(c);
		ok(!atomic_load(&w.ended), "a hold returns while that work still runs");
		atomic_store(&w.go_on, 1);
		pthread_join(t, NULL);
		ok(!mtc_digest_cache_begin(c), "and keeps new work out");
		mtc_digest_cache_release(c);
	}

	/* an OCDBT data file is hashed while it grows, segment by segment */
	struct mtc_config orbax = { .job_name = "job", .node_rank = 3, .framework = MTC_FW_ORBAX };
	struct mtc_config torch = { .job_name = "job", .node_rank = 3, .framework = MTC_FW_PYTORCH };
	const long long seg = MTC_DIGEST_SEG_BYTES;
	size_t grown = (size_t)(4 * seg + 100);
	char *data = xmalloc(grown + 3 * (size_t)seg);
	for (size_t i = 0; i < grown + 3 * (size_t)seg; i++)
		data[i] = (char)(i * 13 + i / 4093);
	/* all written above is quiet and known before the growing file is born, however
	 * fast the machine: the passes below hash the growing file and nothing else */
	sleep_quiet();
	mtc_prehash_pass(root, &cfg, 2, c);
	is_int(mtc_prehash_pass(root, &cfg, 2, c), 0,
	       "once all is quiet and known, a pass hashes nothing");
	make_dir("8.orbax-checkpoint-tmp");
	make_dir("8.orbax-checkpoint-tmp/d");
	const char *rel = "8.orbax-checkpoint-tmp/d/0123456789abcdef0123456789abcdef";
	write_file(rel, data, grown);
	char *grow = path_of(rel);
	struct stat st;
	uint8_t *cvs;
	busy(rel);
	mtc_prehash_pass(root, &torch, 2, c);
	stat(grow, &st);
	is_int((long long)mtc_digest_cache_prefix(c, &st, -1, grow, &cvs), 0,
	       "a growing file is left alone when the framework is not orbax");
	busy(rel);
	is_int(mtc_prehash_pass(root, &orbax, 2, c), 4 * seg,
	       "with orbax, the whole segments of a growing OCDBT data file before its last byte are hashed");
	stat(grow, &st);
	is_int((long long)mtc_digest_cache_prefix(c, &st, -1, grow, &cvs), 4, "and kept as its prefix");
	free(cvs);
	FILE *f = fopen(grow, "a");
	fwrite(data + grown, 1, 3 * (size_t)seg, f);
	fclose(f);
	busy(rel);
	is_int(mtc_prehash_pass(root, &orbax, 2, c), 3 * seg, "as it grows, the next ones");
	stat(grow, &st);
	is_int((long long)mtc_digest_cache_prefix(c, &st, -1, grow, &cvs), 7, "appended to its prefix");
	free(cvs);
	char *born_later = path_of("7/small");
	ok(mtc_digest_cache_prefix(c, &st, -1, born_later, &cvs) == 0 && !cvs,
	   "a file born at another time, under the same inode, has no prefix");
	free(born_later);
	busy(rel);
	mtc_prehash_pass(root, &orbax, 2, c);
	stat(grow, &st);
	is_int((long long)mtc_digest_cache_prefix(c, &st, -1, grow, &cvs), 7,
	       "and the file's own is hashed again");
	char *step8 = path_of("8.orbax-checkpoint-tmp");
	ok(mtc_digest_path(step8, 1, want, NULL) == 0 &&
		   mtc_digest_path_cached(step8, 1, c, got, NULL, &known) == 0 && !strcmp(got, want),
	   "a digest taking the prefix on one thread is the file's digest");
	memset(cvs, 0, 32);
	struct mtc_digest_cache *poisoned = mtc_digest_cache_new();
	int gfd = open(grow, O_RDONLY);
	mtc_digest_cache_put_prefix(poisoned, &st, gfd, 0, 7, cvs);
	close(gfd);
	ok(mtc_digest_path_cached(step8, 2, poisoned, got, NULL, NULL) == 0 && strcmp(got, want),
	   "a digest takes what the prefix says, unread (a wrong prefix gives another digest)");
	mtc_digest_cache_free(poisoned);
	free(cvs);
	sleep_quiet();
	is_int(mtc_prehash_pass(root, &orbax, 2, c), (long long)grown + 3 * seg,
	       "once quiet, the file is hashed whole, its prefix taken as known");
	is_int(knows(c, rel), 1, "to its true digest");
	free(step8);
	free(grow);
	free(data);

	free(from);
	free(to);
	free(small);
	free(fresh);
	mtc_digest_cache_free(c);
	mtc_remove_tree(root);
	return done();
}
