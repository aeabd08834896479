/*
 * The cluster restore (cluster_restore.h). Invariant: the .restore markers
 * are created last, after every node passed the restore-done barrier, and
 * each points at data that was verified against its name; a node that
 * cannot get there writes a CRITICAL line (replicator.failed) instead.
 */
#include "cluster_restore.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backups.h"
#include "clock.h"
#include "coord/coord_client.h"
#include "digest.h"
#include "exitcode.h"
#include "fault.h"
#include "fsutil.h"
#include "json_out.h"
#include "gc.h"
#include "handshake.h"
#include "inventory.h"
#include "lkg.h"
#include "lkg_inventory.h"
#include "local_dir.h"
#include "log.h"
#include "manifest_text.h"
#include "naming.h"
#include "object.h"
#include "object_fetch.h"
#include "peer/peer_auth.h"
#include "peer/peer_client.h"
#include "shape.h"
#include "store/store.h"
#include "store/store_tree.h"
#include "tmpname.h"
#include "xalloc.h"

#define MAX_BACKUPS_REPORTED 8

#define FETCHES_IN_FLIGHT 4

struct ctx {
	const struct mtc_cluster_restore_opts *o;
	const struct mtc_config *cfg;
	struct mtc_store *store; /* <backup>/<job>, or NULL */
	struct mtc_peer_client pc;
	double deadline;
	pthread_mutex_t mu; /* guards bytes and fetched while fetches run */
	long long bytes;
	int fetched;
};

static json_t *local_inventory(struct ctx *x)
{
	struct mtc_inventory inv;
	struct mtc_shape sh;
	json_t *metas = json_array(), *data = json_array(), *rep;
	char err[1024];
	int found;

	if (mtc_inventory_scan(x->o->dir, &inv) < 0) {
		mtc_critical("cannot read the local dir '%s':", x->o->dir);
		json_decref(metas);
		json_decref(data);
		return NULL;
	}
	/* a rank past the job's nodes is a bigger run's (a shrink): not this job's to restore */
	for (size_t i = 0; i < inv.n_metas; i++)
		if (!strcmp(inv.metas[i].job, x->cfg->job_name) && inv.metas[i].node < x->cfg->nodes)
			json_array_append_new(metas,
					      json_pack("[I, i, i, s]", (json_int_t)inv.metas[i].step,
							inv.metas[i].node, inv.metas[i].worker,
							inv.metas[i].hash));
	for (size_t i = 0; i < inv.n_data; i++)
		json_array_append_new(data, json_string(inv.data[i].hash));
	mtc_inventory_free(&inv);
	rep = json_pack("{s:o, s:o}", "meta-files", metas, "data-files", data);
	if ((found = mtc_shape_read(x->o->dir, x->cfg->job_name, &sh, err, sizeof err)) < 0)
		mtc_warn("%s: not reporting the shape of the steps it holds", err);
	else if (found)
		json_object_set_new(rep, "shape",
				    json_pack("{s:i, s:i}", "nodes", sh.nodes, "assume-data-parallelism",
					      sh.dp));
	return rep;
}

static json_t *backup_entry(struct ctx *x, const char *name, int *valid)
{
	json_t *e = mtc_lkg_backup_entry(x->store, name, x->cfg->nodes, x->cfg->workers_per_node, valid);
	if (!e)
		mtc_warn("cannot read backup '%s/%s': %s", mtc_store_url(x->store), name,
			 mtc_store_error(x->store));
	return e;
}

