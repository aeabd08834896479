/*
 * The local commit. Order (each rename followed by an fsync of the dir):
 *   <step>/              -> <job>-s<step>-n<rank>-w0.save     (step dirs only)
 *   digest H of the .save
 *   write <job>-...-w<w>.tmp = H, fsync
 *   H.data missing: rename .save -> H.data, then .tmp -> .meta
 *   H.data present: rename .tmp -> .meta, then trash the .save (redundant)
 * Invariant: <hash>.data appears only by renaming a complete save, and a
 * .meta only after its .data exists. A re-run converges: a .tmp beside its
 * .save is dropped and the save re-hashed; a .tmp without its .save whose
 * .data exists is renamed to .meta; the trash is emptied.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "clock.h"
#include "digest_cache.h"
#include "fault.h"
#include "figures.h"
#include "fsutil.h"
#include "local_dir.h"
#include "log.h"
#include "naming.h"
#include "object.h"
#include "ocdbt/orbax_digest.h"
#include "manifest_text.h"
#include "peer/peer_wire.h"
#include "walk.h"
#include "xalloc.h"

#define COMMIT_SUCCESS "commit_success.txt"

int mtc_trash(const char *dir, const char *name)
{
	static unsigned seq;
	char *trash = xasprintf("%s/%s", dir, MTC_TRASH_DIR);
	char *from = xasprintf("%s/%s", dir, name);
	char *to = xasprintf("%s/%ld-%u-%s", trash, (long)getpid(), seq++, name);
	int rc = 0;
	if (mkdir(trash, 0700) < 0 && errno != EEXIST)
		rc = -1;
	if (rc == 0 && rename(from, to) < 0)
		rc = errno == ENOENT ? 0 : -1;
	else if (rc == 0) {
		mtc_fsync_dir(dir);
		mtc_fault_kill("trash", dir);
		rc = mtc_remove_tree(to);
	}
	int e = errno;
	free(trash);
	free(from);
	free(to);
	errno = e;
	return rc;
}

static char *ckpt_path(const struct mtc_commit_opts *o, long long step, int worker, enum mtc_ext ext)
{
	char *name = mtc_ckpt_name(o->cfg->job_name, step, o->cfg->node_rank, worker, ext);
	char *path = xasprintf("%s/%s", o->dir, name);
	free(name);
	return path;
}

static int write_synced(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
		int e = errno ? errno : EIO;
		close(fd);
		unlink(path);
		errno = e;
		return -1;
	}
	return close(fd);
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/*
 * framework: orbax names a step by its logical digest (orbax_digest.h), which
 * data-parallel replicas share although their bytes differ; a step without an
 * OCDBT store keeps its merkle name. A store that cannot be read also keeps
 * the merkle name, with an error: the step is kept, only not deduplicated.
 */
static void logical_name(const struct mtc_commit_opts *o, const char *save, char hash[MTC_DIGEST_LEN])
{
	char logical[MTC_DIGEST_LEN], err[512];
	int rc = mtc_orbax_digest(save, o->threads, logical, err, sizeof err);

	if (rc > 0)
		memcpy(hash, logical, MTC_DIGEST_LEN);
	else if (rc < 0)
		mtc_error("cannot compute the logical digest of '%s': %s; naming it by its merkle "
			  "digest %s",
			  save, err, hash);
}

/*
 * A step is committed only when every file of it can be sent: a symlink that
 * leads out of the step (or a FIFO, a device) would have a peer or a backup
 * read what is not the step's. A symlink that stays inside is followed, as
 * the digest follows it. The refusal is logged once per step and worker; the
 * step stays where it is, not replicated.
 */
