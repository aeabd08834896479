#include "object_fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "result.h"
#include "digest.h"
#include "fault.h"
#include "log.h"
#include "manifest_text.h"
#include "progress.h"
#include "store/store_tree.h"
#include "strset.h"
#include "xalloc.h"

/* <prefix><hash>.data, a file or a tree, into f as <hash>.data. */
static int plan_one(struct mtc_store *s, const char *prefix, const char *hash, struct mtc_fetch *f,
		    char *err, size_t errlen)
{
	char *key = xasprintf("%s%s.data", prefix, hash), *tree = xasprintf("%s/", key),
	     *rel = xasprintf("%s.data", hash);
	const struct mtc_store_object *o;
	struct mtc_store_list l;
	int rc = MTC_OK;

	if (mtc_store_list(s, key, "/", &l) < 0) {
		snprintf(err, errlen, "cannot list '%s/%s': %s", mtc_store_url(s), key,
			 mtc_store_error(s));
		rc = mtc_store_result(errno);
	} else if ((o = mtc_store_list_find(&l, key))) {
		mtc_fetch_add(f, key, rel, o->size, o->generation);
	} else if (l.n_prefixes && !strcmp(l.prefixes[0], tree)) {
		if (mtc_fetch_add_prefix(s, tree, rel, f) < 0) {
			snprintf(err, errlen, "cannot list '%s/%s': %s", mtc_store_url(s), tree,
				 mtc_store_error(s));
			rc = mtc_store_result(errno);
		}
	} else {
		snprintf(err, errlen, "no '%s/%s'", mtc_store_url(s), key);
		rc = MTC_NOTFOUND;
	}
	mtc_store_list_free(&l);
	free(key);
	free(tree);
	free(rel);
	return rc;
}

/* The backup's <hash>.manifest into m and kept (no text when there is none). */
static int get_manifest(struct mtc_store *s, const char *prefix, const char *hash,
			struct mtc_manifest *m, struct mtc_object_manifest *kept, char *err,
			size_t errlen)
{
	char *key = xasprintf("%s%s.manifest", prefix, hash), *text, why[512];
	size_t len;
	int rc = MTC_OK;

	if (mtc_store_get_buf(s, key, MTC_MANIFEST_MAX, &text, &len) < 0) {
		if (errno != ENOENT) {
			snprintf(err, errlen, "cannot read '%s/%s': %s", mtc_store_url(s), key,
				 mtc_store_error(s));
			rc = mtc_store_result(errno);
		}
	} else if (mtc_manifest_parse(text, len, m, why, sizeof why) < 0) {
		snprintf(err, errlen, "integrity failure: '%s/%s' is not a manifest: %s",
			 mtc_store_url(s), key, why);
		free(text);
		rc = MTC_INTEGRITY;
	} else {
		kept->text = text;
		kept->len = len;
	}
	free(key);
	return rc;
}

static int verify_one(struct mtc_store *s, const char *prefix, const char *hash, const char *staging,
		      int threads, struct mtc_object_manifest *kept, char *err, size_t errlen)
{
	char *path = xasprintf("%s/%s.data", staging, hash), why[512];
	struct mtc_manifest m;
	int rc, v;

	mtc_manifest_init(&m);
	rc = get_manifest(s, prefix, hash, &m, kept, err, errlen);
	if (rc != MTC_OK)
		goto out;
	mtc_info("verifying %s.data against its name and manifest", hash);
	mtc_fault_pause("fetch-verify", hash);
	v = mtc_object_verify(path, hash, kept->text ? &m : NULL, threads, why, sizeof why);
	if (v < 0) {
		snprintf(err, errlen, "cannot verify '%s': %s", path, strerror(errno));
		rc = MTC_FAILURE;
	} else if (v > 0) {
		snprintf(err, errlen, "integrity failure: '%s/%s%s.data' is not what its name says: %s",
			 mtc_store_url(s), prefix, hash, why);
		rc = MTC_INTEGRITY;
	} else if (!kept->text) {
		mtc_info("'%s/%s%s.data' has no manifest; checked the digest only", mtc_store_url(s),
			 prefix, hash);
	}
out:
	mtc_manifest_free(&m);
	free(path);
	return rc;
}