/* The backups the LKG may need: restore.version's, else the newest down to the first valid one. */
static int add_backups(struct ctx *x, json_t *report)
{
	struct mtc_backup_entry *list = NULL;
	json_t *arr = json_array(), *e;
	char version[256];
	size_t n = 0;
	int rc, valid;

	rc = mtc_backups_restore_version(x->store, version, sizeof version);
	if (rc < 0) {
		mtc_error("cannot read '%s/restore.version': %s", mtc_store_url(x->store),
			  mtc_store_error(x->store));
		json_decref(arr);
		return -1;
	}
	if (rc == 1) {
		json_object_set_new(report, "restore-version", json_string(version));
		mtc_info("restore.version names '%s': restoring from it only", version);
		if (mtc_parse_backup_name(version, NULL) == 0 && (e = backup_entry(x, version, &valid)))
			json_array_append_new(arr, e);
		json_object_set_new(report, "backups", arr);
		return 0;
	}
	if (mtc_backups_list(x->store, &list, &n) < 0) {
		mtc_warn("cannot list the backups in '%s': %s", mtc_store_url(x->store),
			 mtc_store_error(x->store));
		n = 0;
	}
	for (size_t i = 0, kept = 0; i < n && kept < MAX_BACKUPS_REPORTED; i++) {
		if (!(e = backup_entry(x, list[i].name, &valid)))
			continue;
		json_array_append_new(arr, e);
		kept++;
		if (valid)
			break;
	}
	mtc_backups_free_list(list, n);
	json_object_set_new(report, "backups", arr);
	return 0;
}

/* Without a coordinator: the steps this dir holds are of the job's columns. */
static int standalone_shape(struct ctx *x, json_t *report, char *err, size_t errlen)
{
	json_t *j = json_object_get(report, "shape");
	struct mtc_shape saved, now;

	if (!j)
		return 0;
	saved.nodes = (int)json_integer_value(json_object_get(j, "nodes"));
	saved.dp = (int)json_integer_value(json_object_get(j, "assume-data-parallelism"));
	mtc_shape_of_config(x->cfg, &now);
	return mtc_shape_check(&saved, &now, "this node", err, errlen);
}

static json_t *standalone_plan(struct ctx *x, json_t *report, char *err, size_t errlen)
{
	json_t *inv, *rank, *plan, *view, *v;

	inv = mtc_lkg_inventory_head(x->cfg->job_name, x->cfg->nodes, x->cfg->workers_per_node,
				     x->cfg->data_parallelism, x->cfg->peers_per_node);
	rank = json_pack("{s:i, s:O, s:O}", "node-rank", x->cfg->node_rank, "meta-files",
			 json_object_get(report, "meta-files"), "data-files",
			 json_object_get(report, "data-files"));
	if ((v = json_object_get(report, "address")))
		json_object_set(rank, "node-address", v);
	if ((v = json_object_get(json_object_get(report, "config"), "peer-ranks")) && json_is_array(v))
		json_object_set(rank, "peer-ranks", v);
	json_array_append_new(json_object_get(inv, "ranks"), rank);
	if ((v = json_object_get(report, "backups")))
		json_object_set(inv, "backups", v);
	if ((v = json_object_get(report, "restore-version")))
		json_object_set(inv, "restore-version", v);
	plan = mtc_lkg_plan(inv, err, errlen);
	json_decref(inv);
	if (!plan)
		return NULL;
	view = mtc_lkg_rank_view(plan, x->cfg->node_rank);
	if (view)
		json_object_set(view, "plan-step", json_object_get(plan, "step"));
	else
		snprintf(err, errlen, "the plan has no entry for rank %d", x->cfg->node_rank);
	json_decref(plan);
	return view;
}

/* The bytes the reference's yaml.dump writes: sorted keys, block style, {} when empty. */
static int write_prerestore(struct ctx *x, json_t *view)
{
	json_t *step = json_object_get(view, "step");
	const char *source = json_string_value(json_object_get(view, "source"));
	const char *backup = json_string_value(json_object_get(view, "backup"));
	char *path = xasprintf("%s/%s", x->o->dir, MTC_PRERESTORE_FILE), *text;
	int rc;

	if (!json_is_integer(step))
		text = xstrdup("{}\n");
	else if (source && !strcmp(source, "backup") && backup)
		text = xasprintf("restore-backup: %s\nrestore-step: %lld\n", backup,
				 (long long)json_integer_value(step));
	else
		text = xasprintf("restore-step: %lld\n", (long long)json_integer_value(step));
	rc = mtc_write_atomic(path, text, strlen(text));
	if (rc < 0)
		mtc_critical("cannot write '%s':", path);
	free(path);
	free(text);
	return rc;
}

static int has_local(const char *dir, const char *hash)
{
	char *p = xasprintf("%s/%s.data", dir, hash);
	struct stat st;
	int rc = lstat(p, &st) == 0;
	free(p);
	return rc;
}

