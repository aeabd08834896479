#include "restore.h"
#include "walk.h"

struct mtc_store_options store_options(void)
{
	return (struct mtc_store_options){ .token_file = token_file,
					   .s3_endpoint = s3_endpoint,
					   .parallel = parallel,
					   .slice_threshold = slice_threshold,
					   .slices = slices };
}

/* Rank R's parts of the backup's step (mtc_backup_inspect's metas, sorted by worker). */
static int node_parts(const struct mtc_backup_info *info, int rank, struct mtc_step_part **out,
		      size_t *n)
{
	*out = xcalloc(info->n_metas ? info->n_metas : 1, sizeof **out);
	*n = 0;
	for (size_t i = 0; i < info->n_metas; i++) {
		const struct mtc_backup_meta *m = &info->metas[i];
		if (m->rank != rank)
			continue;
		if (!*m->hash) {
			mtc_error("backup '%s': the .meta of rank %d worker %d does not hold a hash",
				  info->name, rank, m->worker);
			return MTC_EXIT_INTEGRITY;
		}
		(*out)[(*n)++] = (struct mtc_step_part){ .meta = mtc_ckpt_name(info->job, m->step, rank,
									       m->worker, MTC_EXT_META),
							 .hash = m->hash,
							 .worker = m->worker };
	}
	return *n ? MTC_EXIT_OK : MTC_EXIT_NOTFOUND;
}

static void parts_free(struct mtc_step_part *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++)
		free(p[i].meta);
	free(p);
}

/*
 * Every <hash>.data the .meta files name whose part is not in place already
 * (slot[i] >= 0: got's manifests[slot[i]]) into staging, continuing what a
 * killed run left, verified.
 */
