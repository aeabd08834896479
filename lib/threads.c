#include "threads.h"

#include <pthread.h>
#include <stdlib.h>

#include "xalloc.h"

void mtc_run_threads(size_t n, void *(*fn)(void *), void *arg)
{
	pthread_t *t = xcalloc(n ? n : 1, sizeof *t);
	size_t started = 0;

	for (size_t i = 1; i < n; i++)
		if (pthread_create(&t[started], NULL, fn, arg) == 0)
			started++;
	fn(arg);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
}
