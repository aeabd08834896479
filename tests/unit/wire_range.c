/*
 * A big file's ranges (peer_wire.h): hashed apart in pieces of any size and
 * joined in any order, they give the file's BLAKE3; a set of ranges that
 * does not cover the file exactly once is refused; the split cuts only what
 * is over a piece's share.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blake3/blake3.h"
#include "fsutil.h"
#include "manifest.h"
#include "peer/peer_manifest.h"
#include "peer/peer_wire.h"
#include "tap.h"
#include "walk.h"

#define UNIT MTC_WIRE_UNIT

static unsigned seed = 12345;
static unsigned next_rand(void) { return seed = seed * 1103515245u + 12345u; }

static void whole_hex(const uint8_t *data, size_t len, char hex[66])
{
	uint8_t out[32];
	mtc_blake3(data, len, out);
	mtc_hex(out, 32, hex);
}

/* Adds the range [off, off + len) of data (a file of size bytes) to l, hashed in uneven pieces. */
static void add_range(struct mtc_wire_list *l, const uint8_t *data, long long size, long long off,
		      long long len)
{
	struct mtc_wire_entry *w = mtc_wire_list_add(l, "big", 0, len);
	struct mtc_wire_hash h;
	w->off = off;
	w->file_size = size;
	mtc_wire_hash_start(&h, w);
	for (long long at = 0; at < len;) {
		long long k = 1 + next_rand() % (UNIT + UNIT / 2);
		k = k > len - at ? len - at : k;
		mtc_wire_hash_update(&h, data + off + at, (size_t)k);
		at += k;
	}
	mtc_wire_hash_end(&h);
}

/* The file cut at every `units` units, its ranges added last first, joined. */
static int joined(const uint8_t *data, long long size, long long units, char hex[66])
{
	struct mtc_wire_list l = { 0 };
	char err[256];
	long long step = units * UNIT, starts[4096];
	int n = 0, rc;
	for (long long off = 0; off < size; off += step)
		starts[n++] = off;
	mtc_wire_list_add(&l, "small", 0, 3); /* a whole file beside it stays as it is */
	while (n--)
		add_range(&l, data, size, starts[n], size - starts[n] < step ? size - starts[n] : step);
	rc = mtc_wire_join(&l, err, sizeof err);
	if (rc == 0 && l.n == 2 && !strcmp(l.e[0].path, "big") && l.e[0].size == size)
		memcpy(hex, l.e[0].digest, 66);
	else
		rc = -1;
	mtc_wire_list_free(&l);
	return rc;
}

static void joins(void)
{
	long long sizes[] = { 1,	1000,	       UNIT - 1,  UNIT,		 UNIT + 1,
			      2 * UNIT, 5 * UNIT + 17, 64 * UNIT, 64 * UNIT + 1, 200 * UNIT - 3 };
	uint8_t *data = malloc(200 * UNIT);
	for (long long i = 0; i < 200 * UNIT; i++)
		data[i] = (uint8_t)next_rand();
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		char want[66], got[66] = "";
		whole_hex(data, (size_t)sizes[i], want);
		int all = 1;
		for (long long units = 1; units <= 70; units += 23) {
			all &= joined(data, sizes[i], units, got) == 0 && !strcmp(got, want);
		}
		ok(all, "a file of %lld bytes in ranges of 1, 24, 47 and 70 units joins to its digest",
		   sizes[i]);
	}
	free(data);
}

/* Ranges of a 4-unit file given as (off, len) pairs; 0 when they join. */
static int join_of(const long long *r, int n, int also_whole)
{
	static uint8_t data[4 * UNIT];
	struct mtc_wire_list l = { 0 };
	char err[256];
	if (also_whole)
		mtc_wire_list_add(&l, "big", 0, 4 * UNIT);
	for (int i = 0; i < n; i++)
		add_range(&l, data, 4 * UNIT, r[2 * i], r[2 * i + 1]);
	int rc = mtc_wire_join(&l, err, sizeof err);
	mtc_wire_list_free(&l);
	return rc;
}

static void refusals(void)
{
	long long all[] = { 0, UNIT, UNIT, 3 * UNIT };
	long long gap[] = { 0, UNIT, 2 * UNIT, 2 * UNIT };
	long long overlap[] = { 0, 2 * UNIT, UNIT, 3 * UNIT };
	long long twice[] = { 0, UNIT, 0, UNIT, UNIT, 3 * UNIT };
	long long no_end[] = { 0, UNIT, UNIT, 2 * UNIT };
	is_int(join_of(all, 2, 0), 0, "two ranges that cover the file join");
	is_int(join_of(gap, 2, 0), -1, "ranges with a gap are refused");
	is_int(join_of(overlap, 2, 0), -1, "overlapping ranges are refused");
	is_int(join_of(twice, 3, 0), -1, "a range sent twice is refused");
	is_int(join_of(no_end, 2, 0), -1, "ranges that stop short of the end are refused");
	is_int(join_of(all, 2, 1), -1, "ranges beside a whole copy of the file are refused");
	is_int(join_of(all, 0, 0), 0, "nothing to join (a session committed before any range)");

	struct mtc_wire_list l = { 0 };
	char err[256];
	mtc_wire_list_add(&l, "a", 0, 1);
	mtc_wire_list_add(&l, "a", 0, 1);
	is_int(mtc_wire_join(&l, err, sizeof err), -1, "a whole file sent twice is refused");
	mtc_wire_list_free(&l);
}

