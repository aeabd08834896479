/* What every backend shares (store_impl.h): the error, progress, listings, parallel runs. */
#include "store_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"
#include "xalloc.h"

void mtc_store_set_error(struct mtc_store *s, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	pthread_mutex_lock(&s->lock);
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&s->lock);
	errno = e;
}

void mtc_store_progress_add(struct mtc_store *s, long long bytes)
{
	if (!s->progress || !bytes)
		return;
	pthread_mutex_lock(&s->lock);
	s->progress_done += bytes;
	s->progress(s->progress_arg, s->progress_done, s->progress_total);
	pthread_mutex_unlock(&s->lock);
}

static int cmp_object_name(const void *key, const void *obj)
{
	return strcmp(key, ((const struct mtc_store_object *)obj)->name);
}

const struct mtc_store_object *mtc_store_list_find(const struct mtc_store_list *l, const char *name)
{
	return l->n_objects
		       ? bsearch(name, l->objects, l->n_objects, sizeof *l->objects, cmp_object_name)
		       : NULL;
}

void mtc_store_list_free(struct mtc_store_list *l)
{
	for (size_t i = 0; i < l->n_objects; i++)
		free(l->objects[i].name);
	for (size_t i = 0; i < l->n_prefixes; i++)
		free(l->prefixes[i]);
	free(l->objects);
	free(l->prefixes);
	memset(l, 0, sizeof *l);
}

void mtc_store_list_add_object(struct mtc_store_list *l, const char *name, long long size,
			       long long generation)
{
	if ((l->n_objects & (l->n_objects - 1)) == 0)
		l->objects = xrealloc(l->objects,
				      (l->n_objects ? 2 * l->n_objects : 1) * sizeof *l->objects);
	l->objects[l->n_objects++] = (struct mtc_store_object){ xstrdup(name), size, generation, 0 };
}

void mtc_store_list_add_prefix(struct mtc_store_list *l, const char *prefix)
{
	if (l->n_prefixes && !strcmp(l->prefixes[l->n_prefixes - 1], prefix))
		return;
	if ((l->n_prefixes & (l->n_prefixes - 1)) == 0)
		l->prefixes = xrealloc(l->prefixes,
				       (l->n_prefixes ? 2 * l->n_prefixes : 1) * sizeof *l->prefixes);
	l->prefixes[l->n_prefixes++] = xstrdup(prefix);
}

static int cmp_object(const void *a, const void *b)
{
	return strcmp(((const struct mtc_store_object *)a)->name,
		      ((const struct mtc_store_object *)b)->name);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void mtc_store_list_sort(struct mtc_store_list *l)
{
	size_t j = 0;

	if (l->n_objects)
		qsort(l->objects, l->n_objects, sizeof *l->objects, cmp_object);
	if (!l->n_prefixes)
		return;
	qsort(l->prefixes, l->n_prefixes, sizeof *l->prefixes, cmp_str);
	for (size_t i = 1; i < l->n_prefixes; i++) {
		if (!strcmp(l->prefixes[i], l->prefixes[j]))
			free(l->prefixes[i]);
		else
			l->prefixes[++j] = l->prefixes[i];
	}
	l->n_prefixes = j + 1;
}

struct pool {
	struct mtc_store *s;
	struct mtc_store_xfer *x;
	size_t n, next;
	int flags, failed, first_errno;
	int (*fn)(struct mtc_store *, struct mtc_store_xfer *, int);
	pthread_mutex_t lock;
};

static void *pool_worker(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		size_t i;
		pthread_mutex_lock(&p->lock);
		i = p->next++;
		pthread_mutex_unlock(&p->lock);
		if (i >= p->n)
			return NULL;
		if (p->fn(p->s, &p->x[i], p->flags) < 0) {
			p->x[i].err = errno ? errno : EIO;
			pthread_mutex_lock(&p->lock);
			if (!p->failed++)
				p->first_errno = p->x[i].err;
			pthread_mutex_unlock(&p->lock);
		}
	}
}

int mtc_store_run_parallel(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags,
			   int (*fn)(struct mtc_store *s, struct mtc_store_xfer *x, int flags))
{
	struct pool p = { .s = s, .x = x, .n = n, .flags = flags, .fn = fn };
	size_t nthreads = (size_t)s->opt.parallel < n ? (size_t)s->opt.parallel : n;

	if (n == 0)
		return 0;
	pthread_mutex_init(&p.lock, NULL);
	mtc_run_threads(nthreads, pool_worker, &p);
	pthread_mutex_destroy(&p.lock);
	if (p.failed) {
		errno = p.first_errno;
		return -1;
	}
	return 0;
}

int mtc_store_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}
