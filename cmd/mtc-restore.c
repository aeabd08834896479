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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
#include "http.h"
#include "inventory.h"
#include "json_out.h"
#include "log.h"
#include "manifest_text.h"
#include "naming.h"
#include "object.h"
#include "object_fetch.h"
#include "progress.h"
#include "step_archive.h"
#include "store/store.h"
#include "store/store_tree.h"
#include "tmpname.h"
#include "token_file.h"
#include "walk.h"
#include "xalloc.h"

enum mode { MODE_NONE, MODE_FROM, MODE_PIN, MODE_UNPIN, MODE_CLUSTER };

static char *from, *out_dir, *archive_path, *compress, *pin_root, *unpin_root, *token_file, *s3_endpoint,
	*rank_text, *job_opt, *name_opt, *layout = "step";
static int parallel, threads, force, json_out, no_progress, verify_only;
static char *slice_threshold_text;
static long long slice_threshold;
static int slices;
static char *dir, *config_file, *backup, *coordinator_url, *address, *peer_token_file;
static int standalone;
static double timeout_s, heartbeat_s;

static struct mtc_store_options store_options(void)
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
		(*out)[(*n)++] = (struct mtc_step_part){
			.meta = mtc_ckpt_name(info->job, m->step, rank, m->worker, MTC_EXT_META),
			.hash = m->hash,
			.worker = m->worker
		};
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
		     const char *staging, struct mtc_object_fetched *got)
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
	if (rc == MTC_EXIT_NOTFOUND) {
		mtc_error("backup '%s' is incomplete: %s", url, err);
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
static int publish_hashes(const char *staging, const struct mtc_step_part *w, size_t n,
			  const int *slot, const struct mtc_object_fetched *got)
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
static int publish_step(const char *staging, const struct mtc_step_part *w, size_t n,
			const int *slot, long long step)
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
				 "twice", w[i].worker);
		else if (mtc_mkdir_p(parent, 0755) < 0 || (rc = mtc_publish(src, dst)) < 0)
			mtc_error("cannot create '%s':", dst), rc = -1;
		else if (rc > 0)
			mtc_error("'%s' is already there: restore into another --out, or remove it "
				  "first",
				  dst), rc = -1;
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
static int check_target(const struct mtc_backup_info *info, const struct mtc_step_part *w,
			size_t n, char *done)
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
static int restore_from(struct mtc_store *s, const struct mtc_backup_info *info, int rank)
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
	} else if ((rc = fetch_all(url, w, n, slot, staging = t.path, &got)) != MTC_EXIT_OK) {
		goto out;
	}
	if (todo)
		mtc_info("writing %s", archive_path ? archive_path : out_dir);
	if (archive_path && mtc_step_archive(archive_path, !!compress, staging, w, n, err,
					     sizeof err) < 0) {
		mtc_error("%s", err);
		rc = MTC_EXIT_FAILURE;
	} else if (!archive_path && (!strcmp(layout, "hash")
					     ? publish_hashes(staging, w, n, slot, &got)
					     : publish_step(staging, w, n, slot, info->step)) < 0) {
		rc = MTC_EXIT_FAILURE;
	}
	if (rc == MTC_EXIT_OK && (!archive_path || strcmp(archive_path, "-"))) {
		double secs = mtc_now() - start;
		json_t *j = json_pack("{s:s, s:i, s:I, s:i, s:I, s:I, s:o, s:f}", "backup", url,
				      "rank", rank, "step", (json_int_t)info->step,
				      "metas", (int)n, "bytes", (json_int_t)got.bytes, "kept",
				      (json_int_t)got.kept, "seconds", mtc_json_seconds(secs),
				      "mb-per-s",
				      round((got.bytes - got.kept) / 1e6 / (secs > 1e-6 ? secs : 1e-6) *
					    10) /
					      10);
		if (!strcmp(layout, "step") && out_dir)
			json_object_set_new(j, "path",
					    n == 1 ? json_sprintf("%s/%lld", out_dir, info->step)
						   : json_string(out_dir));
		mtc_json_print(j);
	}
