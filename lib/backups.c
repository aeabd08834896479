/*
 * A job's backup root: listing, restore.version, validity and deletion.
 * Invariant (deletion): node 0 worker 0's .meta first, then the other .meta,
 * then data, so an interrupted deletion leaves a backup that is incomplete,
 * never one that reads as valid with part of its data gone.
 */
#include "backups.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define META_MAX 256
#define DELETE_THREADS 16

const char *mtc_backup_state_name(enum mtc_backup_state st)
{
	switch (st) {
	case MTC_BACKUP_VALID: return "valid";
	case MTC_BACKUP_INCOMPLETE: return "incomplete";
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

static int data_present(const struct mtc_store_list *l, const char *name, const char *hash)
{
	char *key = xasprintf("%s/%s.data", name, hash);
	char *dir = xasprintf("%s/%s.data/", name, hash);
	int found = 0;

	for (size_t i = 0; !found && i < l->n_objects; i++)
		found = !strcmp(l->objects[i].name, key) || !strcmp(l->objects[i].name, dir);
	for (size_t i = 0; !found && i < l->n_prefixes; i++)
		found = !strcmp(l->prefixes[i], dir);
	free(key);
	free(dir);
	return found;
}

static void read_meta(struct mtc_store *s, const char *key, char *hash)
{
	char *text;
	size_t n;

	hash[0] = '\0';
	if (mtc_store_get_buf(s, key, META_MAX, &text, &n) < 0)
		return;
	trim(text);
	if (mtc_is_hash(text))
		snprintf(hash, MTC_HASH_MAX + 1, "%s", text);
	free(text);
}

static void judge(struct mtc_backup_info *info, int nodes, int workers)
{
	int max_rank = -1, max_worker = -1;
	char *seen;

	for (size_t i = 0; i < info->n_metas; i++) {
		if (info->metas[i].rank > max_rank)
			max_rank = info->metas[i].rank;
		if (info->metas[i].worker > max_worker)
			max_worker = info->metas[i].worker;
	}
	info->nodes = nodes > 0 ? nodes : max_rank + 1;
	info->workers = workers > 0 ? workers : max_worker + 1;
	if (max_rank >= info->nodes || max_worker >= info->workers) {
		snprintf(info->reason, sizeof info->reason, "a .meta of rank %d worker %d is out of range",
			 max_rank, max_worker);
		info->state = MTC_BACKUP_INCOMPLETE;
		return;
	}
	seen = xcalloc((size_t)info->nodes * (size_t)info->workers, 1);
	for (size_t i = 0; i < info->n_metas; i++) {
		const struct mtc_backup_meta *m = &info->metas[i];
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
	for (size_t i = 0; i < l.n_objects; i++) {
		struct mtc_backup_meta *m = &out->metas[out->n_metas];
		if (mtc_parse_ckpt_name(base_name(l.objects[i].name), &cn) || cn.ext != MTC_EXT_META ||
		    cn.step != out->step || strcmp(cn.job, out->job))
			continue;
		m->rank = cn.rank;
		m->worker = cn.worker;
		m->step = cn.step;
		read_meta(s, l.objects[i].name, m->hash);
		m->has_data = m->hash[0] && data_present(&l, name, m->hash);
		out->n_metas++;
	}
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

struct delete_pool {
	struct mtc_store *s;
	char **keys;
	size_t n, next;
	int failed;
	pthread_mutex_t lock;
};

static void *delete_worker(void *arg)
{
	struct delete_pool *p = arg;
	for (;;) {
		size_t i;
		pthread_mutex_lock(&p->lock);
		i = p->failed ? p->n : p->next++;
		pthread_mutex_unlock(&p->lock);
		if (i >= p->n)
			return NULL;
		if (mtc_store_delete(p->s, p->keys[i]) < 0 && errno != ENOENT) {
			pthread_mutex_lock(&p->lock);
			p->failed = errno ? errno : EIO;
			pthread_mutex_unlock(&p->lock);
		}
	}
}

static int delete_parallel(struct mtc_store *s, char **keys, size_t n)
{
	struct delete_pool p = { .s = s, .keys = keys, .n = n };
	pthread_t t[DELETE_THREADS];
	size_t started = 0;

	pthread_mutex_init(&p.lock, NULL);
	for (size_t i = 1; i < DELETE_THREADS && i < n; i++)
		if (pthread_create(&t[started], NULL, delete_worker, &p) == 0)
			started++;
	delete_worker(&p);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&p.lock);
	if (p.failed)
		errno = p.failed;
	return p.failed ? -1 : 0;
}

int mtc_backup_delete(struct mtc_store *s, const char *name)
{
	struct mtc_store_list l = { 0 };
	char *prefix = xasprintf("%s/", name);
	struct mtc_ckpt_name cn;
	char **first, **rest;
	size_t n_first = 0, n_rest = 0;
	int rc = mtc_store_list(s, prefix, "/", &l);

	first = xcalloc(l.n_objects + 1, sizeof *first);
	rest = xcalloc(l.n_objects + 1, sizeof *rest);
	for (size_t i = 0; rc == 0 && i < l.n_objects; i++) {
		if (mtc_parse_ckpt_name(base_name(l.objects[i].name), &cn) || cn.ext != MTC_EXT_META)
			continue;
		if (cn.rank == 0 && cn.worker == 0)
			first[n_first++] = l.objects[i].name;
		else
			rest[n_rest++] = l.objects[i].name;
	}
	if (rc == 0)
		rc = delete_parallel(s, first, n_first);
	if (rc == 0)
		rc = delete_parallel(s, rest, n_rest);
	if (rc == 0)
		rc = mtc_store_delete_prefix(s, prefix);
	free(first);
	free(rest);
	mtc_store_list_free(&l);
	free(prefix);
	return rc;
}
