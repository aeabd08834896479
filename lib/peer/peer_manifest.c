#include "peer_manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_name.h"
#include "fsutil.h"
#include "manifest_text.h"
#include "naming.h"
#include "xalloc.h"

/* A logical name (data_name.h) needs a DIR/manifest.ocdbt file; without one, only the merkle name fits. */
static int holds_ocdbt_store(const struct mtc_manifest *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const char *p = m->entries[i].path, *slash = strchr(p, '/');
		if (m->entries[i].type == MTC_ENTRY_FILE && slash && slash != p &&
		    !strcmp(slash + 1, "manifest.ocdbt"))
			return 1;
	}
	return 0;
}

/*
 * Checked with a small view of the entries (their paths and digests
 * borrowed) and the directories recomposed: m must be sorted by path
 * without repeats, and its directories must equal the recomposed ones.
 */
int mtc_peer_manifest_check(const struct mtc_manifest *m, const char *hash,
			    const struct mtc_wire_limits *lim, char *err, size_t errlen)
{
	struct mtc_wire_item *items;
	struct mtc_manifest rebuilt, dirs = { 0 };
	char digest[MTC_DIGEST_LEN], diff[512];
	size_t n = 0;
	int rc = -1;

	if (!mtc_is_dir_hash(hash)) {
		snprintf(err, errlen, "'%s' is not a directory hash", hash);
		return -1;
	}
	if ((long long)m->n > lim->max_files + 1) {
		snprintf(err, errlen, "manifest: more than %lld entries", lim->max_files);
		return -1;
	}
	items = xcalloc(m->n + 1, sizeof *items);
	for (size_t i = 0; i < m->n; i++) {
		const struct mtc_manifest_entry *e = &m->entries[i];
		if (i && strcmp(m->entries[i - 1].path, e->path) >= 0) {
			snprintf(err, errlen, "manifest is not consistent: '%s' out of order or twice",
				 e->path);
			goto out;
		}
		if (e->type == MTC_ENTRY_DIR) {
			if (dirs.n == dirs.cap)
				dirs.entries = xrealloc(dirs.entries, (dirs.cap = dirs.cap * 2 + 16) *
									      sizeof *dirs.entries);
			dirs.entries[dirs.n++] = *e;
		}
		if (!*e->path)
			continue;
		if (mtc_wire_check_path(e->path, lim->max_depth, diff, sizeof diff) < 0) {
			snprintf(err, errlen, "manifest: %s", diff);
			goto out;
		}
		items[n++] = (struct mtc_wire_item){ e->path, e->type == MTC_ENTRY_FILE ? e->digest : "",
						     e->size, e->type == MTC_ENTRY_DIR };
	}
	mtc_manifest_init(&rebuilt);
	mtc_wire_compose_dirs(items, n, &rebuilt, digest);
	if (strcmp(digest, hash) && !holds_ocdbt_store(m))
		snprintf(err, errlen, "manifest composes to %s, not to its name", digest);
	else if (mtc_manifest_compare(&rebuilt, &dirs, diff, sizeof diff))
		snprintf(err, errlen, "manifest is not consistent: %s", diff);
	else if (mtc_manifest_bytes(m) > lim->max_bytes)
		snprintf(err, errlen, "manifest: more than %lld bytes", lim->max_bytes);
	else
		rc = 0;
	mtc_manifest_free(&rebuilt);
out:
	free(items);
	free(dirs.entries);
	return rc;
}

int mtc_peer_manifest_parse(const char *text, size_t len, const char *hash,
			    const struct mtc_wire_limits *lim, struct mtc_manifest *m, char *err,
			    size_t errlen)
{
	if (mtc_manifest_parse(text, len, m, err, errlen) < 0)
		return -1;
	if (mtc_peer_manifest_check(m, hash, lim, err, errlen) < 0) {
		mtc_manifest_free(m);
		return -1;
	}
	return 0;
}