static int fetch_all(const char *url, const struct mtc_step_part *w, size_t n, const int *slot,
		     const char *staging, struct mtc_object_fetched *got, char *why, size_t whylen)
{
	struct mtc_store_options opt = store_options();
	char **hashes = xcalloc(n ? n : 1, sizeof *hashes), err[1024];
	struct mtc_store *s;
	size_t m = 0;
	int rc;

	/* opened at the backup itself: what a killed run left is keyed by the names in it */
	if (mtc_store_open(url, &opt, &s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", url, err);
		free(hashes);
		return MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; i < n; i++)
		if (slot[i] >= 0)
			hashes[m++] = (char *)w[i].hash;
	rc = mtc_object_fetch(s, "", hashes, m, staging, threads,
			      !no_progress && mtc_log_level() >= MTC_LOG_WARN, got, err, sizeof err);
	if (rc == MTC_EXIT_NOTFOUND || rc == MTC_EXIT_INTEGRITY) {
		snprintf(why, whylen, "%s", err); /* the caller names the backup to use instead */
		rc = MTC_EXIT_INTEGRITY;
	} else if (rc != MTC_EXIT_OK) {
		mtc_error("%s", err);
	}
	free(hashes);
	mtc_store_close(s);
	return rc;
}

/* Where --layout step puts part i: DIR/<step>, or DIR/w<worker>/<step> with several. */
static char *step_path(const struct mtc_step_part *w, size_t n, size_t i, long long step)
{
	return n == 1 ? xasprintf("%s/%lld", out_dir, step)
		      : xasprintf("%s/w%d/%lld", out_dir, w[i].worker, step);
}

/* --layout hash: DIR/<hash>.data with its manifest, then the .meta files, as on a local dir. */
static int publish_hashes(const char *staging, const struct mtc_step_part *w, size_t n, const int *slot,
			  const struct mtc_object_fetched *got)
{
	for (size_t i = 0; i < n; i++) {
		char *src;
		struct stat st;
		int rc;
		if (slot[i] < 0) /* in place already */
			continue;
		src = xasprintf("%s/%s.data", staging, w[i].hash);
		rc = lstat(src, &st) < 0 /* the same data as an earlier worker's */
			     ? 1
			     : mtc_object_publish(src, out_dir, w[i].hash, &got->manifests[slot[i]]);
		if (rc < 0)
			mtc_error("cannot publish '%s' in '%s':", src, out_dir);
		else if (rc > 0)
			mtc_info("'%s/%s.data' is already there", out_dir, w[i].hash);
		free(src);
		if (rc < 0)
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
static int publish_step(const char *staging, const struct mtc_step_part *w, size_t n, const int *slot,
			long long step)
{
	for (size_t i = 0; i < n; i++) {
		if (slot[i] < 0) /* in place already */
			continue;
		char *src = xasprintf("%s/%s.data", staging, w[i].hash);
		char *parent = n == 1 ? xstrdup(out_dir) : xasprintf("%s/w%d", out_dir, w[i].worker);
		char *dst = step_path(w, n, i, step);
		struct stat st;
		int rc = 0;
		if (lstat(src, &st) < 0) /* the same data as an earlier worker's: it moved there */
			mtc_warn("worker %d holds the same data as an earlier worker: not written "
				 "twice",
				 w[i].worker);
		else if (mtc_mkdir_p(parent, 0755) < 0 || (rc = mtc_publish(src, dst)) < 0)
			mtc_error("cannot create '%s':", dst), rc = -1;
		else if (rc > 0)
			mtc_error("'%s' is already there: restore into another --out, or remove it "
				  "first",
				  dst),
				rc = -1;
		free(src);
		free(dst);
		free(parent);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/*
 * path, already there, against hash: 0 it holds that data (said in one
 * line); else the exit code, with the error said.
 */
static int check_present(const char *path, const char *hash, const char *what)
{
	char why[512];
	int v = mtc_object_verify(path, hash, NULL, threads, why, sizeof why);

	if (v < 0) {
		mtc_error("cannot verify '%s':", path);
		return MTC_EXIT_FAILURE;
	}
	if (v > 0) {
		mtc_error("'%s' is already there and is not %s (%s): restore into another --out, or "
			  "remove it first",
			  path, what, why);
		return MTC_EXIT_FAILURE;
	}
	mtc_warn("'%s' is already there and holds %s: verified, kept", path, what);
	return MTC_EXIT_OK;
}

/*
 * What --out already holds of the parts, before any byte moves: done[i] is
 * set for a part whose data is there and verified (a part with the data of
 * an earlier one follows it). Anything else in a part's place refuses the
 * restore (MTC_EXIT_FAILURE).
 */
static int check_target(const struct mtc_backup_info *info, const struct mtc_step_part *w, size_t n,
			char *done)
{
	int hashes = !strcmp(layout, "hash");
	char *what = xasprintf("step %lld of backup %s", info->step, info->name);
	int rc = MTC_EXIT_OK;

	for (size_t i = 0; i < n && rc == MTC_EXIT_OK; i++) {
		size_t first = i;
		struct stat st;
		char *path;
		for (size_t k = 0; k < i; k++)
			if (!strcmp(w[k].hash, w[i].hash) && first == i)
				first = k;
		if (first < i && !hashes) {
			done[i] = done[first];
			continue;
		}
		path = hashes ? xasprintf("%s/%s.data", out_dir, w[i].hash)
			      : step_path(w, n, i, info->step);
		if (lstat(path, &st) == 0)
			rc = check_present(path, w[i].hash, hashes ? "what its name says" : what);
		else if (errno != ENOENT)
			mtc_error("cannot read '%s':", path), rc = MTC_EXIT_FAILURE;
		done[i] = rc == MTC_EXIT_OK && lstat(path, &st) == 0;
		free(path);
		if (rc == MTC_EXIT_OK && hashes) {
			char old[MTC_HASH_MAX + 1];
			path = xasprintf("%s/%s", out_dir, w[i].meta);
			if (mtc_read_meta(path, old) == 0 && strcmp(old, w[i].hash)) {
				mtc_error("'%s' is already there and names '%s', not '%s' of %s: restore "
					  "into another --out, or remove it first",
					  path, old, w[i].hash, what);
				rc = MTC_EXIT_FAILURE;
			}
			free(path);
		}
	}
	free(what);
	return rc;
}

static void removed_leftover(const char *where, long long bytes, void *arg)
{
	mtc_info("removed '%s' (%lld bytes): a dead writer's temporary", where, bytes);
}

/*
 * DIR/.mtc-restore-<name>-n<rank>.tmp: the same for every run of this
 * restore, so a run continues what a killed one fetched; locked against a
 * second run (lib/tmpname.h). Without DIR, a new one under $TMPDIR. What
 * dead writers left beside it goes.
 */
static int open_staging(const char *name, int rank, struct mtc_tmp *t)
{
	const char *tmp = getenv("TMPDIR");
	const char *where = out_dir ? out_dir : tmp && *tmp ? tmp : "/tmp";
	char *label = xasprintf("restore-%s-n%d", name, rank);
	int rc = out_dir ? mtc_tmp_claim(where, label, t) : mtc_tmp_private_dir("restore", t);

	if (rc < 0 && errno == EBUSY)
		mtc_error("cannot use '%s/.mtc-%s.tmp': another mtc-restore is using it", where, label);
	else if (rc < 0)
		mtc_error("cannot create a staging dir in '%s':", where);
	if (rc == 0 && out_dir) {
		mtc_tmp_sweep(where, 1, 1, removed_leftover, NULL);
		/* what a killed run was writing inside the staging it continues */
		mtc_tmp_sweep(t->path, 64, 1, removed_leftover, NULL);
	}
	free(label);
	return rc;
}

/* Rank R's part of backup name (info: its metas) into --out or --archive. */
int restore_from(struct mtc_store *s, const char *job, const struct mtc_backup_info *info, int rank)
{
	struct mtc_step_part *w = NULL;
	struct mtc_object_fetched got = { 0 };
	size_t n = 0;
	char *staging = NULL, *url = xasprintf("%s/%s", mtc_store_url(s), info->name), err[1024],
	     *done = NULL;
	struct mtc_tmp t = { NULL, -1 };
	int *slot = NULL;
	double start = mtc_now();
	int rc;
	size_t todo = 0;
	struct stat st;

	rc = node_parts(info, rank, &w, &n);
	if (rc == MTC_EXIT_NOTFOUND)
		mtc_error("backup '%s' has no .meta of rank %d", info->name, rank);
	if (rc != MTC_EXIT_OK)
		goto out;
	mtc_info("backup %s: rank %d, step %lld, %zu worker%s", url, rank, info->step, n,
		 n == 1 ? "" : "s");
	done = xcalloc(n, 1);
	slot = xcalloc(n, sizeof *slot);
	if (out_dir && (rc = check_target(info, w, n, done)) != MTC_EXIT_OK)
		goto out;
	for (size_t i = 0; i < n; i++)
		slot[i] = done[i] ? -1 : (int)todo++;
	if (out_dir && mtc_mkdir_p(out_dir, 0755) < 0) {
		mtc_error("cannot create '%s':", out_dir);
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	if (!todo) { /* all in place: only a killed run's staging, when there is one, to remove */
		char *left = xasprintf("%s/.mtc-restore-%s-n%d.tmp", out_dir, info->name, rank);
		if (lstat(left, &st) == 0 && open_staging(info->name, rank, &t) == 0)
			staging = t.path;
		free(left);
	} else if (open_staging(info->name, rank, &t) < 0) {
		rc = MTC_EXIT_FAILURE;
		goto out;
	} else if ((rc = fetch_all(url, w, n, slot, staging = t.path, &got, err, sizeof err)) !=
		   MTC_EXIT_OK) {
		if (rc == MTC_EXIT_INTEGRITY)
			report_damaged(s, info->name, err);
		goto out;
	}
	if (todo)
		mtc_info("writing %s", archive_path ? archive_path : out_dir);
	if (archive_path &&
	    mtc_step_archive(archive_path, compress ? compress : mtc_archive_filter_of(archive_path),
			     strcmp(layout, "hash") ? info->step : -1, staging, w, n, err,
			     sizeof err) < 0) {
		mtc_error("%s", err);
		rc = MTC_EXIT_FAILURE;
	} else if (!archive_path &&
		   (!strcmp(layout, "hash") ? publish_hashes(staging, w, n, slot, &got)
					    : publish_step(staging, w, n, slot, info->step)) < 0) {
		rc = MTC_EXIT_FAILURE;
	}
	if (rc == MTC_EXIT_OK && (!archive_path || strcmp(archive_path, "-"))) {
		double secs = mtc_now() - start;
		double rate = mtc_mib_per_s((double)(got.bytes - got.kept), secs);
		char *path = !strcmp(layout, "step") && out_dir
				     ? n == 1 ? xasprintf("%s/%lld", out_dir, info->step)
					      : xstrdup(out_dir)
				     : NULL;
		if (json_out) {
			json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:I, s:I, s:o, s:f}",
					      "location", from, "job", job, "backup", info->name, "rank",
					      rank, "step", (json_int_t)info->step, "metas", (int)n,
					      "bytes", (json_int_t)got.bytes, "kept",
					      (json_int_t)got.kept, "seconds", mtc_json_seconds(secs),
					      "mib-per-s", rate);
			if (path)
				json_object_set_new(j, "path", json_string(path));
			mtc_json_print(j);
		} else {
			printf("restored step %lld of rank %d from '%s' to '%s': %lld bytes (%lld kept) in "
			       "%.3f s, %.1f MiB/s\n",
			       info->step, rank, url,
			       path	      ? path
			       : archive_path ? archive_path
					      : out_dir,
			       (long long)got.bytes, (long long)got.kept, secs, rate);
			fflush(stdout);
		}
		free(path);
	}
out:
	if (staging && out_dir && rc != MTC_EXIT_OK && rc != MTC_EXIT_INTEGRITY &&
	    (got.started || got.kept)) {
		mtc_warn("'%s' keeps what was fetched; the same command continues from there", staging);
	} else if (staging) {
		mtc_remove_tree(staging);
	}
	mtc_tmp_release(&t);
	parts_free(w, n);
	mtc_object_fetched_free(&got);
	free(url);
	free(done);
	free(slot);
	return rc;
}
