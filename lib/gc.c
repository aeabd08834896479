/* Local garbage collection; the invariant is in gc.h. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "fsutil.h"
#include "gc.h"
#include "local_dir.h"
#include "log.h"
#include "naming.h"
#include "strset.h"
#include "tmpname.h"
#include "xalloc.h"

static int keep_step(const struct mtc_gc_opts *o, const struct mtc_ckpt_name *n)
{
	if (strcmp(n->job, o->cfg->job_name) || (o->own_only && n->rank != o->cfg->node_rank))
		return 0;
	for (size_t i = 0; i < o->n_keep; i++)
		if (o->keep_steps[i] == n->step)
			return 1;
	return 0;
}

/* The hash a .restore symlink points to ("<hash>.data"), if any. */
static int marker_hash(const char *dir, const char *name, char *hash)
{
	char *p = xasprintf("%s/%s", dir, name), target[PATH_MAX];
	ssize_t n = readlink(p, target, sizeof target - 1);
	free(p);
	if (n <= 0)
		return -1;
	target[n] = '\0';
	const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	return mtc_parse_data_name(base, hash);
}

/* 1 when dir/name was published (its ctime: the rename) less than grace_s ago. */
static int young(const struct mtc_gc_opts *o, const char *name)
{
	struct stat sb;
	char *p;
	struct timespec now;
	int rc;

	if (o->grace_s <= 0)
		return 0;
	p = xasprintf("%s/%s", o->dir, name);
	rc = lstat(p, &sb) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0 &&
	     (double)(now.tv_sec - sb.st_ctim.tv_sec) + (now.tv_nsec - sb.st_ctim.tv_nsec) / 1e9 <
		     o->grace_s;
	free(p);
	return rc;
}

/*
 * A manifest a peer sent ahead of its data is of no more use once the data
 * is here (committed locally, or arrived): removed then, and when no kept
 * step names it and it is older than mtc_tmp_stale_s() (its data never came).
 */
static void drop_pending(const struct mtc_gc_opts *o, const struct mtc_strset *keep, const char *name,
			 mtc_gc_cb *would_delete, void *arg)
{
	const char *hash = name + strlen(MTC_PENDING_MANIFEST);
	char *path = xasprintf("%s/%s", o->dir, name), *data = xasprintf("%s/%s.data", o->dir, hash);
	struct stat sb;

	if (mtc_is_hash(hash) && lstat(path, &sb) == 0 &&
	    (access(data, F_OK) == 0 ||
	     (!mtc_strset_has(keep, hash) && time(NULL) - sb.st_mtime >= mtc_tmp_stale_s()))) {
		if (o->dry_run) {
			if (would_delete)
				would_delete(path, arg);
		} else if (unlink(path) < 0 && errno != ENOENT) {
			mtc_warn("cannot delete '%s':", path);
		} else {
			mtc_info("deleted '%s': its data is here or will not come", path);
		}
	}
	free(data);
	free(path);
}

struct swept {
	const struct mtc_gc_opts *o;
	mtc_gc_cb *would_delete;
	void *arg;
};

static void swept_one(const char *path, long long bytes, void *arg)
{
	struct swept *w = arg;
	if (w->o->dry_run && w->would_delete)
		w->would_delete(path, w->arg);
	else if (!w->o->dry_run)
		mtc_info("removed '%s' (%lld bytes): a dead writer's temporary", path, bytes);
}

int mtc_gc(const struct mtc_gc_opts *o, struct mtc_gc_stats *st)
{
	return mtc_gc_dry(o, st, NULL, NULL);
}