/*
 * <name>/<hash>.data of the backups into a private staging dir, verified,
 * then published (lib/object.h). MTC_EXIT_NOTFOUND when name does not hold it.
 */
static int fetch_from_backup(struct ctx *x, struct mtc_store *store, const char *name, const char *hash,
			     char *err, size_t errlen)
{
	char *staging, *prefix = NULL, *path = NULL, *hashes[] = { (char *)hash };
	struct mtc_object_fetched got = { 0 };
	struct mtc_tmp t;
	int rc;

	if (mtc_tmp_create(x->o->dir, "restore", 1, &t) < 0) {
		snprintf(err, errlen, "cannot create a staging dir in '%s': %s", x->o->dir,
			 strerror(errno));
		return MTC_EXIT_FAILURE;
	}
	staging = t.path;
	prefix = xasprintf("%s/", name);
	rc = mtc_object_fetch(store, prefix, hashes, 1, staging, x->o->threads, 0, &got, err, errlen);
	if (rc == MTC_EXIT_OK) {
		path = xasprintf("%s/%s.data", staging, hash);
		if (mtc_object_publish(path, x->o->dir, hash, &got.manifests[0]) < 0) {
			snprintf(err, errlen, "cannot publish '%s': %s", path, strerror(errno));
			rc = MTC_EXIT_FAILURE;
		} else {
			pthread_mutex_lock(&x->mu);
			x->bytes += got.bytes;
			pthread_mutex_unlock(&x->mu);
		}
	}
	mtc_tmp_discard(&t);
	mtc_object_fetched_free(&got);
	free(prefix);
	free(path);
	return rc;
}

/*
 * One hash: the plan's peers in order, then the plan's backup, then the newest
 * backups that hold it; each copy verified before it is renamed in. store is
 * the calling worker's own handle on the backups (NULL: none).
 */
static int fetch_hash(struct ctx *x, struct mtc_store *store, json_t *f, const char *plan_backup,
		      char *err, size_t errlen)
{
	const char *hash = json_string_value(json_object_get(f, "hash"));
	json_t *peers = json_object_get(f, "peers"), *p;
	char why[1024] = "";
	size_t i;
	int rc = MTC_EXIT_NOTFOUND;

	json_array_foreach (peers, i, p) {
		struct mtc_peer_client pc = x->pc; /* within the restore's own deadline */
		double left = x->deadline - mtc_now();
		long long got = 0;
		char *name;
		if (left <= 0) {
			snprintf(err, errlen, "restore timed out while fetching '%s.data'", hash);
			return MTC_EXIT_TIMEOUT;
		}
		if (left < pc.deadline_s)
			pc.deadline_s = left;
		name = xasprintf("%s.data", hash);
		rc = mtc_peer_get(&pc, json_string_value(p), x->o->dir, name, &got, why, sizeof why);
		free(name);
		if (rc == 0) {
			mtc_info("fetched '%s.data' from %s (%lld bytes)", hash, json_string_value(p),
				 got);
			pthread_mutex_lock(&x->mu);
			x->bytes += got;
			pthread_mutex_unlock(&x->mu);
			return 0;
		}
		mtc_warn("cannot fetch '%s.data' from %s: %s; trying the next source", hash,
			 json_string_value(p), why);
	}
	if (store) {
		struct mtc_backup_entry *list = NULL;
		size_t n = 0;
		if (plan_backup) {
			rc = fetch_from_backup(x, store, plan_backup, hash, why, sizeof why);
			if (rc == 0) {
				mtc_info("fetched '%s.data' from backup '%s'", hash, plan_backup);
				return 0;
			}
			if (rc != MTC_EXIT_NOTFOUND)
				mtc_warn("%s", why);
		}
		if (mtc_backups_list(store, &list, &n) == 0)
			for (size_t b = 0; b < n && b < MAX_BACKUPS_REPORTED; b++) {
				int got;
				if (plan_backup && !strcmp(list[b].name, plan_backup))
					continue;
				got = fetch_from_backup(x, store, list[b].name, hash, why, sizeof why);
				if (got == 0) {
					mtc_info("fetched '%s.data' from backup '%s'", hash,
						 list[b].name);
					mtc_backups_free_list(list, n);
					return 0;
				}
				if (got != MTC_EXIT_NOTFOUND) {
					rc = got;
					mtc_warn("%s", why);
				}
			}
		mtc_backups_free_list(list, n);
	}
	snprintf(err, errlen, "cannot fetch '%s.data' from any source%s%s", hash, *why ? ": " : "", why);
	return rc ? rc : MTC_EXIT_NOTFOUND;
}

