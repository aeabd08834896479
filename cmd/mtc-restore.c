/*
 * mtc-restore: bring a checkpoint back.
 *   --from LOCATION --job JOB [--name NAME] [--rank R] --out DIR | --archive FILE|- | --verify
 *       0. the backup: --name, restore.version, or the newest valid one
 *       1. list the backup; pick rank R's .meta files (of its newest step)
 *       2. download each <hash>.data in parallel into a staging dir that a
 *          killed run left for this backup and rank, keeping what it holds
 *       3. verify it against its name and its manifest (exit 5 if not)
 *       4. make it visible: DIR/<step> by rename (--layout hash: DIR/<hash>.data,
 *          then the .meta files); or write all of it as one tar stream
 *          (libarchive, zstd optional); --verify re-hashes the whole backup
 *          streamed (lib/backup_check.h) and writes nothing
 *   --pin LOCATION --job JOB NAME  write restore.version (a valid backup only, unless --force)
 *   --unpin LOCATION --job JOB     remove restore.version
 *   --dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL | --standalone]
 *       the restore of a node at a job's start (lib/cluster_restore.h): the LKG
 *       plan from the coordinator, replicator.prerestore, fetch and verify,
 *       the restore-done barrier, local GC, and the .restore markers last
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

#include "backup_check.h"
#include "backup_location.h"
#include "backups.h"
#include "cli.h"
#include "clock.h"
#include "cluster_restore.h"
#include "config.h"
#include "coord/coord_client.h"
#include "data_name.h"
#include "digest.h"
#include "exitcode.h"
#include "fsutil.h"
#include "json_out.h"
#include "log.h"
#include "manifest_text.h"
#include "naming.h"
#include "progress.h"
#include "store/store.h"
#include "store/store_tree.h"
#include "strset.h"
#include "token_file.h"
#include "walk.h"
#include "xalloc.h"

enum mode { MODE_NONE, MODE_FROM, MODE_PIN, MODE_UNPIN, MODE_CLUSTER };

static char *from, *out_dir, *archive_path, *compress, *pin_root, *unpin_root, *token_file,
	*rank_text, *job_opt, *name_opt, *layout = "step";
static int parallel, threads, force, json_out, no_progress, verify_only;
static char *slice_threshold_text;
static long long slice_threshold;
static int slices;
static char *dir, *config_file, *backup, *coordinator_url, *address, *peer_token_file;
static int standalone;
static double timeout_s, heartbeat_s;

struct wanted {
	char meta[256];
	char hash[MTC_HASH_MAX + 1];
	int worker;
};

static struct mtc_store *open_store(const char *url)
{
	struct mtc_store_options opt = { .token_file = token_file,
					 .parallel = parallel,
					 .slice_threshold = slice_threshold,
					 .slices = slices };
	struct mtc_store *s;
	char err[512];

	if (mtc_store_open(url, &opt, &s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", url, err);
		return NULL;
	}
	return s;
}

static int has_prefix(const struct mtc_store_list *l, const char *name)
{
	for (size_t i = 0; i < l->n_prefixes; i++)
		if (!strcmp(l->prefixes[i], name))
			return 1;
	return 0;
}

/* Rank R's .meta files of the newest step it has in the backup. */
static int pick_metas(struct mtc_store *s, const struct mtc_store_list *l, int rank,
		      struct wanted **out, size_t *n, long long *step)
{
	struct mtc_ckpt_name cn;

	*step = -1;
	*n = 0;
	for (size_t i = 0; i < l->n_objects; i++)
		if (mtc_parse_ckpt_name(l->objects[i].name, &cn) == 0 && cn.ext == MTC_EXT_META &&
		    cn.rank == rank && cn.step > *step)
			*step = cn.step;
	if (*step < 0)
		return MTC_EXIT_NOTFOUND;
	*out = xcalloc(l->n_objects, sizeof **out);
	for (size_t i = 0; i < l->n_objects; i++) {
		struct wanted *w = &(*out)[*n];
		char *buf;
		size_t len;
		if (mtc_parse_ckpt_name(l->objects[i].name, &cn) < 0 || cn.ext != MTC_EXT_META ||
		    cn.rank != rank || cn.step != *step)
			continue;
		if (mtc_store_get_buf(s, l->objects[i].name, MTC_HASH_MAX + 16, &buf, &len) < 0) {
			mtc_error("cannot read '%s/%s': %s", from, l->objects[i].name,
				  mtc_store_error(s));
			return MTC_EXIT_FAILURE;
		}
		if (!mtc_is_hash(buf)) {
			mtc_error("'%s/%s' does not hold a hash", from, l->objects[i].name);
			free(buf);
			return MTC_EXIT_INTEGRITY;
		}
		snprintf(w->hash, sizeof w->hash, "%s", buf);
		snprintf(w->meta, sizeof w->meta, "%s", l->objects[i].name);
		w->worker = cn.worker;
		free(buf);
		(*n)++;
	}
	return MTC_EXIT_OK;
}

