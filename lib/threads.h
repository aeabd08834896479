#ifndef MTC_THREADS_H
#define MTC_THREADS_H

#include <stddef.h>

#define MTC_HASH_THREADS_MAX 256 /* the most threads a digest hashes on */

/*
 * Runs fn(arg) on n threads, the calling thread one of them, and returns
 * when every one has returned. A thread that cannot be started is left out:
 * fn must share its work through arg (a queue), so fewer threads only take
 * longer.
 */
void mtc_run_threads(size_t n, void *(*fn)(void *), void *arg);

#endif