static int sendable(const char *save, long long step, int worker)
{
	static struct refusal {
		long long step;
		int worker;
	} refused[64];
	static size_t n_refused;
	struct mtc_wire_reader *rd;
	struct stat st;
	char why[1024];

	if (lstat(save, &st) < 0 || !S_ISDIR(st.st_mode))
		return 1;
	if ((rd = mtc_wire_reader_open(save, NULL, why, sizeof why))) {
		mtc_wire_reader_close(rd);
		return 1;
	}
	for (size_t i = 0; i < n_refused; i++)
		if (refused[i].step == step && refused[i].worker == worker)
			return 0;
	if (n_refused < sizeof refused / sizeof *refused)
		refused[n_refused++] = (struct refusal){ step, worker };
	mtc_error("cannot commit step %lld worker %d: %s; it stays in '%s', not replicated", step,
		  worker, why, save);
	return 0;
}

/*
 * The save's digest (its logical one for orbax) and manifest, taking what the
 * cache knows; the background hashing waits meanwhile (digest_cache.h).
 * 0; 1 when the save changed while it was hashed (its figures before and
 * after differ, or a file was cut short under the hash); -1 on error.
 */
static int name_save(const struct mtc_commit_opts *o, const char *save, struct mtc_commit_result *r,
		     struct mtc_manifest *m, struct mtc_figures *after)
{
	struct mtc_figures before;
	int rc;

	if (mtc_figures_take(save, &before) < 0) {
		mtc_error("cannot read '%s':", save);
		return -1;
	}
	mtc_fault_pause("commit-hashing", save);
	if (o->cache)
		mtc_digest_cache_hold(o->cache);
	rc = mtc_digest_path_cached(save, o->threads, o->cache, r->hash, m, &r->known);
	if (rc == 0 && o->cfg->framework == MTC_FW_ORBAX)
		logical_name(o, save, r->hash);
	if (o->cache)
		mtc_digest_cache_release(o->cache);
	if (rc < 0 && errno == EAGAIN)
		rc = 1;
	else if (rc < 0)
		mtc_error("cannot digest '%s':", save);
	else if (mtc_figures_take(save, after) < 0)
		rc = errno == EAGAIN || errno == ENOENT ? 1 : -1;
	else if (!mtc_figures_same(&before, after))
		rc = 1;
	if (rc < 0 && errno != EAGAIN && errno != ENOENT)
		mtc_error("cannot read '%s':", save);
	r->bytes = mtc_manifest_bytes(m);
	return rc;
}

/*
 * A save that changes under its hash is hashed again a few times, a little
 * later each time; one that keeps changing is left for a later scan.
 */
#define CHANGED_TRIES 4
#define CHANGED_WAIT_US 50000

/*
 * Data just published (save renamed to data), which changed after it was
 * hashed (its figures differ from after's): renamed back, with the manifest
 * kept beside it removed. 0 when it had not changed; 1 when it was taken
 * back; -1 on error.
 */
static int take_back_if_changed(const struct mtc_commit_opts *o, const char *save, const char *data,
				const char *hash, const struct mtc_figures *after)
{
	struct mtc_figures now;
	char *manifest;

	if (mtc_figures_take(data, &now) == 0 && mtc_figures_same(&now, after))
		return 0;
	if (mtc_publish(data, save) != 0) {
		mtc_error("'%s' changed after it was hashed and cannot be renamed back to '%s':", data,
			  save);
		return -1;
	}
	manifest = xasprintf("%s/%s.manifest", o->dir, hash);
	unlink(manifest);
	free(manifest);
	mtc_fsync_dir(o->dir);
	return 1;
}

/*
 * Commits <job>-s<step>-n<rank>-w<worker>.save, which must be complete.
 * 0; 1 when it kept changing while it was hashed (not committed); -1.
 */
