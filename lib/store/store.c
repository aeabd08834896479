#include "store.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends.h"
#include "store_impl.h"
#include "xalloc.h"

int mtc_store_valid_key(const char *key)
{
	const char *p = key, *end;

	if (!key || !*key || *key == '/')
		return 0;
	for (;;) {
		end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0)
			return !end && p != key; /* only a trailing '/' may end a component list */
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return 0;
		if (!end)
			return 1;
		p = end + 1;
		if (!*p)
			return 1;
	}
}

const char *mtc_store_error(const struct mtc_store *s) { return s->err[0] ? s->err : "unknown error"; }

void mtc_store_set_progress(struct mtc_store *s, mtc_store_progress_fn fn, void *arg)
{
	s->progress = fn;
	s->progress_arg = arg;
}

static int set_open_error(char *err, size_t errlen, int e, const char *fmt, const char *arg)
{
	snprintf(err, errlen, fmt, arg);
	errno = e;
	return -1;
}

int mtc_store_misspelt_url(const char *url, char *err, size_t errlen)
{
	static const char *const schemes[] = { "gs", "s3", "file" };
	for (size_t i = 0; i < sizeof schemes / sizeof *schemes; i++) {
		size_t n = strlen(schemes[i]);
		if (strncasecmp(url, schemes[i], n) || url[n] != ':')
			continue;
		int exact = !strncmp(url, schemes[i], n) && !strncmp(url + n, "://", 3);
		if (exact && (i == 2 || (url[n + 3] && url[n + 3] != '/')))
			return 0;
		snprintf(err, errlen, "%s: write %s://%s",
			 exact ? "a URL without a bucket" : "not a URL", schemes[i],
			 i < 2 ? "BUCKET[/PREFIX]" : "DIR");
		errno = EINVAL;
		return 1;
	}
	return 0;
}

int mtc_store_open(const char *url, const struct mtc_store_options *opt, struct mtc_store **out,
		   char *err, size_t errlen)
{
	struct mtc_store *s;
	size_t len;
	int rc;

	*out = NULL;
	if (!url || !*url)
		return set_open_error(err, errlen, EINVAL, "empty location%s", "");
	if (mtc_store_misspelt_url(url, err, errlen))
		return -1;
	s = xcalloc(1, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	if (opt)
		s->opt = *opt;
	if (s->opt.parallel <= 0)
		s->opt.parallel = 32;
	if (s->opt.deadline <= 0)
		s->opt.deadline = 600;
	if (s->opt.slice_threshold <= 0)
		s->opt.slice_threshold = MTC_STORE_SLICE_THRESHOLD;
	if (s->opt.slices <= 0)
		s->opt.slices = MTC_STORE_SLICES;
	if (s->opt.slices > MTC_STORE_SLICES_MAX)
		s->opt.slices = MTC_STORE_SLICES_MAX;
	s->url = xstrdup(url);
	len = strlen(s->url);
	const char *scheme_end = strstr(s->url, "://");
	size_t keep = scheme_end ? (size_t)(scheme_end - s->url) + 3 : 1;
	while (len > keep && s->url[len - 1] == '/')
		s->url[--len] = '\0';

	if (!strncmp(s->url, "gs://", 5) || !strncmp(s->url, "s3://", 5)) {
		char *bucket = xstrdup(s->url + 5), *slash = strchr(bucket, '/');
		s->remote = 1;
		if (slash)
			*slash++ = '\0';
		if (!*bucket) {
			free(bucket);
			mtc_store_close(s);
			return set_open_error(err, errlen, EINVAL, "no bucket in '%s'", url);
		}
		rc = s->url[0] == 's' ? mtc_store_s3_open(s, bucket, slash ? slash : "", err, errlen)
				      : mtc_store_gcs_open(s, bucket, slash ? slash : "", err, errlen);
		free(bucket);
	} else if (!strncmp(s->url, "file://", 7)) {
		rc = mtc_store_dir_open(s, s->url + 7, err, errlen);
	} else if (strstr(s->url, "://")) {
		mtc_store_close(s);
		return set_open_error(err, errlen, EINVAL, "unknown location scheme in '%s'", url);
	} else {
		rc = mtc_store_dir_open(s, s->url, err, errlen);
	}
	if (rc < 0) {
		int e = errno;
		s->ops = NULL;
		mtc_store_close(s);
		errno = e;
		return -1;
	}
	*out = s;
	return 0;
}

void mtc_store_close(struct mtc_store *s)
{
	if (!s)
		return;
	if (s->ops && s->ops->close)
		s->ops->close(s);
	pthread_mutex_destroy(&s->lock);
	free(s->url);
	free(s);
}

const char *mtc_store_url(const struct mtc_store *s) { return s->url; }
int mtc_store_is_remote(const struct mtc_store *s) { return s->remote; }

static int bad_key(struct mtc_store *s, const char *key)
{
	mtc_store_set_error(s, "invalid object name '%s'", key ? key : "");
	errno = EINVAL;
	return -1;
}

#define CHECK_KEY(s, key)                       \
	do {                                    \
		if (!mtc_store_valid_key(key))  \
			return bad_key(s, key); \
		(s)->err[0] = '\0';             \
	} while (0)

int mtc_store_put_file(struct mtc_store *s, const char *key, const char *path, int flags)
{
	CHECK_KEY(s, key);
	return s->ops->put_file(s, key, path, flags);
}

int mtc_store_put_buf(struct mtc_store *s, const char *key, const void *buf, size_t len, int flags)
{
	CHECK_KEY(s, key);
	return s->ops->put_buf(s, key, buf, len, flags);
}

static int check_batch(struct mtc_store *s, struct mtc_store_xfer *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		x[i].err = 0;
		x[i].size = 0;
		if (!mtc_store_valid_key(x[i].key))
			return bad_key(s, x[i].key);
	}
	s->err[0] = '\0';
	s->progress_done = 0;
	s->progress_total = 0;
	return 0;
}