static int load_manifest(struct mtc_store *s, const char *hash, struct mtc_manifest *m,
			 int *have)
{
	char *key = xasprintf("%s.manifest", hash), *buf, err[256];
	size_t len;
	int rc = MTC_EXIT_OK;

	*have = 0;
	if (mtc_store_get_buf(s, key, 256 << 20, &buf, &len) < 0) {
		free(key);
		if (errno == ENOENT)
			return MTC_EXIT_OK;
		mtc_error("cannot read '%s/%s.manifest': %s", from, hash, mtc_store_error(s));
		return MTC_EXIT_FAILURE;
	}
	if (mtc_manifest_parse(buf, len, m, err, sizeof err) < 0) {
		mtc_error("'%s/%s' is not a manifest: %s", from, key, err);
		rc = MTC_EXIT_INTEGRITY;
	} else {
		*have = 1;
	}
	free(buf);
	free(key);
	return rc;
}

/* Names the first file (not directory) that differs: the most useful line for an operator. */
static int first_file_difference(const struct mtc_manifest *want, const struct mtc_manifest *got,
				 char *why, size_t whylen)
{
	size_t i = 0, j = 0;

	while (i < want->n || j < got->n) {
		const struct mtc_manifest_entry *a = i < want->n ? &want->entries[i] : NULL;
		const struct mtc_manifest_entry *b = j < got->n ? &got->entries[j] : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->path, b->path);
		if (c < 0 && a->type == MTC_ENTRY_FILE) {
			snprintf(why, whylen, "'%s' is missing", a->path);
			return 1;
		}
		if (c > 0 && b->type == MTC_ENTRY_FILE) {
			snprintf(why, whylen, "'%s' is not in the manifest", b->path);
			return 1;
		}
		if (c == 0 && a->type == MTC_ENTRY_FILE &&
		    (a->size != b->size || strcmp(a->digest, b->digest))) {
			snprintf(why, whylen, "'%s' has %lld bytes with digest %s, expected %lld with %s",
				 a->path, b->size, b->digest, a->size, a->digest);
			return 1;
		}
		i += c <= 0;
		j += c >= 0;
	}
	return 0;
}

/*
 * 0 when path matches its name and the manifest; 1 with the difference
 * (the manifest first, since it names the file), -1 on I/O error.
 */
static int verify(const char *path, const char *hash, const struct mtc_manifest *expected,
		  char *why, size_t whylen)
{
	struct mtc_manifest got;
	char d[MTC_DIGEST_LEN];
	int rc = 0;

	mtc_manifest_init(&got);
	if (mtc_digest_path(path, threads, d, &got) < 0) {
		int e = errno;
		mtc_manifest_free(&got);
		errno = e;
		return -1;
	}
	if (expected && (first_file_difference(expected, &got, why, whylen) ||
			 mtc_manifest_compare(expected, &got, why, whylen)))
		rc = 1;
	else
		rc = mtc_data_name_check(path, hash, d, threads, why, whylen);
	mtc_manifest_free(&got);
	return rc;
}

static int store_exit(int e)
{
	return e == EIO ? MTC_EXIT_INTEGRITY : e == ETIMEDOUT ? MTC_EXIT_TIMEOUT : MTC_EXIT_FAILURE;
}

/* Every object of each <hash>.data the .meta files name, once. */
static int plan_fetch(struct mtc_store *s, const struct mtc_store_list *l, struct wanted *w,
		      size_t n, struct mtc_fetch *f)
{
	for (size_t i = 0; i < n; i++) {
		char obj[MTC_HASH_MAX + 8], pre[MTC_HASH_MAX + 8];
		const struct mtc_store_object *o;
		int dup = 0;
		for (size_t j = 0; j < i; j++)
			dup |= !strcmp(w[j].hash, w[i].hash);
		if (dup)
			continue;
		snprintf(obj, sizeof obj, "%s.data", w[i].hash);
		snprintf(pre, sizeof pre, "%s.data/", w[i].hash);
		if ((o = mtc_store_list_find(l, obj))) {
			mtc_fetch_add(f, obj, obj, o->size, o->generation);
		} else if (has_prefix(l, pre)) {
			if (mtc_fetch_add_prefix(s, pre, obj, f) < 0) {
				mtc_error("cannot list '%s/%s': %s", from, pre, mtc_store_error(s));
				return store_exit(errno);
			}
		} else {
			mtc_error("backup '%s' is incomplete: no '%s'", from, obj);
			return MTC_EXIT_INTEGRITY;
		}
	}
	return MTC_EXIT_OK;
}

/* Checks staging/<hash>.data against its name and its manifest. */
static int verify_one(struct mtc_store *s, const char *hash, const char *staging)
{
	char *dst = xasprintf("%s/%s.data", staging, hash), why[512];
	struct mtc_manifest m;
	int rc, have_manifest, v;

	mtc_manifest_init(&m);
	rc = load_manifest(s, hash, &m, &have_manifest);
	if (rc != MTC_EXIT_OK)
		goto out;
	v = verify(dst, hash, have_manifest ? &m : NULL, why, sizeof why);
	if (v < 0) {
		mtc_error("cannot verify '%s':", dst);
		rc = MTC_EXIT_FAILURE;
	} else if (v > 0) {
		mtc_error("integrity failure in '%s/%s.data': %s", from, hash, why);
		rc = MTC_EXIT_INTEGRITY;
	} else if (!have_manifest) {
		mtc_info("'%s/%s.data' has no manifest; checked the digest only", from, hash);
	}
out:
	mtc_manifest_free(&m);
	free(dst);
	return rc;
}

