#ifndef MTC_STORE_IMPL_H
#define MTC_STORE_IMPL_H

/* What a backend provides to store.c; not for programs. */

#include <pthread.h>

#include "store.h"

struct mtc_store_ops {
	int (*put_file)(struct mtc_store *s, const char *key, const char *path, int flags);
	int (*put_buf)(struct mtc_store *s, const char *key, const void *buf, size_t len, int flags);
	int (*put_many)(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags);
	int (*get_file)(struct mtc_store *s, const char *key, const char *path);
	int (*get_buf)(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len);
	int (*get_range)(struct mtc_store *s, const char *key, long long off, void *buf, size_t len);
	int (*get_many)(struct mtc_store *s, struct mtc_store_xfer *x, size_t n);
	int (*list)(struct mtc_store *s, const char *prefix, const char *delim,
		    struct mtc_store_list *out);
	int (*stat)(struct mtc_store *s, const char *key, struct mtc_store_object *out);
	int (*del)(struct mtc_store *s, const char *key);
	int (*delete_prefix)(struct mtc_store *s, const char *prefix);
	long (*leftovers)(struct mtc_store *s, const char *prefix, int remove, mtc_store_leftover_fn *fn,
			  void *arg);
	void (*close)(struct mtc_store *s);
};

struct mtc_store {
	const struct mtc_store_ops *ops;
	char *url;
	int remote;
	struct mtc_store_options opt;
	char err[1024];
	pthread_mutex_t lock; /* guards err and the progress counters */
	mtc_store_progress_fn progress;
	void *progress_arg;
	long long progress_done, progress_total;
	void *impl;
};

/* Records the reason for a failure; keeps errno. */
void mtc_store_set_error(struct mtc_store *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mtc_store_progress_add(struct mtc_store *s, long long bytes);

/* Runs fn over x[0..n) on up to s->opt.parallel threads; -1 if any failed. */
int mtc_store_run_parallel(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags,
			   int (*fn)(struct mtc_store *s, struct mtc_store_xfer *x, int flags));

void mtc_store_list_add_object(struct mtc_store_list *l, const char *name, long long size,
			       long long generation);
void mtc_store_list_add_prefix(struct mtc_store_list *l, const char *prefix);
void mtc_store_list_sort(struct mtc_store_list *l);

/* 1 when s ends in suffix (a key's ".meta", a prefix's "/"). */
int mtc_store_ends_with(const char *s, const char *suffix);

#endif
