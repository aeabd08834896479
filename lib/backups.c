/*
 * A job's backup root: listing, restore.version, validity and deletion.
 * Invariant (deletion): node 0 worker 0's .meta first, then the other .meta,
 * then data, so an interrupted deletion leaves a backup that is incomplete,
 * never one that reads as valid with part of its data gone.
 */
#include "backups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "shape.h"
#include "tmpname.h"
#include "xalloc.h"

#define META_MAX 256

const char *mtc_backup_state_name(enum mtc_backup_state st)
{
	switch (st) {
	case MTC_BACKUP_VALID: return "valid";
	case MTC_BACKUP_INCOMPLETE: return "incomplete";
	case MTC_BACKUP_DAMAGED: return "damaged";
	default: return "empty";
	}
}

static char *strip_slash(const char *prefix)
{
	size_t n = strlen(prefix);
	if (n && prefix[n - 1] == '/')
		n--;
	return xasprintf("%.*s", (int)n, prefix);
}

int mtc_backups_list_dirs(struct mtc_store *s, char ***names, size_t *n)
{
	struct mtc_store_list l = { 0 };

	*names = NULL;
	*n = 0;
	if (mtc_store_list(s, "", "/", &l) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	*names = xcalloc(l.n_prefixes + 1, sizeof **names);
	for (size_t i = 0; i < l.n_prefixes; i++)
		(*names)[(*n)++] = strip_slash(l.prefixes[i]);
	mtc_store_list_free(&l);
	return 0;
}

void mtc_backups_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int newest_first(const void *a, const void *b)
{
	const struct mtc_backup_entry *x = a, *y = b;
	if (x->when != y->when)
		return x->when > y->when ? -1 : 1;
	return strcmp(y->name, x->name);
}

int mtc_backups_list(struct mtc_store *s, struct mtc_backup_entry **out, size_t *n)
{
	char **names;
	size_t count;

	*out = NULL;
	*n = 0;
	if (mtc_backups_list_dirs(s, &names, &count) < 0)
		return -1;
	*out = xcalloc(count + 1, sizeof **out);
	for (size_t i = 0; i < count; i++) {
		time_t when;
		if (mtc_parse_backup_name(names[i], &when) == 0) {
			(*out)[*n].name = names[i];
			(*out)[(*n)++].when = when;
			names[i] = NULL;
		}
	}
	mtc_backups_free_names(names, count);
	qsort(*out, *n, sizeof **out, newest_first);
	return 0;
}

void mtc_backups_free_list(struct mtc_backup_entry *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].name);
	free(l);
}

static void trim(char *s)
{
	size_t n = strlen(s), i = 0;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
		i++;
	memmove(s, s + i, n - i + 1);
}

int mtc_backups_restore_version(struct mtc_store *s, char *buf, size_t len)
{
	char *text;
	size_t n;

	if (mtc_store_get_buf(s, "restore.version", 4096, &text, &n) < 0)
		return errno == ENOENT ? 0 : -1;
	trim(text);
	snprintf(buf, len, "%s", text);
	free(text);
	return 1;
}

static int by_rank_worker(const void *a, const void *b)
{
	const struct mtc_backup_meta *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->worker < y->worker ? -1 : x->worker > y->worker;
}

static const char *base_name(const char *key)
{
	const char *slash = strrchr(key, '/');
	return slash ? slash + 1 : key;
}

static int cmp_prefix(const void *key, const void *prefix)
{
	return strcmp(key, *(char *const *)prefix);
}

/* The listing is sorted (lib/store.h), so each lookup is a binary search. */
static int data_present(const struct mtc_store_list *l, const char *name, const char *hash)
{
	char *key = xasprintf("%s/%s.data", name, hash);
	char *dir = xasprintf("%s/%s.data/", name, hash);
	int found = mtc_store_list_find(l, key) || mtc_store_list_find(l, dir) ||
		    (l->n_prefixes &&
		     bsearch(dir, l->prefixes, l->n_prefixes, sizeof *l->prefixes, cmp_prefix));

	free(key);
	free(dir);
	return found;
}

static void hash_of(char *text, char *hash)
{
	hash[0] = '\0';
	trim(text);
	if (mtc_is_hash(text))
		snprintf(hash, MTC_HASH_MAX + 1, "%s", text);
}

static int read_meta(struct mtc_store *s, const char *key, char *hash)
{
	char *text;
	size_t n;

	hash[0] = '\0';
	if (mtc_store_get_buf(s, key, META_MAX, &text, &n) < 0)
		return errno == ENOENT || errno == EFBIG ? 0 : -1;
	hash_of(text, hash);
	free(text);
	return 0;
}

