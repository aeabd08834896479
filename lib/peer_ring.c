#include "peer_ring.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void mtc_ring_init(struct mtc_ring *r)
{
	memset(r, 0, sizeof *r);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
}

void mtc_ring_free(struct mtc_ring *r)
{
	for (int i = 0; i < MTC_RING_SLOTS; i++)
		free(r->slot[i]);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	memset(r, 0, sizeof *r);
}

int mtc_ring_offer(struct mtc_ring *r, const void *data, size_t len)
{
	int i;

	pthread_mutex_lock(&r->mu);
	while (r->count == MTC_RING_SLOTS && !r->done)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->done) {
		pthread_mutex_unlock(&r->mu);
		return -1;
	}
	i = (r->head + r->count) % MTC_RING_SLOTS;
	pthread_mutex_unlock(&r->mu);
	if (r->cap[i] < len) {
		free(r->slot[i]);
		r->slot[i] = xmalloc(len);
		r->cap[i] = len;
	}
	memcpy(r->slot[i], data, len);
	r->len[i] = len;
	pthread_mutex_lock(&r->mu);
	r->count++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

void mtc_ring_end(struct mtc_ring *r)
{
	pthread_mutex_lock(&r->mu);
	r->end = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

ssize_t mtc_ring_next(void *ring, const void **buf)
{
	struct mtc_ring *r = ring;
	ssize_t n = 0;

	pthread_mutex_lock(&r->mu);
	if (r->taken) {
		r->taken = 0;
		r->head = (r->head + 1) % MTC_RING_SLOTS;
		r->count--;
		pthread_cond_broadcast(&r->cv);
	}
	while (!r->count && !r->end)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->count) {
		r->taken = 1;
		*buf = r->slot[r->head];
		n = (ssize_t)r->len[r->head];
	}
	pthread_mutex_unlock(&r->mu);
	return n;
}

void mtc_ring_done(struct mtc_ring *r)
{
	pthread_mutex_lock(&r->mu);
	r->done = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}