static int commit_save(const struct mtc_commit_opts *o, long long step, int worker, double appeared)
{
	struct mtc_commit_result r = { .step = step, .worker = worker, .appeared = appeared };
	struct mtc_manifest m;
	struct mtc_figures after;
	char *save = ckpt_path(o, step, worker, MTC_EXT_SAVE);
	char *tmp = ckpt_path(o, step, worker, MTC_EXT_TMP);
	char *meta = ckpt_path(o, step, worker, MTC_EXT_META);
	char *data = NULL;
	int rc = -1, changed = 1;
	double t0 = mtc_now();

	mtc_manifest_init(&m);
	if (!sendable(save, step, worker))
		goto out;
	for (int try = 0; changed && try < CHANGED_TRIES; try++) {
		if (try) {
			mtc_info("step %lld worker %d changed while it was hashed; hashing it again",
				 step, worker);
			usleep(CHANGED_WAIT_US << (try - 1));
			mtc_manifest_free(&m);
			mtc_manifest_init(&m);
		}
		if ((changed = name_save(o, save, &r, &m, &after)) < 0)
			goto out;
		if (changed)
			continue;
		free(data);
		data = xasprintf("%s/%s.data", o->dir, r.hash);
		mtc_fault_kill("commit-hashed", save);
		if (write_synced(tmp, r.hash) < 0) {
			mtc_error("cannot write '%s':", tmp);
			goto out;
		}
		mtc_fault_kill("commit-tmp-written", save);
		r.redundant = exists(data);
		if (r.redundant)
			break;
		/* <hash>.manifest beside a tree's data saves a push its own hashing pass */
		char *text = mtc_is_dir_hash(r.hash) ? mtc_manifest_text(&m) : NULL;
		size_t len = text ? strlen(text) : 0;
		if (len > MTC_MANIFEST_BODY_MAX)
			mtc_warn("step %lld: its manifest (%zu entries, %zu MiB) is longer than the %d MiB "
				 "a peer accepts: it is backed up, but not replicated",
				 step, m.n, len >> 20, MTC_MANIFEST_BODY_MAX >> 20);
		int published = mtc_object_publish(save, o->dir, r.hash,
						   &(struct mtc_object_manifest){ .text = text,
										  .len = len });
		free(text);
		if (published != 0) {
			if (published > 0)
				errno = EEXIST;
			mtc_error("cannot rename '%s' to '%s':", save, data);
			goto out;
		}
		mtc_fault_kill("commit-data-renamed", save);
		mtc_fault_pause("commit-data-renamed", save);
		if ((changed = take_back_if_changed(o, save, data, r.hash, &after)) < 0)
			goto out;
		if (changed)
			unlink(tmp);
	}
	if (changed) {
		mtc_info("step %lld worker %d is still being written to: not committed yet", step,
			 worker);
		rc = 1;
		goto out;
	}
	if (r.redundant) {
		mtc_warn("step %lld has the same digest %s as a previous step; deleting the new copy",
			 step, r.hash);
		if (rename(tmp, meta) < 0 || mtc_fsync_dir(o->dir) < 0) {
			mtc_error("cannot rename '%s' to '%s':", tmp, meta);
			goto out;
		}
		mtc_fault_kill("commit-meta-renamed", save);
		char *base = strrchr(save, '/') + 1;
		if (mtc_trash(o->dir, base) < 0) {
			mtc_error("cannot delete '%s':", save);
			goto out;
		}
	} else {
		if (rename(tmp, meta) < 0 || mtc_fsync_dir(o->dir) < 0) {
			mtc_error("cannot rename '%s' to '%s':", tmp, meta);
			goto out;
		}
		mtc_fault_kill("commit-meta-renamed", save);
	}
	r.seconds = mtc_now() - t0;
	mtc_info("committed step %lld worker %d: %s (%lld bytes, %.3f s, %lld of them hashed "
		 "while it was written)",
		 step, worker, r.hash, r.bytes, r.seconds, r.known);
	if (o->cb)
		o->cb(&r, o->arg);
	rc = 0;
out:
	mtc_manifest_free(&m);
	free(save);
	free(tmp);
	free(meta);
	free(data);
	return rc;
}

