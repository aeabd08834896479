#ifndef MTC_BUF_H
#define MTC_BUF_H

#include <stddef.h>

/*
 * A growable byte buffer with a per-use cap (curl's dynbuf is the model).
 * p is NUL-terminated whenever it is not NULL, so text can be read as a
 * string. An append that would pass max keeps what fits, so the buffer
 * always holds a prefix of what was appended, and fails with EFBIG; every
 * later append adds nothing and fails the same way.
 */
struct mtc_buf {
	char *p;
	size_t len, cap, max;
};

#define MTC_BUF_INIT(max_)         \
	{                          \
		NULL, 0, 0, (max_) \
	}

void mtc_buf_init(struct mtc_buf *b, size_t max);
/* 0, or -1 with errno EFBIG when max was reached (the prefix that fits is kept). */
int mtc_buf_append(struct mtc_buf *b, const void *data, size_t n);
int mtc_buf_appendf(struct mtc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Makes room for n bytes in one allocation (at most max), so appending them moves nothing. */
void mtc_buf_reserve(struct mtc_buf *b, size_t n);
/* Empties b, keeping its memory and its cap. */
void mtc_buf_reset(struct mtc_buf *b);
void mtc_buf_free(struct mtc_buf *b);
/* The contents, malloc'd and NUL-terminated (NULL when nothing was appended); b is emptied. */
char *mtc_buf_take(struct mtc_buf *b);
/* The contents as a string: "" when nothing was appended. */
const char *mtc_buf_str(const struct mtc_buf *b);

#endif