/* Downloads what staging lacks (continuing what an interrupted run left), then verifies it all. */
static int fetch_all(struct mtc_store *s, const struct mtc_store_list *l, struct wanted *w,
		     size_t n, const char *staging, long long *bytes, long long *kept)
{
	struct mtc_fetch f = { 0 };
	struct mtc_progress *bar;
	int rc = plan_fetch(s, l, w, n, &f), failed;

	if (rc != MTC_EXIT_OK)
		goto out;
	*bytes = f.bytes;
	if (mtc_fetch_prepare(s, staging, &f, kept) < 0) {
		mtc_error("cannot resume in '%s': %s", staging, mtc_store_error(s));
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	if (*kept)
		mtc_info("'%s' holds %lld of %lld bytes already", staging, *kept, f.bytes);
	mtc_info("fetching %lld bytes into '%s'", f.bytes - *kept, staging);
	bar = mtc_progress_new(f.bytes, *kept, !no_progress && mtc_log_level() >= MTC_LOG_WARN);
	mtc_store_set_progress(s, mtc_progress_store, bar);
	failed = mtc_fetch_run(s, staging, &f) < 0;
	mtc_store_set_progress(s, NULL, NULL);
	mtc_progress_end(bar);
	if (failed) {
		int e = errno;
		mtc_error("cannot download from '%s': %s", from, mtc_store_error(s));
		rc = store_exit(e);
		goto out;
	}
	for (size_t i = 0; i < n && rc == MTC_EXIT_OK; i++) {
		int dup = 0;
		for (size_t j = 0; j < i; j++)
			dup |= !strcmp(w[j].hash, w[i].hash);
		if (!dup) {
			mtc_info("verifying %.12s….data against its name and manifest", w[i].hash);
			rc = verify_one(s, w[i].hash, staging);
		}
	}
out:
	mtc_fetch_free(&f);
	return rc;
}

/* --layout hash: DIR/<hash>.data by rename, then the .meta files, as on a local dir. */
static int publish_hashes(const char *staging, struct wanted *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *src = xasprintf("%s/%s.data", staging, w[i].hash);
		char *dst = xasprintf("%s/%s.data", out_dir, w[i].hash);
		struct stat st;
		int rc = 0;
		if (lstat(src, &st) == 0 &&
		    renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) < 0) {
			if (errno == EEXIST)
				mtc_info("'%s' is already there", dst); /* same name, same content */
			else
				rc = -1;
		}
		if (rc < 0) {
			mtc_error("cannot rename '%s' to '%s':", src, dst);
			free(src);
			free(dst);
			return -1;
		}
		free(src);
		free(dst);
	}
	if (mtc_fsync_dir(out_dir) < 0) {
		mtc_error("cannot sync '%s':", out_dir);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char *path = xasprintf("%s/%s", out_dir, w[i].meta);
		if (mtc_write_atomic(path, w[i].hash, strlen(w[i].hash)) < 0) {
			mtc_error("cannot write '%s':", path);
			free(path);
			return -1;
		}
		free(path);
	}
	return 0;
}

/*
 * --layout step: the step as its framework saved it, DIR/<step> (with
 * several workers DIR/w<worker>/<step>), never over something already there.
 */
static int publish_step(const char *staging, struct wanted *w, size_t n, long long step)
{
	for (size_t i = 0; i < n; i++) {
		char *src = xasprintf("%s/%s.data", staging, w[i].hash);
		char *parent = n == 1 ? xstrdup(out_dir) : xasprintf("%s/w%d", out_dir, w[i].worker);
		char *dst = xasprintf("%s/%lld", parent, step);
		struct stat st;
		int rc = 0;
		if (lstat(src, &st) < 0) /* the same data as an earlier worker's: it moved there */
			mtc_warn("worker %d holds the same data as an earlier worker: not written "
				 "twice", w[i].worker);
		else if (mtc_mkdir_p(parent, 0755) < 0 ||
			 renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) < 0)
			rc = -1;
		if (rc < 0)
			mtc_error(errno == EEXIST ? "'%s' is already there: restore into another --out, "
						    "or remove it first"
						  : "cannot create '%s':",
				  dst);
		else if (mtc_fsync_dir(parent) < 0)
			mtc_error("cannot sync '%s':", parent), rc = -1;
		free(src);
		free(dst);
		free(parent);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* mtc_walk's argument while a tree goes into the archive under name. */
struct archiving {
	struct archive *a;
	const char *name;
};

static int archive_file(struct archive *a, const char *path, const char *name, struct stat *st)
{
	struct archive_entry *e = archive_entry_new();
	int rc = 0;

	archive_entry_set_pathname(e, name);
	archive_entry_set_mtime(e, st->st_mtime, 0);
	if (S_ISDIR(st->st_mode)) {
		archive_entry_set_filetype(e, AE_IFDIR);
		archive_entry_set_perm(e, 0755);
		rc = archive_write_header(a, e) == ARCHIVE_OK ? 0 : -1;
	} else {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		char *buf = xmalloc(1 << 20);
		ssize_t got;
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, st->st_size);
		if (fd < 0 || archive_write_header(a, e) != ARCHIVE_OK)
			rc = -1;
		while (rc == 0 && (got = read(fd, buf, 1 << 20)) > 0)
			if (archive_write_data(a, buf, (size_t)got) != got)
				rc = -1;
		if (fd >= 0)
			close(fd);
		free(buf);
	}
	archive_entry_free(e);
	return rc;
}