/* The fetches of one restore, FETCHES_IN_FLIGHT at a time; the first failure stops the rest. */
struct fetch_queue {
	struct ctx *x;
	json_t **items;
	size_t n, next;
	const char *backup;
	int rc;
	char err[1024];
};

/*
 * Every copy of f's hash failed (rc, err): with data parallelism, the
 * column's other data in the plan's order; the one fetched and verified is
 * noted in f as "used", and the node's meta and marker then name it.
 */
static int fetch_alternative(struct ctx *x, struct mtc_store *store, json_t *f, const char *plan_backup,
			     int rc, char *err, size_t errlen)
{
	const char *hash = json_string_value(json_object_get(f, "hash"));
	json_t *a;
	size_t i;

	json_array_foreach (json_object_get(f, "alternatives"), i, a) {
		const char *alt = json_string_value(json_object_get(a, "hash"));
		char why[1024];
		if (!alt || !mtc_is_hash(alt))
			continue;
		mtc_warn("%s; trying the data of a column-mate, '%s.data'", err, alt);
		if (has_local(x->o->dir, alt) ||
		    fetch_hash(x, store, a, plan_backup, why, sizeof why) == 0) {
			mtc_info("restoring '%s.data' for '%s.data' (assume-data-parallelism)", alt,
				 hash);
			pthread_mutex_lock(&x->mu);
			json_object_set_new(f, "used", json_string(alt));
			pthread_mutex_unlock(&x->mu);
			return 0;
		}
		snprintf(err, errlen, "%s", why);
	}
	return rc;
}

static struct mtc_store_options backup_store_options(const struct mtc_cluster_restore_opts *o)
{
	return (struct mtc_store_options){ .token_file = o->store_token_file,
					   .s3_endpoint = o->store_s3_endpoint,
					   .slice_threshold = o->slice_threshold,
					   .slices = o->slices };
}
static void *fetch_worker(void *arg)
{
	struct fetch_queue *q = arg;
	struct ctx *x = q->x;
	struct mtc_store *store = NULL;
	char err[1024];

	if (x->o->backup) {
		struct mtc_store_options so = backup_store_options(x->o);
		char *url = xasprintf("%s/%s", x->o->backup, x->cfg->job_name);
		if (mtc_store_open(url, &so, &store, err, sizeof err) < 0)
			mtc_warn("cannot open the backup location '%s': %s", url, err);
		free(url);
	}
	for (;;) {
		json_t *f;
		int rc;
		pthread_mutex_lock(&x->mu);
		if (q->rc || q->next == q->n) {
			pthread_mutex_unlock(&x->mu);
			break;
		}
		f = q->items[q->next++];
		pthread_mutex_unlock(&x->mu);
		if (mtc_now() > x->deadline) {
			rc = MTC_EXIT_TIMEOUT;
			snprintf(err, sizeof err, "restore timed out while fetching");
		} else if ((rc = fetch_hash(x, store, f, q->backup, err, sizeof err)) != 0) {
			rc = fetch_alternative(x, store, f, q->backup, rc, err, sizeof err);
		}
		pthread_mutex_lock(&x->mu);
		if (rc && !q->rc) {
			q->rc = rc;
			snprintf(q->err, sizeof q->err, "%s", err);
		} else if (!rc) {
			x->fetched++;
		}
		pthread_mutex_unlock(&x->mu);
	}
	mtc_store_close(store);
	return NULL;
}