static int read_metas_directly(struct mtc_store *s, char **keys, struct mtc_backup_meta *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (keys[i] && read_meta(s, keys[i], m[i].hash) < 0)
			return -1;
	return 0;
}

/*
 * The hash of every .meta (keys[i] NULL: too big to be one); on gs:// fetched
 * in parallel through a private temporary directory (tmpname.h), on a directory read in
 * place. A .meta that is gone or holds no hash reads as "".
 */
static int read_metas(struct mtc_store *s, char **keys, struct mtc_backup_meta *m, size_t n)
{
	struct mtc_tmp t;
	struct mtc_store_xfer *x;
	size_t *of, k = 0;
	int failed = 0;
	char *dir;

	if (n < 2 || !mtc_store_is_remote(s) || mtc_tmp_private_dir("meta", &t) < 0)
		return read_metas_directly(s, keys, m, n);
	dir = t.path;
	x = xcalloc(n, sizeof *x);
	of = xcalloc(n, sizeof *of);
	for (size_t i = 0; i < n; i++)
		if (keys[i]) {
			of[k] = i;
			x[k].key = keys[i];
			x[k++].path = xasprintf("%s/%zu", dir, i);
		}
	if (mtc_store_get_many(s, x, k) < 0)
		for (size_t j = 0; j < k && !failed; j++)
			if (x[j].err && x[j].err != ENOENT)
				failed = x[j].err;
	for (size_t j = 0; j < k && !failed; j++) {
		char *text;
		size_t len;
		if (x[j].err)
			continue;
		if (mtc_read_file(x[j].path, META_MAX, &text, &len) < 0) {
			if (errno != EFBIG)
				failed = errno;
			continue;
		}
		hash_of(text, m[of[j]].hash);
		free(text);
	}
	for (size_t j = 0; j < k; j++)
		free((char *)x[j].path);
	free(x);
	free(of);
	mtc_tmp_discard(&t);
	errno = failed;
	return failed ? -1 : 0;
}

/* The job's shape the backup's writers left in NAME/shape.json, when they did. */
static void read_shape(struct mtc_store *s, const char *name, const struct mtc_store_list *l,
		       struct mtc_backup_info *info)
{
	char *key = xasprintf("%s/%s", name, MTC_BACKUP_SHAPE), *text = NULL;
	struct mtc_shape sh;
	size_t len;

	if (mtc_store_list_find(l, key) && mtc_store_get_buf(s, key, 4096, &text, &len) == 0 &&
	    mtc_shape_parse(text, &sh) == 0) {
		info->shape_nodes = sh.nodes;
		info->shape_dp = sh.dp;
	}
	free(text);
	free(key);
}

/* With nodes given, the metas of ranks >= nodes are a bigger run's (a shrink): not judged. */
static void judge(struct mtc_backup_info *info, int nodes, int workers)
{
	int max_rank = -1, max_worker = -1;
	char *seen;

	for (size_t i = 0; i < info->n_metas; i++) {
		if (nodes > 0 && info->metas[i].rank >= nodes)
			continue;
		if (info->metas[i].rank > max_rank)
			max_rank = info->metas[i].rank;
		if (info->metas[i].worker > max_worker)
			max_worker = info->metas[i].worker;
	}
	info->nodes = nodes > 0 ? nodes : max_rank + 1;
	info->workers = workers > 0 ? workers : max_worker + 1;
	if (max_rank >= info->nodes || max_worker >= info->workers) {
		snprintf(info->reason, sizeof info->reason,
			 "a .meta of rank %d worker %d is out of range", max_rank, max_worker);
		info->state = MTC_BACKUP_INCOMPLETE;
		return;
	}
	seen = xcalloc((size_t)info->nodes * (size_t)info->workers, 1);
	for (size_t i = 0; i < info->n_metas; i++) {
		const struct mtc_backup_meta *m = &info->metas[i];
		if (m->rank >= info->nodes)
			continue;
		if (m->hash[0] && m->has_data)
			seen[(size_t)m->rank * (size_t)info->workers + (size_t)m->worker] = 1;
		else if (!info->reason[0])
			snprintf(info->reason, sizeof info->reason,
				 m->hash[0] ? "node %d worker %d: '%s.data' is missing"
					    : "node %d worker %d: the .meta holds no hash%s",
				 m->rank, m->worker, m->hash);
	}
	for (int r = 0; r < info->nodes && !info->reason[0]; r++)
		for (int w = 0; w < info->workers && !info->reason[0]; w++)
			if (!seen[(size_t)r * (size_t)info->workers + (size_t)w])
				snprintf(info->reason, sizeof info->reason,
					 "node %d worker %d has no .meta", r, w);
	free(seen);
	info->state = info->reason[0] ? MTC_BACKUP_INCOMPLETE : MTC_BACKUP_VALID;
}

