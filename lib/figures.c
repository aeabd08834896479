/*
 * The figures of a tree (figures.h): each entry's figures hashed on its own,
 * the hashes added up lane by lane, so that readdir's order does not matter.
 */
#include "figures.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "blake3/blake3.h"
#include "walk.h"

struct entry_figures {
	int64_t size, mtime_s, mtime_ns, ctime_s, ctime_ns, mode;
};

static void add_lanes(uint8_t sum[32], const uint8_t h[32])
{
	for (int i = 0; i < 4; i++) {
		uint64_t a, b;
		memcpy(&a, sum + 8 * i, 8);
		memcpy(&b, h + 8 * i, 8);
		a += b;
		memcpy(sum + 8 * i, &a, 8);
	}
}

static void add_entry(struct mtc_figures *f, const char *rel, const struct stat *st, int root)
{
	struct entry_figures e = {
		.size = S_ISREG(st->st_mode) ? (int64_t)st->st_size : 0,
		.mtime_s = st->st_mtim.tv_sec,
		.mtime_ns = st->st_mtim.tv_nsec,
		.ctime_s = root ? 0 : st->st_ctim.tv_sec,
		.ctime_ns = root ? 0 : st->st_ctim.tv_nsec,
		.mode = st->st_mode & S_IFMT,
	};
	struct mtc_blake3 h;
	uint8_t out[32];

	mtc_blake3_init(&h);
	mtc_blake3_update(&h, rel, strlen(rel) + 1);
	mtc_blake3_update(&h, &e, sizeof e);
	mtc_blake3_final(&h, out, 32);
	add_lanes(f->sum, out);
	f->entries++;
}

static int visit(const struct mtc_walk_entry *e, void *arg)
{
	if (e->error) {
		errno = e->error;
		return -1;
	}
	add_entry(arg, e->rel, &e->st, 0);
	return 0;
}

int mtc_figures_take(const char *path, struct mtc_figures *f)
{
	struct stat st;
	struct mtc_walk w = { .root = path, .max_depth = INT_MAX, .visit = visit, .arg = f };

	memset(f, 0, sizeof *f);
	if (stat(path, &st) < 0)
		return -1;
	add_entry(f, "", &st, 1);
	return S_ISDIR(st.st_mode) ? mtc_walk(&w) : 0;
}

int mtc_figures_same(const struct mtc_figures *a, const struct mtc_figures *b)
{
	return a->entries == b->entries && !memcmp(a->sum, b->sum, sizeof a->sum);
}
