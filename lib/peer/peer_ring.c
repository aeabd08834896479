#include "peer_ring.h"

#include <stdlib.h>
#include <string.h>

#include "threads.h"
#include "xalloc.h"

void mtc_ring_init(struct mtc_ring *r, size_t batch)
{
	memset(r, 0, sizeof *r);
	r->batch = batch;
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

/* Hands the slot being filled to the consumer; the caller holds mu. */
static void hand_over(struct mtc_ring *r)
{
	int i = (r->head + r->count) % MTC_RING_SLOTS;
	r->len[i] = r->filling;
	r->filling = 0;
	r->count++;
	pthread_cond_broadcast(&r->cv);
}

int mtc_ring_offer(struct mtc_ring *r, const void *data, size_t len)
{
	size_t need;
	int i;

	if (!len)
		return r->done ? -1 : 0;
	pthread_mutex_lock(&r->mu);
	while (r->count == MTC_RING_SLOTS && !r->done)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->done) {
		pthread_mutex_unlock(&r->mu);
		return -1;
	}
	i = (r->head + r->count) % MTC_RING_SLOTS;
	pthread_mutex_unlock(&r->mu);
	need = r->filling + len;
	if (r->cap[i] < need) {
		r->cap[i] = need > r->batch ? need : r->batch;
		r->slot[i] = xrealloc(r->slot[i], r->cap[i]);
	}
	memcpy(r->slot[i] + r->filling, data, len);
	r->filling = need;
	if (r->filling >= r->batch) {
		pthread_mutex_lock(&r->mu);
		hand_over(r);
		pthread_mutex_unlock(&r->mu);
	}
	return 0;
}

void mtc_ring_end(struct mtc_ring *r)
{
	pthread_mutex_lock(&r->mu);
	if (r->filling && !r->done)
		hand_over(r);
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

void mtc_ring_done(struct mtc_ring *r) { mtc_cond_set(&r->mu, &r->cv, &r->done, 1); }