static int fetch_all(struct ctx *x, json_t *view, char *err, size_t errlen)
{
	struct fetch_queue q = { .x = x, .backup = json_string_value(json_object_get(view, "backup")) };
	json_t *fetch = json_object_get(view, "fetch"), *f;
	pthread_t th[FETCHES_IN_FLIGHT];
	int started = 0;
	size_t i;

	q.items = xcalloc(json_array_size(fetch) + 1, sizeof *q.items);
	json_array_foreach (fetch, i, f) {
		const char *hash = json_string_value(json_object_get(f, "hash"));
		int seen = 0;
		if (!hash || !mtc_is_hash(hash)) {
			snprintf(err, errlen, "the plan names a bad hash");
			free(q.items);
			return MTC_EXIT_FAILURE;
		}
		for (size_t k = 0; k < q.n && !seen; k++)
			seen = !strcmp(hash, json_string_value(json_object_get(q.items[k], "hash")));
		if (!seen && !has_local(x->o->dir, hash))
			q.items[q.n++] = f;
	}
	for (size_t k = 0; k < q.n && k < FETCHES_IN_FLIGHT; k++)
		if (pthread_create(&th[started], NULL, fetch_worker, &q) == 0)
			started++;
	if (!started && q.n)
		fetch_worker(&q);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	json_array_foreach (fetch, i, f) {
		json_t *used = json_object_get(f, "used"), *m;
		size_t k;
		json_array_foreach (json_object_get(view, "metas"), k, m)
			if (used && json_equal(json_object_get(m, "hash"), json_object_get(f, "hash")))
				json_object_set(m, "hash", used);
	}
	free(q.items);
	if (q.rc)
		snprintf(err, errlen, "%s", q.err);
	return q.rc;
}

