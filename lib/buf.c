#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void mtc_buf_init(struct mtc_buf *b, size_t max) { *b = (struct mtc_buf)MTC_BUF_INIT(max); }

static void grow(struct mtc_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;

	while (cap < need + 1)
		cap *= 2;
	if (cap - 1 > b->max)
		cap = b->max + 1;
	if (cap > b->cap) {
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
}

void mtc_buf_reserve(struct mtc_buf *b, size_t n)
{
	size_t cap = (n < b->max ? n : b->max) + 1;

	if (cap > b->cap) {
		b->p = xrealloc(b->p, cap);
		if (!b->cap)
			b->p[0] = '\0';
		b->cap = cap;
	}
}

int mtc_buf_append(struct mtc_buf *b, const void *data, size_t n)
{
	size_t room = b->max - b->len, take = n < room ? n : room;

	if (!b->p || b->len + take + 1 > b->cap)
		grow(b, b->len + take);
	if (take) /* data may be NULL when n is 0 */
		memcpy(b->p + b->len, data, take);
	b->len += take;
	b->p[b->len] = '\0';
	if (take < n) {
		errno = EFBIG;
		return -1;
	}
	return 0;
}

int mtc_buf_appendf(struct mtc_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n, rc;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	rc = mtc_buf_append(b, s, (size_t)n);
	free(s);
	return rc;
}

void mtc_buf_reset(struct mtc_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void mtc_buf_free(struct mtc_buf *b)
{
	free(b->p);
	mtc_buf_init(b, b->max);
}

char *mtc_buf_take(struct mtc_buf *b)
{
	char *p = b->p;
	mtc_buf_init(b, b->max);
	return p;
}

const char *mtc_buf_str(const struct mtc_buf *b) { return b->p ? b->p : ""; }