/* A .tmp left by a crash: finish it when its data is in place, else drop it. */
static int recover_tmp(const struct mtc_commit_opts *o, long long step, int worker)
{
	char *save = ckpt_path(o, step, worker, MTC_EXT_SAVE);
	char *tmp = ckpt_path(o, step, worker, MTC_EXT_TMP);
	char *meta = ckpt_path(o, step, worker, MTC_EXT_META);
	char *hash = NULL, *data = NULL;
	int rc = 0;

	if (!exists(save) && mtc_read_file(tmp, MTC_HASH_MAX, &hash, NULL) == 0 && mtc_is_hash(hash)) {
		data = xasprintf("%s/%s.data", o->dir, hash);
		if (exists(data)) {
			if (rename(tmp, meta) < 0 || mtc_fsync_dir(o->dir) < 0) {
				mtc_error("cannot rename '%s' to '%s':", tmp, meta);
				rc = -1;
			} else {
				mtc_info("finished the interrupted commit of step %lld worker %d", step,
					 worker);
				struct mtc_commit_result r = { .step = step,
							       .worker = worker,
							       .bytes = -1 };
				snprintf(r.hash, sizeof r.hash, "%s", hash);
				if (o->cb)
					o->cb(&r, o->arg);
			}
			goto out;
		}
	}
	if (unlink(tmp) < 0 && errno != ENOENT) {
		mtc_error("cannot delete '%s':", tmp);
		rc = -1;
	}
out:
	free(save);
	free(tmp);
	free(meta);
	free(hash);
	free(data);
	return rc;
}

/* A walk's visit (walk.h): the newest change seen so far, in *arg. */
static int note_mtime(const struct mtc_walk_entry *e, void *arg)
{
	time_t *newest = arg;
	if (e->error)
		return 0;
	if (e->st.st_mtime > *newest)
		*newest = e->st.st_mtime;
	if (e->st.st_ctime > *newest)
		*newest = e->st.st_ctime;
	return 0;
}

/* Nothing below path changed during the last quiet_s seconds. */
static int quiet_for(const char *path, double quiet_s)
{
	time_t newest = 0;
	struct stat st;
	struct mtc_walk w = { .root = path,
			      .flags = MTC_WALK_PHYS,
			      .max_depth = INT_MAX,
			      .visit = note_mtime,
			      .arg = &newest };
	if (quiet_s <= 0)
		return 1;
	if (lstat(path, &st) < 0)
		return 0;
	note_mtime(&(struct mtc_walk_entry){ .st = st }, &newest);
	if (S_ISDIR(st.st_mode))
		mtc_walk(&w);
	return difftime(time(NULL), newest) >= quiet_s;
}

struct seen {
	long long *steps; /* step dirs renamed into the local dir while watching */
	size_t n;
};

static int was_renamed_in(const struct seen *s, long long step)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->steps[i] == step)
			return 1;
	return 0;
}

static int step_dir_ready(const struct mtc_commit_opts *o, const char *path, long long step,
			  const struct seen *s)
{
	char *marker = xasprintf("%s/%s", path, COMMIT_SUCCESS);
	int ready = was_renamed_in(s, step) || exists(marker) || quiet_for(path, o->quiet_s);
	free(marker);
	return ready;
}

/* <step>/ -> <job>-s<step>-n<rank>-w0.save; a stale save of that name goes to the trash. */
static int take_step_dir(const struct mtc_commit_opts *o, const char *name, long long step)
{
	char *from = xasprintf("%s/%s", o->dir, name);
	char *save = ckpt_path(o, step, 0, MTC_EXT_SAVE);
	int rc = 0;
	if (exists(save)) {
		mtc_warn("replacing the stale '%s'", save);
		if (mtc_trash(o->dir, strrchr(save, '/') + 1) < 0)
			rc = -1;
	}
	if (rc == 0 && (rename(from, save) < 0 || mtc_fsync_dir(o->dir) < 0))
		rc = -1;
	if (rc < 0)
		mtc_error("cannot rename '%s' to '%s':", from, save);
	else
		mtc_info("step %lld saved: '%s' -> '%s'", step, from, save);
	free(from);
	free(save);
	return rc;
}