int mtc_peer_manifest_local(const char *dir, const char *hash, struct mtc_manifest *m, char **text,
			    char *err, size_t errlen)
{
	struct mtc_wire_limits lim = { .max_bytes = 1LL << 62,
				       .max_files = 1LL << 40,
				       .max_depth = 1 << 20 };
	char *path = xasprintf("%s/%s.manifest", dir, hash), *data, *buf = NULL, d[MTC_DIGEST_LEN];
	char diff[512];
	struct stat st;
	size_t len;
	int rc;

	if (text)
		*text = NULL;
	if (mtc_read_file_nofollow(path, MTC_MANIFEST_BODY_MAX, &buf, &len) == 0 &&
	    mtc_peer_manifest_parse(buf, len, hash, &lim, m, err, errlen) == 0) {
		if (text)
			*text = buf;
		else
			free(buf);
		free(path);
		return 0;
	}
	free(buf);
	mtc_manifest_init(m);
	data = xasprintf("%s/%s.data", dir, hash);
	if (lstat(data, &st) == 0 && S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "'%s' is a symlink: refused", data);
		rc = -1;
	} else if (mtc_digest_path(data, 0, d, m) < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", data, strerror(errno));
		rc = -1;
	} else if (mtc_data_name_check(data, hash, d, 0, diff, sizeof diff)) {
		snprintf(err, errlen, "'%s' does not match its name: %s", data, diff);
		rc = 1;
	} else {
		char *t = mtc_manifest_text(m);
		if (mtc_write_atomic(path, t, strlen(t)) < 0)
			errno = 0; /* keeping it is only a saving */
		if (text)
			*text = t;
		else
			free(t);
		rc = 0;
	}
	if (rc)
		mtc_manifest_free(m);
	free(data);
	free(path);
	return rc;
}

/* A part with its bytes (a whole file's part has len -1). */
struct item {
	struct mtc_wire_part p;
	long long bytes;
};

/* Largest first; equal sizes by path, then offset. */
static int by_size_then_place(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	int c = strcmp(x->p.path, y->p.path);
	return c ? c : x->p.off < y->p.off ? -1 : x->p.off > y->p.off;
}

/* One file's parts: whole up to target bytes (or with no target), else ranges of whole units. */
static size_t cut(const struct mtc_manifest_entry *e, long long target, struct item *out)
{
	long long n = target > 0 && e->size > target ? (e->size + target - 1) / target : 1;
	long long step = ((e->size + n - 1) / n + MTC_WIRE_UNIT - 1) / MTC_WIRE_UNIT * MTC_WIRE_UNIT;
	size_t k = 0;
	if (n == 1) {
		out[0] = (struct item){ { e->path, 0, -1 }, e->size };
		return 1;
	}
	for (long long off = 0; off < e->size; off += step) {
		long long len = e->size - off < step ? e->size - off : step;
		out[k++] = (struct item){ { e->path, off, len }, len };
	}
	return k;
}

int mtc_manifest_split(const struct mtc_manifest *m, int k, int ranges, struct mtc_wire_part **bins,
		       size_t *counts)
{
	struct item *items = xcalloc(m->n + (size_t)k + 1, sizeof *items);
	long long *load = xcalloc((size_t)k, sizeof *load), total = 0, target = 0;
	size_t n = 0;
	int used = 0;

	for (int i = 0; i < k; i++) {
		bins[i] = xcalloc(m->n + (size_t)k + 1, sizeof **bins);
		counts[i] = 0;
	}
	for (size_t i = 0; i < m->n; i++)
		if (m->entries[i].type == MTC_ENTRY_FILE)
			total += m->entries[i].size;
	if (ranges && k > 1) {
		target = (total + k - 1) / k;
		target = target < MTC_RANGE_MIN ? MTC_RANGE_MIN : target;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct mtc_manifest_entry *e = &m->entries[i];
		if (!*e->path)
			continue;
		if (e->type == MTC_ENTRY_DIR)
			bins[0][counts[0]++] = (struct mtc_wire_part){ e->path, 0, -1 };
		else
			n += cut(e, target, items + n);
	}
	qsort(items, n, sizeof *items, by_size_then_place);
	for (size_t i = 0; i < n; i++) {
		int best = 0;
		for (int b = 1; b < k; b++)
			if (load[b] < load[best])
				best = b;
		bins[best][counts[best]++] = items[i].p;
		load[best] += items[i].bytes + 512;
	}
	for (int i = 0; i < k; i++)
		if (counts[i])
			used = i + 1;
	free(items);
	free(load);
	return used;
}