static int write_metas(struct ctx *x, long long step, json_t *metas, char *err, size_t errlen)
{
	json_t *m;
	size_t i;

	json_array_foreach (metas, i, m) {
		const char *hash = json_string_value(json_object_get(m, "hash"));
		int w = (int)json_integer_value(json_object_get(m, "worker"));
		char *name = mtc_ckpt_name(x->cfg->job_name, step, x->cfg->node_rank, w, MTC_EXT_META);
		char *path = xasprintf("%s/%s", x->o->dir, name), old[MTC_HASH_MAX + 1];
		int rc = 0;
		if (!hash || !has_local(x->o->dir, hash)) {
			snprintf(err, errlen, "'%s': its data '%s.data' is not here", name,
				 hash ? hash : "?");
			rc = -1;
		} else if (mtc_read_meta(path, old) < 0 || strcmp(old, hash)) {
			if ((rc = mtc_write_atomic(path, hash, strlen(hash))) < 0)
				snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
		}
		free(name);
		free(path);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Symlinks <job>-s<S>-n<rank>-w<w>.restore -> <hash>.data, or empty s0 files; each by rename. */
static int write_markers(struct ctx *x, long long step, json_t *metas)
{
	int workers = x->cfg->workers_per_node;

	for (int w = 0; w < workers; w++) {
		const char *hash = NULL;
		json_t *m;
		size_t i;
		char *name, *path, *tmp, *target;
		struct mtc_tmp t;
		int rc;

		json_array_foreach (metas, i, m)
			if (json_integer_value(json_object_get(m, "worker")) == w)
				hash = json_string_value(json_object_get(m, "hash"));
		name = mtc_ckpt_name(x->cfg->job_name, step >= 0 && hash ? step : 0, x->cfg->node_rank,
				     w, MTC_EXT_RESTORE);
		path = xasprintf("%s/%s", x->o->dir, name);
		if (step < 0 || !hash) {
			rc = mtc_write_atomic(path, "", 0);
		} else {
			/* a symlink holds no lock: it is made in a locked temporary directory */
			rc = mtc_tmp_create(x->o->dir, name, 1, &t);
			tmp = rc == 0 ? xasprintf("%s/marker", t.path) : NULL;
			target = xasprintf("%s.data", hash);
			if (rc == 0)
				rc = symlink(target, tmp) < 0 || rename(tmp, path) < 0 ? -1 : 0;
			if (t.path)
				mtc_tmp_discard(&t);
			free(tmp);
			free(target);
		}
		if (rc < 0) {
			mtc_critical("cannot create the restore marker '%s':", path);
			free(name);
			free(path);
			return -1;
		}
		free(name);
		free(path);
	}
	return mtc_fsync_dir(x->o->dir);
}

static void write_pinned(struct ctx *x, const char *version, json_t *step)
{
	char *path = xasprintf("%s/%s", x->o->dir, MTC_PINNED_FILE);
	json_t *j = json_pack("{s:s, s:I}", "backup", version, "step",
			      (json_int_t)(json_is_integer(step) ? json_integer_value(step) : -1));
	char *text = json_dumps(j, JSON_COMPACT);
	if (mtc_write_atomic(path, text, strlen(text)) < 0)
		mtc_warn("cannot write '%s':", path);
	free(text);
	json_decref(j);
	free(path);
}

static int open_backup(struct ctx *x)
{
	struct mtc_store_options so = backup_store_options(x->o);
	char err[512], *url;
	int rc;

	if (!x->o->backup)
		return 0;
	url = xasprintf("%s/%s", x->o->backup, x->cfg->job_name);
	rc = mtc_store_open(url, &so, &x->store, err, sizeof err);
	if (rc < 0)
		mtc_critical("cannot open the backup location '%s': %s", url, err);
	free(url);
	return rc;
}

static int restore(struct ctx *x, json_t **summary, struct mtc_coord_client *cc)
{
	const struct mtc_cluster_restore_opts *o = x->o;
	json_t *report = NULL, *view = NULL, *step, *done = NULL, *v, *w;
	char err[1024] = "";
	long long s = -1;
	int rc = MTC_EXIT_FAILURE, own_rc = 0;
	double t0 = mtc_now();
	const char *source;
	size_t i;

	if (!(report = local_inventory(x)))
		return MTC_EXIT_FAILURE;
	json_object_set_new(report, "config", mtc_config_to_json(x->cfg));
	if (o->address)
		json_object_set_new(report, "address", json_string(o->address));
	if (x->store && (x->cfg->node_rank == 0 || !cc) && add_backups(x, report) < 0)
		goto out;
	if (cc) {
		rc = mtc_coord_call(cc, "restore", report, x->deadline, &view, err, sizeof err);
		if (rc) {
			mtc_critical("restore failed: %s", err);
			goto out;
		}
	} else if (standalone_shape(x, report, err, sizeof err) < 0) {
		mtc_critical("restore failed: %s", err);
		rc = MTC_EXIT_FAILURE;
		goto out;
	} else if (!(view = standalone_plan(x, report, err, sizeof err))) {
		mtc_critical("cannot compute the restore plan: %s", err);
		rc = MTC_EXIT_FAILURE;
		goto out;
	} else {
		struct mtc_shape now;
		mtc_shape_of_config(x->cfg, &now);
		if (mtc_shape_check_backup(view, json_object_get(report, "backups"), &now, err,
					   sizeof err) < 0) {
			mtc_critical("restore failed: %s", err);
			rc = MTC_EXIT_FAILURE;
			goto out;
		}
	}
	json_array_foreach (json_object_get(view, "errors"), i, v)
		mtc_error("restore plan: %s", json_string_value(v));
	json_array_foreach (json_object_get(view, "metas"), i, v)
		if ((w = json_object_get(v, "substituted-from"))) {
			char mate[64];
			if (json_is_string(w))
				snprintf(mate, sizeof mate, "%s", json_string_value(w));
			else
				snprintf(mate, sizeof mate, "rank %lld",
					 (long long)json_integer_value(w));
			mtc_info("worker %lld: its own data exists nowhere; restoring column-mate %s's "
				 "data '%s.data' (assume-data-parallelism)",
				 (long long)json_integer_value(json_object_get(v, "worker")), mate,
				 json_string_value(json_object_get(v, "hash")));
		}
	step = json_object_get(view, "step");
	source = json_string_value(json_object_get(view, "source")) ?: "none";
	if (json_is_integer(step))
		s = json_integer_value(step);
	if (s < 0)
		mtc_info("nothing to restore: %s",
			 json_string_value(json_object_get(view, "reason")) ?: "no valid step");
	else
		mtc_info("restoring step %lld from %s%s%s", s, source,
			 json_object_get(view, "backup") ? " " : "",
			 json_string_value(json_object_get(view, "backup")) ?: "");
	if (write_prerestore(x, view) < 0)
		goto out;
	mtc_fault_stall("after-plan", NULL);
	if (s >= 0) {
		own_rc = fetch_all(x, view, err, sizeof err);
		if (!own_rc && write_metas(x, s, json_object_get(view, "metas"), err, sizeof err) < 0)
			own_rc = MTC_EXIT_FAILURE;
		if (own_rc)
			mtc_error("rank %d cannot restore step %lld: %s", x->cfg->node_rank, s, err);
	}
	if (cc) {
		json_t *d = json_pack("{s:b}", "ok", own_rc == 0);
		if (own_rc)
			json_object_set_new(d, "error", json_string(err));
		rc = mtc_coord_call(cc, "restore-done", d, x->deadline, &done, err, sizeof err);
		json_decref(d);
		if (rc) {
			mtc_critical("restore failed: %s", err);
			goto out;
		}
		if (!json_is_true(json_object_get(done, "ok"))) {
			mtc_critical("restore failed: %s",
				     json_string_value(json_object_get(done, "error"))
					     ?: "a rank failed");
			rc = own_rc ? own_rc : MTC_EXIT_FAILURE;
			goto out;
		}
	} else if (own_rc) {
		mtc_critical("restore failed: %s", err);
		rc = own_rc;
		goto out;
	}
	if (s >= 0) {
		/* every node's .meta of the step stays, so that a second restore survives what this one did */
		struct mtc_gc_opts g = {
			o->dir, x->cfg, &s, 1, 0, mtc_config_replicas(x->cfg) > 1, 0, 0
		};
		struct mtc_gc_stats st;
		if (mtc_gc(&g, &st) < 0)
			mtc_warn("local gc after the restore failed");
	}
	if ((v = json_object_get(report, "restore-version")) ||
	    (v = json_object_get(view, "restore-version")))
		if (json_is_string(v))
			write_pinned(x, json_string_value(v), step);
	if (write_markers(x, s, json_object_get(view, "metas")) < 0) {
		rc = MTC_EXIT_FAILURE;
		goto out;
	}
	rc = s >= 0 ? MTC_EXIT_OK : MTC_EXIT_NOTFOUND;
	/* the steps saved from now on are of this job's shape */
	if (mtc_shape_write(o->dir, x->cfg, err, sizeof err) < 0)
		mtc_warn("%s", err);
	if (summary) {
		*summary = json_pack("{s:o, s:s, s:i, s:I, s:o}", "step",
				     s >= 0 ? json_integer(s) : json_null(), "source", source, "fetched",
				     x->fetched, "bytes", (json_int_t)x->bytes, "seconds",
				     mtc_json_seconds(mtc_now() - t0));
		if ((v = json_object_get(view, "backup")))
			json_object_set(*summary, "backup", v);
	}
out:
	json_decref(report);
	json_decref(view);
	json_decref(done);
	return rc;
}

int mtc_cluster_restore(const struct mtc_cluster_restore_opts *o, json_t **summary)
{
	struct ctx x = { .o = o, .cfg = o->cfg, .mu = PTHREAD_MUTEX_INITIALIZER };
	struct mtc_coord_client cc;
	int rc, coordinated = o->coordinator && o->cfg->nodes > 1;
	char *token = mtc_peer_token_for(o->token, o->cfg->job_name, o->cfg->node_rank);

	if (summary)
		*summary = NULL;
	signal(SIGPIPE, SIG_IGN);
	x.deadline = mtc_now() + (o->timeout_s > 0 ? o->timeout_s : 600);
	mtc_peer_client_defaults(&x.pc);
	x.pc.token = token;
	x.pc.deadline_s = 600;
	x.pc.retries = 2;
	if (open_backup(&x) < 0) {
		free(token);
		return MTC_EXIT_FAILURE;
	}
	if (coordinated) {
		mtc_coord_client_init(&cc, o->coordinator, token, o->cfg->node_rank);
		mtc_coord_client_heartbeat(&cc, o->heartbeat_s > 0 ? o->heartbeat_s : 5);
	}
	rc = restore(&x, summary, coordinated ? &cc : NULL);
	if (coordinated)
		mtc_coord_client_close(&cc);
	mtc_store_close(x.store);
	free(token);
	return rc;
}