int mtc_store_put_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags)
{
	if (check_batch(s, x, n) < 0)
		return -1;
	return s->ops->put_many(s, x, n, flags);
}

int mtc_store_get_file(struct mtc_store *s, const char *key, const char *path)
{
	CHECK_KEY(s, key);
	return s->ops->get_file(s, key, path);
}

int mtc_store_get_buf(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	CHECK_KEY(s, key);
	return s->ops->get_buf(s, key, max, buf, len);
}

int mtc_store_get_range(struct mtc_store *s, const char *key, long long offset, void *buf, size_t len)
{
	CHECK_KEY(s, key);
	if (offset < 0) {
		errno = EINVAL;
		return -1;
	}
	return s->ops->get_range(s, key, offset, buf, len);
}

int mtc_store_get_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n)
{
	if (check_batch(s, x, n) < 0)
		return -1;
	return s->ops->get_many(s, x, n);
}

int mtc_store_list(struct mtc_store *s, const char *prefix, const char *delim,
		   struct mtc_store_list *out)
{
	memset(out, 0, sizeof *out);
	if (prefix && *prefix && (prefix[0] == '/' || strstr(prefix, "..")))
		return bad_key(s, prefix);
	s->err[0] = '\0';
	if (delim && !*delim)
		delim = NULL;
	return s->ops->list(s, prefix ? prefix : "", delim, out);
}

int mtc_store_stat(struct mtc_store *s, const char *key, struct mtc_store_object *out)
{
	memset(out, 0, sizeof *out);
	CHECK_KEY(s, key);
	return s->ops->stat(s, key, out);
}

int mtc_store_delete(struct mtc_store *s, const char *key)
{
	CHECK_KEY(s, key);
	return s->ops->del(s, key);
}

int mtc_store_delete_prefix(struct mtc_store *s, const char *prefix)
{
	if (!prefix || !*prefix)
		return bad_key(s, prefix);
	CHECK_KEY(s, prefix);
	return s->ops->delete_prefix(s, prefix);
}

long mtc_store_leftovers(struct mtc_store *s, const char *prefix, int remove, mtc_store_leftover_fn *fn,
			 void *arg)
{
	if (!prefix || !*prefix)
		return bad_key(s, prefix);
	CHECK_KEY(s, prefix);
	return s->ops->leftovers ? s->ops->leftovers(s, prefix, remove, fn, arg) : 0;
}

int mtc_store_parse_size(const char *text, long long *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	long long v;
	int shift = 0;

	if (!text || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno)
		return -1;
	if (*end && (u = strchr(units, toupper((unsigned char)*end)))) {
		shift = 10 * (int)(u - units + 1);
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end || v > LLONG_MAX >> shift)
		return -1;
	*out = v << shift;
	return 0;
}