struct entry {
	long long step;
	int worker;
	char *name;
	double changed; /* its ctime when listed: the framework's rename or last write */
};

struct listing {
	struct entry *steps, *saves, *tmps;
	size_t nsteps, nsaves, ntmps;
};

static void add(struct entry **v, size_t *n, long long step, int worker, const char *name,
		double changed)
{
	*v = xrealloc(*v, (*n + 1) * sizeof **v);
	(*v)[(*n)++] = (struct entry){ step, worker, xstrdup(name), changed };
}

static double ctime_of(const struct stat *st)
{
	return (double)st->st_ctim.tv_sec + st->st_ctim.tv_nsec / 1e9;
}

static void free_listing(struct listing *l)
{
	for (size_t i = 0; i < l->nsteps; i++)
		free(l->steps[i].name);
	for (size_t i = 0; i < l->nsaves; i++)
		free(l->saves[i].name);
	for (size_t i = 0; i < l->ntmps; i++)
		free(l->tmps[i].name);
	free(l->steps);
	free(l->saves);
	free(l->tmps);
}

static int by_step(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->worker - y->worker;
}

static int list_dir(const struct mtc_commit_opts *o, struct listing *l)
{
	DIR *d = opendir(o->dir);
	if (!d)
		return -1;
	struct dirent *e;
	memset(l, 0, sizeof *l);
	while ((e = readdir(d))) {
		struct mtc_ckpt_name n;
		long long step;
		if (mtc_parse_step_dir(e->d_name, &step) == 0) {
			struct stat st;
			char *p = xasprintf("%s/%s", o->dir, e->d_name);
			/* A numeric symlink is a restore marker being consumed: not a save. */
			if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
				add(&l->steps, &l->nsteps, step, 0, e->d_name, ctime_of(&st));
			free(p);
		} else if (mtc_parse_ckpt_name(e->d_name, &n) == 0 && !strcmp(n.job, o->cfg->job_name) &&
			   n.rank == o->cfg->node_rank) {
			struct stat st;
			char *p = xasprintf("%s/%s", o->dir, e->d_name);
			double changed = lstat(p, &st) == 0 ? ctime_of(&st) : 0;
			free(p);
			if (n.ext == MTC_EXT_SAVE)
				add(&l->saves, &l->nsaves, n.step, n.worker, e->d_name, changed);
			else if (n.ext == MTC_EXT_TMP)
				add(&l->tmps, &l->ntmps, n.step, n.worker, e->d_name, changed);
		}
	}
	closedir(d);
	if (l->nsteps)
		qsort(l->steps, l->nsteps, sizeof *l->steps, by_step);
	if (l->nsaves)
		qsort(l->saves, l->nsaves, sizeof *l->saves, by_step);
	return 0;
}

static void note_pending(struct mtc_commit_pendings *p, long long step, int saves, int workers)
{
	if (!p || (p->n && p->v[p->n - 1].step == step))
		return;
	p->v = xrealloc(p->v, (p->n + 1) * sizeof *p->v);
	p->v[p->n++] = (struct mtc_commit_pending){ step, saves, workers };
}

