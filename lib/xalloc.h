#ifndef MTC_XALLOC_H
#define MTC_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

/* Allocation that cannot fail: out of memory aborts with a message. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