/* A walk's visit (walk.h): each entry below the tree, named below its name. */
static int archive_entry_of(const struct mtc_walk_entry *e, void *arg)
{
	struct archiving *g = arg;
	struct stat st = e->st;
	char *name;
	int rc;

	if (e->error) {
		errno = e->error;
		return -1;
	}
	name = xasprintf("%s/%s", g->name, e->rel);
	rc = archive_file(g->a, e->path, name, &st);
	free(name);
	return rc;
}

static int archive_tree(struct archive *a, const char *path, const char *name)
{
	struct stat st;
	struct archiving g = { a, name };
	struct mtc_walk w = { .root = path,
			      .flags = MTC_WALK_SORTED | MTC_WALK_PHYS,
			      .max_depth = INT_MAX,
			      .visit = archive_entry_of,
			      .arg = &g };

	if (lstat(path, &st) < 0)
		return -1;
	if (archive_file(a, path, name, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return 0;
	return mtc_walk(&w);
}

static int write_archive(const char *staging, struct wanted *w, size_t n)
{
	struct archive *a = archive_write_new();
	struct mtc_strset seen = { 0 };
	int rc = -1;

	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (compress && archive_write_add_filter_zstd(a) != ARCHIVE_OK)
		goto out;
	if ((strcmp(archive_path, "-") ? archive_write_open_filename(a, archive_path)
				       : archive_write_open_fd(a, 1)) != ARCHIVE_OK)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char *src = xasprintf("%s/%s.data", staging, w[i].hash);
		char *name = xasprintf("%s.data", w[i].hash);
		int r = mtc_strset_add(&seen, w[i].hash) ? 0 : archive_tree(a, src, name);
		free(src);
		free(name);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, w[i].meta);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, (la_int64_t)strlen(w[i].hash));
		int bad = archive_write_header(a, e) != ARCHIVE_OK ||
			  archive_write_data(a, w[i].hash, strlen(w[i].hash)) < 0;
		archive_entry_free(e);
		if (bad)
			goto out;
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		mtc_error("cannot write archive '%s': %s", archive_path,
			  archive_error_string(a) ? archive_error_string(a) : strerror(errno));
	archive_write_free(a);
	mtc_strset_free(&seen);
	return rc;
}

/* The backup's name: the last component of --from. */
static int backup_name_of(const char *url, char *name, size_t len)
{
	size_t n = strlen(url);
	const char *last;

	while (n > 1 && url[n - 1] == '/')
		n--;
	last = memrchr(url, '/', n);
	last = last ? last + 1 : url;
	if ((size_t)(url + n - last) >= len)
		return -1;
	snprintf(name, len, "%.*s", (int)(url + n - last), last);
	return mtc_parse_backup_name(name, NULL);
}

/*
 * DIR/.mtc-restore-<name>-n<rank>: the same for every run of this restore, so
 * a run continues what a killed one fetched; locked against a second run.
 */