/*
 * Whether staging's filesystem has room for what f still has to bring
 * (kept: the bytes already there), each file rounded up to a block: 0 it
 * has, or cannot tell; -1 with err when it has not.
 */
static int room_for(const char *staging, const struct mtc_fetch *f, long long kept, char *err,
		    size_t errlen)
{
	struct statvfs fs;
	long long need = f->bytes - kept, room;
	const char *slash = strrchr(staging, '/');
	int len = slash && slash > staging ? (int)(slash - staging) : (int)strlen(staging);

	if (statvfs(staging, &fs) < 0)
		return 0;
	for (size_t i = 0; i < f->n; i++)
		if (!f->v[i].kept)
			need += (long long)fs.f_frsize;
	room = (long long)fs.f_bavail * (long long)fs.f_frsize;
	if (need <= room)
		return 0;
	return mtc_fail(err, errlen,
			"not enough space in '%.*s': the restore needs %lld more bytes, the "
			"filesystem has %lld free; make room there or restore elsewhere",
			len, staging, need, room);
}

enum mtc_result mtc_object_fetch(struct mtc_store *s, const char *prefix, char *const *hashes, size_t n,
				 const char *staging, int threads, int progress,
				 struct mtc_object_fetched *out, char *err, size_t errlen)
{
	struct mtc_fetch f = { 0 };
	struct mtc_strset seen = { 0 };
	struct mtc_progress *bar;
	atomic_llong hashed;
	char *first = xcalloc(n ? n : 1, 1); /* hashes[i] is not a repeat */
	int rc = MTC_OK, failed;

	*out = (struct mtc_object_fetched){ .manifests = xcalloc(n ? n : 1, sizeof *out->manifests),
					    .n = n };
	for (size_t i = 0; i < n; i++)
		first[i] = !mtc_strset_add(&seen, hashes[i]);
	for (size_t i = 0; i < n && rc == MTC_OK; i++)
		if (first[i])
			rc = plan_one(s, prefix, hashes[i], &f, err, errlen);
	if (rc != MTC_OK)
		goto out;
	out->bytes = f.bytes;
	if (mtc_fetch_prepare(s, staging, &f, &out->kept) < 0) {
		snprintf(err, errlen, "cannot resume in '%s': %s", staging, mtc_store_error(s));
		rc = MTC_FAILURE;
		goto out;
	}
	if (out->kept)
		mtc_info("'%s' holds %lld of %lld bytes already", staging, out->kept, f.bytes);
	if (room_for(staging, &f, out->kept, err, errlen) < 0) {
		rc = MTC_FAILURE;
		goto out;
	}
	mtc_info("fetching %lld bytes into '%s'", f.bytes - out->kept, staging);
	out->started = 1;
	bar = mtc_progress_new(f.bytes, out->kept, progress);
	mtc_store_set_progress(s, mtc_progress_store, bar);
	failed = mtc_fetch_run(s, staging, &f) < 0;
	mtc_store_set_progress(s, NULL, NULL);
	mtc_progress_end(bar);
	if (failed) {
		int e = errno;
		snprintf(err, errlen, "cannot download from '%s': %s", mtc_store_url(s),
			 mtc_store_error(s));
		rc = mtc_store_result(e);
		goto out;
	}
	atomic_init(&hashed, 0);
	mtc_digest_meter(&hashed);
	bar = mtc_progress_follow("verifying", f.bytes, &hashed, progress);
	for (size_t i = 0; i < n && rc == MTC_OK; i++)
		if (first[i])
			rc = verify_one(s, prefix, hashes[i], staging, threads, &out->manifests[i], err,
					errlen);
	mtc_progress_end(bar);
	mtc_digest_meter(NULL);
out:
	mtc_fetch_free(&f);
	mtc_strset_free(&seen);
	free(first);
	return rc;
}

void mtc_object_fetched_free(struct mtc_object_fetched *f)
{
	for (size_t i = 0; i < f->n; i++)
		free((char *)f->manifests[i].text);
	free(f->manifests);
	*f = (struct mtc_object_fetched){ 0 };
}