int mtc_backup_inspect(struct mtc_store *s, const char *name, int nodes, int workers,
		       struct mtc_backup_info *out)
{
	struct mtc_store_list l = { 0 };
	char *prefix = xasprintf("%s/", name);
	struct mtc_ckpt_name cn;
	char **keys;
	int rc;

	memset(out, 0, sizeof *out);
	out->name = xstrdup(name);
	out->step = -1;
	if (mtc_store_list(s, prefix, "/", &l) < 0) {
		free(prefix);
		mtc_store_list_free(&l);
		return -1;
	}
	free(prefix);
	for (size_t i = 0; i < l.n_objects; i++)
		if (mtc_parse_ckpt_name(base_name(l.objects[i].name), &cn) == 0 &&
		    cn.ext == MTC_EXT_META && cn.step > out->step) {
			out->step = cn.step;
			snprintf(out->job, sizeof out->job, "%s", cn.job);
		}
	out->metas = xcalloc(l.n_objects + 1, sizeof *out->metas);
	keys = xcalloc(l.n_objects + 1, sizeof *keys);
	for (size_t i = 0; i < l.n_objects; i++) {
		struct mtc_backup_meta *m = &out->metas[out->n_metas];
		if (mtc_parse_ckpt_name(base_name(l.objects[i].name), &cn) || cn.ext != MTC_EXT_META ||
		    cn.step != out->step || strcmp(cn.job, out->job))
			continue;
		m->rank = cn.rank;
		m->worker = cn.worker;
		m->step = cn.step;
		keys[out->n_metas++] = l.objects[i].size <= META_MAX ? l.objects[i].name : NULL;
	}
	rc = read_metas(s, keys, out->metas, out->n_metas);
	free(keys);
	if (rc < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	for (size_t i = 0; i < out->n_metas; i++)
		out->metas[i].has_data = out->metas[i].hash[0] &&
					 data_present(&l, name, out->metas[i].hash);
	read_shape(s, name, &l, out);
	qsort(out->metas, out->n_metas, sizeof *out->metas, by_rank_worker);
	mtc_store_list_free(&l);
	if (!out->n_metas) {
		out->state = MTC_BACKUP_EMPTY;
		snprintf(out->reason, sizeof out->reason, "no .meta");
		return 0;
	}
	judge(out, nodes, workers);
	return 0;
}

void mtc_backup_info_free(struct mtc_backup_info *info)
{
	free(info->name);
	free(info->metas);
	memset(info, 0, sizeof *info);
}

int mtc_backup_has_meta(struct mtc_store *s, const char *name)
{
	struct mtc_store_list l = { 0 };
	char *prefix = xasprintf("%s/", name);
	struct mtc_ckpt_name cn;
	int found = 0;

	if (mtc_store_list(s, prefix, "/", &l) == 0)
		for (size_t i = 0; !found && i < l.n_objects; i++)
			found = mtc_parse_ckpt_name(base_name(l.objects[i].name), &cn) == 0 &&
				cn.ext == MTC_EXT_META;
	else
		found = -1;
	mtc_store_list_free(&l);
	free(prefix);
	return found;
}

int mtc_backup_delete(struct mtc_store *s, const char *name)
{
	struct mtc_store_list l = { 0 };
	char *prefix = xasprintf("%s/", name);
	struct mtc_ckpt_name cn;
	int rc = mtc_store_list(s, prefix, "/", &l);

	for (size_t i = 0; rc == 0 && i < l.n_objects; i++)
		if (mtc_parse_ckpt_name(base_name(l.objects[i].name), &cn) == 0 &&
		    cn.ext == MTC_EXT_META && cn.rank == 0 && cn.worker == 0 &&
		    mtc_store_delete(s, l.objects[i].name) < 0 && errno != ENOENT)
			rc = -1;
	if (rc == 0)
		rc = mtc_store_delete_prefix(s, prefix);
	mtc_store_list_free(&l);
	free(prefix);
	return rc;
}