static char *open_staging(int rank, int *lock_fd)
{
	char name[64], *staging;

	*lock_fd = -1;
	if (!out_dir) {
		const char *tmp = getenv("TMPDIR");
		staging = xasprintf("%s/mtc-restore-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (mkdtemp(staging))
			return staging;
		mtc_error("cannot create '%s':", staging);
		free(staging);
		return NULL;
	}
	backup_name_of(from, name, sizeof name);
	staging = xasprintf("%s/.mtc-restore-%s-n%d", out_dir, name, rank);
	if (mtc_mkdir_p(staging, 0700) < 0 ||
	    (*lock_fd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		mtc_error("cannot create '%s':", staging);
		free(staging);
		return NULL;
	}
	if (flock(*lock_fd, LOCK_EX | LOCK_NB) < 0) {
		mtc_error("cannot use '%s': %s", staging,
			  errno == EWOULDBLOCK ? "another mtc-restore is using it" : strerror(errno));
		close(*lock_fd);
		*lock_fd = -1;
		free(staging);
		return NULL;
	}
	return staging;
}

static int restore_from(int rank)
{
	struct mtc_store *s = open_store(from);
	struct mtc_store_list l = { 0 };
	struct wanted *w = NULL;
	size_t n = 0;
	long long step, bytes = 0, kept = 0;
	char *staging = NULL;
	double start = mtc_now();
	int rc, lock_fd = -1;

	if (!s)
		return MTC_EXIT_USAGE;
	if (mtc_store_list(s, "", "/", &l) < 0) {
		mtc_error("cannot list '%s': %s", from, mtc_store_error(s));
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	if (!l.n_objects && !l.n_prefixes) {
		mtc_error("no backup at '%s'", from);
		rc = MTC_EXIT_NOTFOUND;
		goto out;
	}
	rc = pick_metas(s, &l, rank, &w, &n, &step);
	if (rc == MTC_EXIT_NOTFOUND)
		mtc_error("backup '%s' has no .meta of rank %d", from, rank);
	if (rc != MTC_EXIT_OK)
		goto out;
	mtc_info("backup %s: rank %d, step %lld, %zu worker%s", from, rank, step, n,
		 n == 1 ? "" : "s");
	if (out_dir && mtc_mkdir_p(out_dir, 0755) < 0) {
		mtc_error("cannot create '%s':", out_dir);
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	if (!(staging = open_staging(rank, &lock_fd))) {
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	rc = fetch_all(s, &l, w, n, staging, &bytes, &kept);
	if (rc != MTC_EXIT_OK)
		goto out;
	mtc_info("writing %s", archive_path ? archive_path : out_dir);
	if (archive_path	       ? write_archive(staging, w, n) < 0
	    : !strcmp(layout, "hash") ? publish_hashes(staging, w, n) < 0
				       : publish_step(staging, w, n, step) < 0) {
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	if (!archive_path || strcmp(archive_path, "-")) {
		double secs = mtc_now() - start;
		json_t *j = json_pack("{s:s, s:i, s:I, s:i, s:I, s:I, s:o, s:f}", "backup", from,
				      "rank", rank, "step", (json_int_t)step, "metas", (int)n, "bytes",
				      (json_int_t)bytes, "kept", (json_int_t)kept, "seconds",
				      mtc_json_seconds(secs), "mb-per-s",
				      round((bytes - kept) / 1e6 / (secs > 1e-6 ? secs : 1e-6) * 10) / 10);
		if (!strcmp(layout, "step") && out_dir)
			json_object_set_new(j, "path", n == 1 ? json_sprintf("%s/%lld", out_dir, step)
							      : json_string(out_dir));
		mtc_json_print(j);
	}
out:
	if (staging && out_dir && rc != MTC_EXIT_OK && rc != MTC_EXIT_INTEGRITY) {
		mtc_warn("'%s' keeps what was fetched; the same command continues from there",
			 staging);
	} else if (staging) {
		mtc_remove_tree(staging);
	}
	free(staging);
	if (lock_fd >= 0)
		close(lock_fd);
	free(w);
	mtc_store_list_free(&l);
	mtc_store_close(s);
	return rc;
}

/* The job's backup root (lib/backup_location.h); NULL with *rc set after an error. */
static struct mtc_store *open_job(const char *location, const char *job, int *rc)
{
	struct mtc_store_options opt = { .token_file = token_file,
					 .parallel = parallel,
					 .slice_threshold = slice_threshold,
					 .slices = slices };
	struct mtc_store *s;
	char err[768];

	*rc = mtc_job_store_open(location, job, 0, &opt, &s, err, sizeof err);
	if (*rc)
		mtc_error("%s", err);
	return s;
}

/* Judges a backup by its metas and the sizes of its data; -1 (info freed) when storage fails. */
static int judge(struct mtc_store *s, const char *name, struct mtc_backup_info *info)
{
	if (mtc_backup_judge(s, name, 0, 0, info, NULL) == 0)
		return 0;
	mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(s), name, mtc_store_error(s));
	mtc_backup_info_free(info);
	return -1;
}

/* --name, else restore.version, else the newest valid backup: into name. */
static int choose_backup(struct mtc_store *s, char *name, size_t len)
{
	struct mtc_backup_entry *list = NULL;
	size_t n = 0;
	int rc = MTC_EXIT_NOTFOUND, pin;

	if (name_opt) {
		snprintf(name, len, "%s", name_opt);
		return MTC_EXIT_OK;
	}
	if ((pin = mtc_backups_restore_version(s, name, len)) == 1) {
		mtc_info("restore.version names backup %s", name);
		return MTC_EXIT_OK;
	}
	if (pin < 0 || mtc_backups_list(s, &list, &n) < 0) {
		mtc_error("cannot list '%s': %s", mtc_store_url(s), mtc_store_error(s));
		return MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; i < n && rc == MTC_EXIT_NOTFOUND; i++) {
		struct mtc_backup_info info;
		if (judge(s, list[i].name, &info) < 0) {
			rc = MTC_EXIT_FAILURE;
			break;
		}
		if (info.state == MTC_BACKUP_VALID) {
			snprintf(name, len, "%s", list[i].name);
			mtc_info("the newest valid backup is %s", name);
			rc = MTC_EXIT_OK;
		} else {
			mtc_info("backup %s is %s: %s", list[i].name,
				 mtc_backup_state_name(info.state), info.reason);
		}
		mtc_backup_info_free(&info);
	}
	if (rc == MTC_EXIT_NOTFOUND)
		mtc_error("no valid backup among %zu at '%s'", n, mtc_store_url(s));
	mtc_backups_free_list(list, n);
	return rc;
}

static int state_exit(enum mtc_backup_state st)
{
	return st == MTC_BACKUP_EMPTY ? MTC_EXIT_NOTFOUND : MTC_EXIT_INTEGRITY;
}

/* --verify: every byte of the backup against its manifests and names; nothing is written. */
static int verify_backup(struct mtc_store *s, const char *name)
{
	struct mtc_store_options opt = { .token_file = token_file,
					 .parallel = parallel,
					 .slice_threshold = slice_threshold,
					 .slices = slices };
	struct mtc_backup_info info;
	struct mtc_verify_stats st = { 0 };
	struct mtc_progress *bar;
	double start = mtc_now();
	char why[512] = "";
	int v, rc;

	if (judge(s, name, &info) < 0)
		return MTC_EXIT_FAILURE;
	if (info.state != MTC_BACKUP_VALID) {
		snprintf(why, sizeof why, "%s", info.state == MTC_BACKUP_EMPTY ? "no such backup" : info.reason);
		v = 1;
	} else {
		bar = mtc_progress_new(0, 0, !no_progress && mtc_log_level() >= MTC_LOG_WARN);
		v = mtc_backup_verify(s, &opt, &info, threads, mtc_progress_store, bar, &st, why,
				      sizeof why);
		mtc_progress_end(bar);
	}
	rc = v < 0 ? MTC_EXIT_FAILURE : v ? state_exit(info.state) : MTC_EXIT_OK;
	if (v < 0)
		mtc_error("cannot verify backup '%s/%s': %s", mtc_store_url(s), name, why);
	else if (v)
		mtc_error("backup '%s/%s' is not intact: %s", mtc_store_url(s), name, why);
	if (v >= 0)
		mtc_json_print(json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:o}", "location",
					 mtc_store_url(s), "name", name, "step",
					 (json_int_t)info.step, "state", v ? "damaged" : "intact",
					 "reason", why, "objects", (json_int_t)st.objects, "files",
					 (json_int_t)st.files, "bytes", (json_int_t)st.bytes,
					 "seconds", mtc_json_seconds(mtc_now() - start)));
	mtc_backup_info_free(&info);
	return rc;
}

/* --rank, or 0 when the backup holds one node. */
static int pick_rank(struct mtc_store *s, const char *name, long long *rank)
{
	struct mtc_backup_info info;
	int rc = MTC_EXIT_OK;

	if (rank_text) {
		if (mtc_parse_uint(rank_text, rank) == 0 && *rank <= 1 << 30)
			return MTC_EXIT_OK;
		return mtc_usage_error("--rank takes a node rank, not '%s'", rank_text);
	}
	if (mtc_backup_inspect(s, name, 0, 0, &info) < 0) { /* the metas say how many nodes */
		mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(s), name,
			  mtc_store_error(s));
		mtc_backup_info_free(&info);
		return MTC_EXIT_FAILURE;
	}
	if (info.nodes > 1)
		rc = mtc_usage_error("backup %s holds %d nodes: say which with --rank R", name,
				     info.nodes);
	*rank = 0;
	mtc_backup_info_free(&info);
	return rc;
}

/* --from LOCATION --job JOB [--name NAME]: a backup's data onto a workstation, or --verify it. */
static int from_backup(const char *job)
{
	char name[64];
	long long rank = 0;
	int rc;
	struct mtc_store *js = open_job(from, job, &rc);

	if (!js)
		return rc;
	rc = choose_backup(js, name, sizeof name);
	if (rc == MTC_EXIT_OK && verify_only)
		rc = verify_backup(js, name);
	else if (rc == MTC_EXIT_OK && (rc = pick_rank(js, name, &rank)) == MTC_EXIT_OK) {
		char *location = from; /* restore_from reads the backup at from */
		from = xasprintf("%s/%s", mtc_store_url(js), name);
		rc = restore_from((int)rank);
		free(from);
		from = location;
	}
	mtc_store_close(js);
	return rc;
}

static int pin(const char *job, const char *name)
{
	struct mtc_backup_info info;
	int rc;
	struct mtc_store *s = open_job(pin_root, job, &rc);

	if (!s)
		return rc;
	if (judge(s, name, &info) < 0) {
		mtc_store_close(s);
		return MTC_EXIT_FAILURE;
	}
	if (info.state != MTC_BACKUP_VALID && !force) {
		mtc_error("refusing to pin '%s/%s': %s%s (--force pins it anyway)", mtc_store_url(s),
			  name, info.state == MTC_BACKUP_EMPTY ? "no such backup" : "not valid: ",
			  info.state == MTC_BACKUP_EMPTY ? "" : info.reason);
		rc = state_exit(info.state);
	} else if (mtc_store_put_buf(s, "restore.version", name, strlen(name), MTC_STORE_REPLACE) <
		   0) {
		mtc_error("cannot write '%s/restore.version': %s", mtc_store_url(s),
			  mtc_store_error(s));
		rc = MTC_EXIT_FAILURE;
	} else {
		mtc_info("pinned '%s/%s'", mtc_store_url(s), name);
	}
	mtc_backup_info_free(&info);
	mtc_store_close(s);
	return rc;
}

static int unpin(const char *job)
{
	int rc;
	struct mtc_store *s = open_job(unpin_root, job, &rc);

	if (!s)
		return rc;
	if (mtc_store_delete(s, "restore.version") < 0) {
		if (errno == ENOENT) {
			mtc_info("'%s' has no restore.version", mtc_store_url(s));
		} else {
			mtc_error("cannot delete '%s/restore.version': %s", mtc_store_url(s),
				  mtc_store_error(s));
			rc = MTC_EXIT_FAILURE;
		}
	}
	mtc_store_close(s);
	return rc;
}

static int restore_cluster(void)
{
	struct mtc_config cfg;
	struct mtc_cluster_restore_opts o = { 0 };
	char err[512], *token = NULL, *context;
	json_t *summary = NULL;
	int rc;

	if (mtc_config_load(config_file, &cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", config_file, err);
		return MTC_EXIT_FAILURE;
	}
	context = xasprintf("job=%s node=%d/%d", cfg.job_name, cfg.node_rank, cfg.nodes);
	mtc_log_status_dir(dir, context);
	free(context);
	const char *ptf = mtc_peer_token_path(peer_token_file);
	if (ptf && !(token = mtc_read_token_file(ptf, err, sizeof err))) {
		mtc_critical("%s", err);
		mtc_config_free(&cfg);
		return MTC_EXIT_FAILURE;
	}
	o.dir = dir;
	o.cfg = &cfg;
	o.backup = backup;
	o.coordinator = standalone ? NULL : mtc_coord_url(coordinator_url);
	o.address = address;
	o.token = token;
	o.store_token_file = token_file;
	o.slice_threshold = slice_threshold;
	o.slices = slices;
	o.timeout_s = timeout_s;
	o.heartbeat_s = heartbeat_s;
	o.threads = threads;
	if (!o.coordinator && cfg.nodes > 1 && !standalone) {
		mtc_critical("%d nodes need a coordinator: give --coordinator-url or MTC_COORDINATOR "
			     "(or --standalone to decide alone)",
			     cfg.nodes);
		rc = MTC_EXIT_USAGE;
	} else {
		rc = mtc_cluster_restore(&o, &summary);
	}
	if (summary)
		mtc_json_print(summary);
	free(token);
	mtc_config_free(&cfg);
	return rc;
}

/* The job-name of --config, for --from, --pin and --unpin without --job. */
static int load_job(char **job)
{
	struct mtc_config cfg;
	char err[512];

	if (mtc_config_load(config_file, &cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", config_file, err);
		return -1;
	}
	*job = xstrdup(cfg.job_name);
	mtc_config_free(&cfg);
	return 0;
}

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		{ "from", 'f', POPT_ARG_STRING, &from, 0, "restore from a backup of the job at this bucket root", "LOCATION" },
		{ "job", '\0', POPT_ARG_STRING, &job_opt, 0, "the job whose backups --from, --pin and --unpin mean (default: the config's)", "NAME" },
		{ "name", 'n', POPT_ARG_STRING, &name_opt, 0, "the backup (default: restore.version, else the newest valid)", "YYYY-MM-DD_HH-MM" },
		{ "rank", 'r', POPT_ARG_STRING, &rank_text, 0, "the node whose data to restore (default 0 for one node)", "R" },
		{ "out", 'o', POPT_ARG_STRING, &out_dir, 0, "write the step into DIR (see --layout)", "DIR" },
		{ "layout", '\0', POPT_ARG_STRING, &layout, 0, "step: DIR/<step> as the framework saved it; hash: <hash>.data and the .meta files (default step)", "step|hash" },
		{ "verify", '\0', POPT_ARG_NONE, &verify_only, 0, "with --from: re-hash the whole backup against its manifests and names, writing nothing", NULL },
		{ "archive", 'a', POPT_ARG_STRING, &archive_path, 0, "write a tar stream instead (- for stdout)", "FILE|-" },
		{ "compress", '\0', POPT_ARG_STRING, &compress, 0, "compress the archive", "zstd" },
		{ "pin", '\0', POPT_ARG_STRING, &pin_root, 0, "write restore.version naming NAME", "LOCATION" },
		{ "unpin", '\0', POPT_ARG_STRING, &unpin_root, 0, "remove restore.version", "LOCATION" },
		{ "force", '\0', POPT_ARG_NONE, &force, 0, "pin a backup that is not valid", NULL },
		{ "gcs-token-file", '\0', POPT_ARG_STRING, &token_file, 0, "gs:// bearer token file (else $MTC_GCS_TOKEN, credentials, metadata server)", "FILE" },
		{ "parallel", 'j', POPT_ARG_INT, &parallel, 0, "transfers in flight (default 32)", "N" },
		{ "threads", '\0', POPT_ARG_INT, &threads, 0, "hashing threads (default: one per CPU)", "N" },
		{ "slice-threshold", '\0', POPT_ARG_STRING, &slice_threshold_text, 0, "gs://: fetch a file at least this big as parallel ranged GETs (default 64M)", "SIZE" },
		{ "slices", '\0', POPT_ARG_INT, &slices, 0, "ranged GETs of one such file (default 16, at most 32; 1: one stream)", "N" },
		{ "no-progress", '\0', POPT_ARG_NONE, &no_progress, 0, "no progress line on a terminal", NULL },
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "restore this node's local dir (cluster mode)", "DIR" },
		{ "config", 'c', POPT_ARG_STRING, &config_file, 0, "the accepted config (JSON, - for stdin)", "CFG" },
		{ "backup", 'b', POPT_ARG_STRING, &backup, 0, "the backup location (the job name is added)", "LOCATION" },
		{ "coordinator-url", '\0', POPT_ARG_STRING, &coordinator_url, 0, "the coordinator (default $MTC_COORDINATOR)", "URL" },
		{ "standalone", '\0', POPT_ARG_NONE, &standalone, 0, "decide alone, without a coordinator", NULL },
		{ "address", '\0', POPT_ARG_STRING, &address, 0, "this node's peer URL as the others reach it", "URL" },
		{ "peer-token-file", '\0', POPT_ARG_STRING, &peer_token_file, 0, "bearer token for the peers and the coordinator", "FILE" },
		{ "timeout", '\0', POPT_ARG_DOUBLE, &timeout_s, 0, "seconds for the whole restore (default 600)", "SEC" },
		{ "heartbeat", '\0', POPT_ARG_DOUBLE, &heartbeat_s, 0, "seconds between heartbeats (default 5)", "SEC" },
		{ "json", '\0', POPT_ARG_NONE, &json_out, 0, "accepted: the summary line is always JSON", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum mode mode = MODE_NONE;
	poptContext ctx;
	const char *name = NULL;
	char *job = NULL;
	int rc;

	mtc_log_init(argv[0]);
	ctx = mtc_cli_context("mtc-restore", argc, argv, opts,
			      "--dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL | --standalone]\n"
			      "  or: mtc-restore --from LOCATION --job JOB [--name NAME] [--rank R] (--out DIR | --archive FILE|- | --verify)\n"
			      "  or: mtc-restore --pin LOCATION --job JOB NAME [--force]\n"
			      "  or: mtc-restore --unpin LOCATION --job JOB");
	if (mtc_cli_parse(ctx, &rc) < 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (!!from + !!pin_root + !!unpin_root + !!dir > 1) {
		mtc_usage_error("--dir, --from, --pin and --unpin exclude each other");
		goto out;
	}
	mode = from ? MODE_FROM : pin_root ? MODE_PIN : unpin_root ? MODE_UNPIN : dir ? MODE_CLUSTER : MODE_NONE;
	if (mode != MODE_CLUSTER && (backup || coordinator_url || standalone || address || peer_token_file)) {
		mtc_usage_error("--backup, --coordinator-url, --standalone, --address and --peer-token-file go with --dir");
		goto out;
	}
	if (mode == MODE_CLUSTER && job_opt) {
		mtc_usage_error("--job goes with --from, --pin and --unpin (with --dir the config names the job)");
		goto out;
	}
	if (config_file && !job_opt && mode != MODE_CLUSTER && load_job(&job) < 0)
		goto out;
	if (standalone && coordinator_url) {
		mtc_usage_error("--standalone and --coordinator-url exclude each other");
		goto out;
	}
	if (mode == MODE_PIN) {
		name = poptGetArg(ctx);
		if (!name || mtc_parse_backup_name(name, NULL) < 0) {
			mtc_usage_error("--pin needs a backup NAME (YYYY-MM-DD_HH-MM)%s%s%s",
					name ? ", not '" : "", name ? name : "", name ? "'" : "");
			goto out;
		}
	}
	if (poptPeekArg(ctx)) {
		mtc_usage_error("unexpected argument '%s'", poptPeekArg(ctx));
		goto out;
	}
	if (mode != MODE_FROM && (out_dir || archive_path || compress || rank_text || no_progress || name_opt || verify_only)) {
		mtc_usage_error("--out, --archive, --compress, --rank, --name, --verify and --no-progress go with --from");
		goto out;
	}
	if (mode != MODE_PIN && force) {
		mtc_usage_error("--force goes with --pin");
		goto out;
	}
	if (parallel < 0 || threads < 0) {
		mtc_usage_error("--parallel and --threads take a positive number");
		goto out;
	}
	if (mode != MODE_FROM && mode != MODE_CLUSTER && (slice_threshold_text || slices)) {
		mtc_usage_error("--slice-threshold and --slices go with --from or --dir");
		goto out;
	}
	if (mtc_cli_slices(slice_threshold_text, slices, &slice_threshold))
		goto out;
	switch (mode) {
	case MODE_FROM:
		if (!out_dir + !archive_path + !verify_only != 2) {
			mtc_usage_error("--from needs one of --out DIR, --archive FILE|- and --verify");
			break;
		}
		if (compress && (!archive_path || strcmp(compress, "zstd"))) {
			mtc_usage_error("--compress takes 'zstd', with --archive");
			break;
		}
		if (strcmp(layout, "step") && strcmp(layout, "hash")) {
			mtc_usage_error("--layout takes 'step' or 'hash', not '%s'", layout);
			break;
		}
		if (name_opt && mtc_parse_backup_name(name_opt, NULL) < 0) {
			mtc_usage_error("--name takes a backup name (YYYY-MM-DD_HH-MM), not '%s'", name_opt);
			break;
		}
		if (archive_path && !strcmp(archive_path, "-") && isatty(STDOUT_FILENO)) {
			mtc_usage_error("--archive - would write a tar stream to a terminal: redirect it or pipe it into tar");
			break;
		}
		rc = from_backup(job_opt ? job_opt : job);
		break;
	case MODE_PIN:
		rc = pin(job_opt ? job_opt : job, name);
		break;
	case MODE_UNPIN:
		rc = unpin(job_opt ? job_opt : job);
		break;
	case MODE_CLUSTER:
		if (!config_file) {
			mtc_usage_error("--dir needs --config CFG");
			break;
		}
		rc = restore_cluster();
		break;
	case MODE_NONE:
		mtc_usage_error("say what to do: --dir, --from, --pin or --unpin");
		break;
	}
out:
	poptFreeContext(ctx);
	free(job);
	return rc;
}