int mtc_gc_dry(const struct mtc_gc_opts *o, struct mtc_gc_stats *st, mtc_gc_cb *would_delete, void *arg)
{
	struct mtc_strset keep = { 0 };
	char **metas = NULL, **datas = NULL, **manifests = NULL, **pendings = NULL;
	size_t nmetas = 0, ndatas = 0, nmanifests = 0, npendings = 0;
	struct swept sw = { o, would_delete, arg };
	int rc = 0;
	memset(st, 0, sizeof *st);

	DIR *d = opendir(o->dir);
	if (!d) {
		mtc_error("cannot list '%s':", o->dir);
		return -1;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		struct mtc_ckpt_name n;
		char hash[MTC_HASH_MAX + 1];
		if (mtc_parse_ckpt_name(e->d_name, &n) == 0 && n.ext == MTC_EXT_META) {
			metas = xrealloc(metas, (nmetas + 1) * sizeof *metas);
			metas[nmetas++] = xstrdup(e->d_name);
		} else if (mtc_parse_ckpt_name(e->d_name, &n) == 0 && n.ext == MTC_EXT_RESTORE) {
			if (marker_hash(o->dir, e->d_name, hash) == 0)
				mtc_strset_add(&keep, hash);
		} else if (mtc_parse_data_name(e->d_name, hash) == 0) {
			datas = xrealloc(datas, (ndatas + 1) * sizeof *datas);
			datas[ndatas++] = xstrdup(e->d_name);
		} else if (mtc_parse_manifest_name(e->d_name, hash) == 0) {
			manifests = xrealloc(manifests, (nmanifests + 1) * sizeof *manifests);
			manifests[nmanifests++] = xstrdup(e->d_name);
		} else if (!strncmp(e->d_name, MTC_PENDING_MANIFEST, strlen(MTC_PENDING_MANIFEST))) {
			pendings = xrealloc(pendings, (npendings + 1) * sizeof *pendings);
			pendings[npendings++] = xstrdup(e->d_name);
		}
	}
	closedir(d);

	for (size_t i = 0; i < nmetas; i++) {
		struct mtc_ckpt_name n;
		char *path = xasprintf("%s/%s", o->dir, metas[i]), *hash = NULL;
		mtc_parse_ckpt_name(metas[i], &n);
		if (keep_step(o, &n)) {
			st->kept_meta++;
			if (o->own_data && n.rank != o->cfg->node_rank)
				;
			else if (mtc_read_file(path, MTC_HASH_MAX, &hash, NULL) == 0 &&
				 mtc_is_hash(hash))
				mtc_strset_add(&keep, hash);
			else
				mtc_warn("kept '%s' does not hold a digest", path);
		} else if (o->dry_run) {
			if (would_delete)
				would_delete(path, arg);
			st->deleted_meta++;
		} else if (unlink(path) < 0 && errno != ENOENT) {
			mtc_error("cannot delete '%s':", path);
			rc = -1;
		} else {
			mtc_info("deleted '%s'", path);
			st->deleted_meta++;
		}
		free(hash);
		free(path);
	}
	if (!o->dry_run && mtc_fsync_dir(o->dir) < 0)
		rc = -1;

	for (size_t i = 0; i < ndatas; i++) {
		char hash[MTC_HASH_MAX + 1];
		mtc_parse_data_name(datas[i], hash);
		if (mtc_strset_has(&keep, hash)) {
			st->kept_data++;
		} else if (young(o, datas[i])) {
			mtc_strset_add(&keep, hash); /* and its manifest */
			st->kept_data++;
		} else if (rc < 0) {
			/* A meta we could not delete may still name this data. */
		} else if (o->dry_run) {
			char *path = xasprintf("%s/%s", o->dir, datas[i]);
			if (would_delete)
				would_delete(path, arg);
			free(path);
			st->deleted_data++;
		} else if (mtc_trash(o->dir, datas[i]) < 0) {
			mtc_error("cannot delete '%s/%s':", o->dir, datas[i]);
			rc = -1;
		} else {
			mtc_info("deleted '%s/%s'", o->dir, datas[i]);
			st->deleted_data++;
		}
	}
	/* A manifest goes with its data; one whose data is gone is an orphan. */
	for (size_t i = 0; i < nmanifests; i++) {
		char hash[MTC_HASH_MAX + 1], *data, *path = xasprintf("%s/%s", o->dir, manifests[i]);
		mtc_parse_manifest_name(manifests[i], hash);
		data = xasprintf("%s/%s.data", o->dir, hash);
		if (rc == 0 && (!mtc_strset_has(&keep, hash) || access(data, F_OK) < 0)) {
			if (o->dry_run) {
				if (would_delete)
					would_delete(path, arg);
			} else if (unlink(path) < 0 && errno != ENOENT)
				mtc_warn("cannot delete '%s':", path);
		}
		free(data);
		free(path);
		free(manifests[i]);
	}
	free(manifests);
	for (size_t i = 0; i < npendings; i++) {
		if (rc == 0)
			drop_pending(o, &keep, pendings[i], would_delete, arg);
		free(pendings[i]);
	}
	free(pendings);
	if (mtc_tmp_sweep(o->dir, 1, !o->dry_run, swept_one, &sw) < 0)
		mtc_warn("cannot look for leftovers in '%s':", o->dir);
	for (size_t i = 0; i < nmetas; i++)
		free(metas[i]);
	for (size_t i = 0; i < ndatas; i++)
		free(datas[i]);
	free(metas);
	free(datas);
	mtc_strset_free(&keep);
	return rc;
}