/* The parts of split, k ways: every byte of every file exactly once, ranges whole units. */
static int covers(const struct mtc_manifest *m, int k, int ranges, int *cut)
{
	struct mtc_wire_part *bins[8];
	size_t counts[8];
	long long seen[8] = { 0 };
	int n = mtc_manifest_split(m, k, ranges, bins, counts), good = n <= k;
	*cut = 0;
	for (int b = 0; b < n; b++)
		for (size_t i = 0; i < counts[b]; i++) {
			const struct mtc_wire_part *p = &bins[b][i];
			for (size_t e = 0; e < m->n; e++) {
				if (strcmp(m->entries[e].path, p->path) || m->entries[e].type)
					continue;
				seen[e] += p->len < 0 ? m->entries[e].size : p->len;
				*cut += p->len >= 0;
				good &= p->len < 0 ||
					(p->off % UNIT == 0 &&
					 (p->len % UNIT == 0 || p->off + p->len == m->entries[e].size));
			}
		}
	for (size_t e = 0; e < m->n; e++)
		good &= m->entries[e].type || seen[e] == m->entries[e].size;
	for (int b = 0; b < k; b++)
		free(bins[b]);
	return good;
}

static void splits(void)
{
	struct mtc_manifest m;
	int cut;
	mtc_manifest_init(&m);
	mtc_manifest_append(&m, "", 0, MTC_ENTRY_DIR, 0, "");
	mtc_manifest_append(&m, "d", 1, MTC_ENTRY_DIR, 0, "");
	mtc_manifest_append(&m, "d/big", 5, MTC_ENTRY_FILE, (100LL << 20) + 12345, "");
	mtc_manifest_append(&m, "d/mid", 5, MTC_ENTRY_FILE, 20LL << 20, "");
	mtc_manifest_append(&m, "small", 5, MTC_ENTRY_FILE, 100, "");
	mtc_manifest_sort(&m);
	ok(covers(&m, 4, 0, &cut) && cut == 0, "without ranges every file goes whole");
	ok(covers(&m, 4, 1, &cut) && cut == 4, "with ranges, four ways: the big file in four ranges");
	ok(covers(&m, 1, 1, &cut) && cut == 0, "one way: nothing is cut");
	ok(covers(&m, 8, 1, &cut) && cut == 9,
	   "eight ways: ranges of at least 16 MiB, the 20 MiB file cut too");
	mtc_manifest_free(&m);
}

/* The whole stream of a reader of parts of root, in memory; its length in *len. */
static char *stream(const char *root, const struct mtc_wire_part *parts, size_t n, size_t *len)
{
	char err[256];
	long long total;
	struct mtc_wire_reader *r = mtc_wire_reader_open_list(root, parts, n, &total, err, sizeof err);
	char *buf = r ? malloc((size_t)total) : NULL;
	ssize_t got = r ? mtc_wire_reader_read(r, buf, (size_t)total, err, sizeof err) : -1;
	mtc_wire_reader_close(r);
	*len = got == total ? (size_t)got : 0;
	return buf;
}

/* Two ranges of a file sent as two streams, each received by both extractors, joined. */
static void wire(void)
{
	char dir[] = "/tmp/mtc-wire-range.XXXXXX", src[64], path[96], err[256];
	long long size = 5 * UNIT + 17;
	uint8_t *data = malloc((size_t)size);
	if (!mkdtemp(dir))
		return;
	for (long long i = 0; i < size; i++)
		data[i] = (uint8_t)next_rand();
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(path, sizeof path, "%s/src/f", dir);
	mkdir(src, 0755);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	ok(fd >= 0 && mtc_write_all(fd, data, (size_t)size) == 0, "a file of five units and a bit");
	close(fd);
	struct mtc_wire_part a = { "f", 0, 2 * UNIT }, b = { "f", 2 * UNIT, size - 2 * UNIT };
	size_t la, lb;
	char *sa = stream(src, &a, 1, &la), *sb = stream(src, &b, 1, &lb);
	ok(la && lb, "each range is a stream of its own");
	for (int sock = 0; sock < 2; sock++) {
		struct mtc_wire_limits lim = { .max_bytes = 1 << 30, .max_files = 100, .max_depth = 8 };
		struct mtc_wire_list got = { 0 };
		char out[64], want[66];
		int rc = 0, sv[2];
		snprintf(out, sizeof out, "%s/out%d", dir, sock);
		mkdir(out, 0755);
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		for (int i = 0; i < 2; i++) {
			char *s = i ? sa : sb; /* the last range first */
			size_t l = i ? la : lb;
			if (sock) {
				rc |= mtc_wire_extract_sock(sv[0], s, l, 5, NULL, out, &lim, NULL, &got,
							    NULL, err, sizeof err);
			} else {
				char tmp[96];
				snprintf(tmp, sizeof tmp, "%s/stream", dir);
				int t = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
				mtc_write_all(t, s, l);
				lseek(t, 0, SEEK_SET);
				rc |= mtc_wire_extract(t, out, &lim, NULL, &got, err, sizeof err);
				close(t);
			}
		}
		close(sv[0]);
		close(sv[1]);
		whole_hex(data, (size_t)size, want);
		ok(rc == 0 && mtc_wire_join(&got, err, sizeof err) == 0 && got.n == 1 &&
			   got.e[0].size == size && !strcmp(got.e[0].digest, want),
		   "%s extractor: the ranges join to the file's digest",
		   sock ? "the socket" : "libarchive's");
		snprintf(path, sizeof path, "%s/f", out);
		uint8_t *back = malloc((size_t)size);
		fd = open(path, O_RDONLY);
		ok(fd >= 0 && read(fd, back, (size_t)size) == size && !memcmp(back, data, (size_t)size),
		   "%s extractor: each range lands in its place", sock ? "the socket" : "libarchive's");
		close(fd);
		free(back);
		mtc_wire_list_free(&got);
	}
	free(sa);
	free(sb);
	free(data);
	mtc_remove_tree(dir);
}

int main(void)
{
	wire();
	joins();
	refusals();
	splits();
	return done();
}