out:
	if (staging && out_dir && rc != MTC_EXIT_OK && rc != MTC_EXIT_INTEGRITY &&
	    (got.started || got.kept)) {
		mtc_warn("'%s' keeps what was fetched; the same command continues from there",
			 staging);
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

/* The job's backup root (lib/backup_location.h); NULL with *rc set after an error. */
static struct mtc_store *open_job(const char *location, const char *job, int *rc)
{
	struct mtc_store_options opt = store_options();
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

struct leftovers {
	long long n, bytes;
	char first[256];
};

static void count_leftover(const char *where, long long bytes, void *arg)
{
	struct leftovers *l = arg;
	if (!l->n++)
		snprintf(l->first, sizeof l->first, "%s", where);
	l->bytes += bytes;
}

/*
 * --verify: every byte of the backup against its manifests and names, and
 * what dead writers left in it; nothing is written.
 */
static int verify_backup(struct mtc_store *s, const char *name)
{
	struct mtc_store_options opt = store_options();
	struct mtc_backup_info info;
	struct mtc_verify_stats st = { 0 };
	struct mtc_progress *bar;
	struct leftovers left = { 0 };
	double start = mtc_now();
	char why[1024] = "", *prefix = xasprintf("%s/", name);
	int v, rc;
	long found = mtc_store_leftovers(s, prefix, 0, count_leftover, &left);

	free(prefix);
	if (found < 0) {
		mtc_error("cannot look for leftovers in '%s/%s': %s", mtc_store_url(s), name,
			  mtc_store_error(s));
		return MTC_EXIT_FAILURE;
	}
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
	if (v == 0 && left.n)
		snprintf(why, sizeof why,
			 "%lld temporar%s of dead writers (%lld bytes), first '%s': mtc-prune --delete "
			 "or the next mtc-backup to it removes them",
			 left.n, left.n == 1 ? "y" : "ies", left.bytes, left.first);
	if (v == 0 && left.n)
		mtc_warn("backup '%s/%s' holds %s", mtc_store_url(s), name, why);
	if (v >= 0)
		mtc_json_print(json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}",
					 "location", mtc_store_url(s), "name", name, "step",
					 (json_int_t)info.step, "state",
					 v ? "damaged" : left.n ? "leftovers" : "intact", "reason",
					 why, "objects", (json_int_t)st.objects, "files",
					 (json_int_t)st.files, "bytes", (json_int_t)st.bytes,
					 "leftovers", (json_int_t)left.n, "leftover-bytes",
					 (json_int_t)left.bytes, "seconds",
					 mtc_json_seconds(mtc_now() - start)));
	mtc_backup_info_free(&info);
	return rc;
}

/* --rank, or 0 when the backup holds one node. */
/* --rank, or 0 when the backup (info) holds one node. */
static int pick_rank(const struct mtc_backup_info *info, long long *rank)
{
	*rank = 0;
	if (rank_text) {
		if (mtc_parse_uint(rank_text, rank) == 0 && *rank <= 1 << 30)
			return MTC_EXIT_OK;
		return mtc_usage_error("--rank takes a node rank, not '%s'", rank_text);
	}
	if (info->nodes > 1)
		return mtc_usage_error("backup %s holds %d nodes: say which with --rank R",
				       info->name, info->nodes);
	return MTC_EXIT_OK;
}

/* --from LOCATION --job JOB [--name NAME]: a backup's data onto a workstation, or --verify it. */
static int from_backup(const char *job)
{
	struct mtc_backup_info info = { 0 };
	char name[64];
	long long rank = 0;
	int rc;
	struct mtc_store *js = open_job(from, job, &rc);

	if (!js)
		return rc;
	rc = choose_backup(js, name, sizeof name);
	if (rc == MTC_EXIT_OK && verify_only) {
		rc = verify_backup(js, name);
	} else if (rc == MTC_EXIT_OK && mtc_backup_inspect(js, name, 0, 0, &info) < 0) {
		mtc_error("cannot read backup '%s/%s': %s", mtc_store_url(js), name,
			  mtc_store_error(js));
		rc = MTC_EXIT_FAILURE;
	} else if (rc == MTC_EXIT_OK && (rc = pick_rank(&info, &rank)) == MTC_EXIT_OK) {
		rc = restore_from(js, &info, (int)rank);
	}
	mtc_backup_info_free(&info);
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

	if ((rc = mtc_cli_local_dir(dir)) != MTC_EXIT_OK)
		return rc;
	if (mtc_config_load(config_file, &cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", config_file, err);
		return MTC_EXIT_USAGE;
	}
	context = xasprintf("job=%s node=%d/%d", cfg.job_name, cfg.node_rank, cfg.nodes);
	mtc_log_status_dir(dir, context);
	free(context);
	const char *ptf = mtc_peer_token_path(peer_token_file);
	if (ptf && !(token = mtc_read_token_file(ptf, err, sizeof err))) {
		mtc_critical("%s", err);
		mtc_config_free(&cfg);
		return MTC_EXIT_USAGE;
	}
	o.dir = dir;
	o.cfg = &cfg;
	o.backup = backup;
	o.coordinator = standalone ? NULL : mtc_coord_url(coordinator_url);
	o.address = address;
	o.token = token;
	o.store_token_file = token_file;
	o.store_s3_endpoint = s3_endpoint;
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
		{ "s3-endpoint", '\0', POPT_ARG_STRING, &s3_endpoint, 0, "s3:// endpoint URL (else $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's, AWS's)", "URL" },
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
	mtc_http_init();
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