static int scan(const struct mtc_commit_opts *o, const struct seen *s,
		struct mtc_commit_pendings *pending)
{
	struct listing l;
	int count = 0, rc = 0;
	char *trash = xasprintf("%s/%s", o->dir, MTC_TRASH_DIR);
	if (mtc_remove_tree(trash) < 0)
		mtc_warn("cannot empty '%s':", trash);
	free(trash);
	if (pending)
		pending->n = 0;
	if (list_dir(o, &l) < 0) {
		mtc_error("cannot list '%s':", o->dir);
		return -1;
	}
	for (size_t i = 0; i < l.ntmps; i++)
		if (recover_tmp(o, l.tmps[i].step, l.tmps[i].worker) < 0)
			rc = -1;
	int pytorch = o->cfg->framework == MTC_FW_PYTORCH;
	for (size_t i = 0; !pytorch && i < l.nsteps; i++) {
		char *p = xasprintf("%s/%s", o->dir, l.steps[i].name);
		if (step_dir_ready(o, p, l.steps[i].step, s)) {
			if (take_step_dir(o, l.steps[i].name, l.steps[i].step) < 0)
				rc = -1;
			else
				add(&l.saves, &l.nsaves, l.steps[i].step, 0, "", l.steps[i].changed);
		} else {
			note_pending(pending, l.steps[i].step, 0, 0);
		}
		free(p);
	}
	if (l.nsaves)
		qsort(l.saves, l.nsaves, sizeof *l.saves, by_step);
	for (size_t i = 0; i < l.nsaves;) {
		size_t j = i;
		while (j < l.nsaves && l.saves[j].step == l.saves[i].step)
			j++;
		int ready = 1;
		if (pytorch) {
			/* All workers of the step present, none written to lately. */
			ready = (int)(j - i) >= o->cfg->workers_per_node;
			for (size_t k = i; ready && k < j; k++) {
				char *p = xasprintf("%s/%s", o->dir, l.saves[k].name);
				ready = quiet_for(p, o->quiet_s);
				free(p);
			}
			if (!ready)
				note_pending(pending, l.saves[i].step, (int)(j - i),
					     o->cfg->workers_per_node);
		}
		for (size_t k = i; ready && k < j; k++) {
			if (k > i && l.saves[k].worker == l.saves[k - 1].worker)
				continue;
			int c = commit_save(o, l.saves[k].step, l.saves[k].worker, l.saves[k].changed);
			if (c < 0)
				rc = -1;
			else if (c > 0)
				note_pending(pending, l.saves[k].step, -1, 0);
			else
				count++;
		}
		i = j;
	}
	free_listing(&l);
	return rc < 0 ? -1 : count;
}

int mtc_commit_scan(const struct mtc_commit_opts *o) { return scan(o, NULL, NULL); }

int mtc_commit_scan_pending(const struct mtc_commit_opts *o, struct mtc_commit_pendings *p)
{
	return scan(o, NULL, p);
}

int mtc_commit_watch(const struct mtc_commit_opts *o, double timeout_s)
{
	struct seen s = { 0 };
	double deadline = timeout_s < 0 ? -1 : mtc_now() + timeout_s;
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0 || inotify_add_watch(fd, o->dir,
					IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE | IN_ATTRIB |
						IN_DELETE_SELF) < 0) {
		mtc_error("cannot watch '%s':", o->dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = 0;
	for (;;) {
		if (scan(o, &s, NULL) < 0)
			rc = -1;
		s.n = 0;
		double left = deadline < 0 ? 1e9 : deadline - mtc_now();
		if (left <= 0)
			break;
		/* The poll tick lets quiet-time steps and missed events through. */
		int ms = left < 0.5 ? (int)(left * 1000) + 1 : 500;
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, ms) < 0 && errno != EINTR) {
			mtc_error("cannot wait on '%s':", o->dir);
			rc = -1;
			break;
		}
		char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
		ssize_t n;
		while ((n = read(fd, buf, sizeof buf)) > 0)
			for (char *q = buf; q < buf + n;) {
				struct inotify_event *ev = (struct inotify_event *)q;
				long long step;
				if ((ev->mask & IN_MOVED_TO) && ev->len &&
				    mtc_parse_step_dir(ev->name, &step) == 0) {
					s.steps = xrealloc(s.steps, (s.n + 1) * sizeof *s.steps);
					s.steps[s.n++] = step;
				}
				q += sizeof *ev + ev->len;
			}
		if (!exists(o->dir)) {
			mtc_error("cannot watch '%s': it is gone", o->dir);
			rc = -1;
			break;
		}
	}
	free(s.steps);
	close(fd);
	return rc;
}
