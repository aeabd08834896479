#ifndef MTC_PEER_RING_H
#define MTC_PEER_RING_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Two slots between a producer that receives a body in chunks (the HTTP
 * library's callbacks) and a consumer thread that extracts it
 * (mtc_wire_extract_from), so receiving the next chunk overlaps with
 * writing and hashing this one. A chunk is copied once, into a slot; small
 * chunks gather in a slot until it holds batch bytes, so the two threads
 * hand over large blocks. The consumer reads a slot in place until it asks
 * for the next.
 */
#define MTC_RING_SLOTS 2

struct mtc_ring {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *slot[MTC_RING_SLOTS];
	size_t len[MTC_RING_SLOTS], cap[MTC_RING_SLOTS];
	int head, count, taken; /* taken: the consumer still reads slot[head] */
	size_t batch, filling;	/* filling: bytes in the slot not yet handed over */
	int end;		/* the producer has no more */
	int done;		/* the consumer stopped reading */
};

void mtc_ring_init(struct mtc_ring *r, size_t batch);
void mtc_ring_free(struct mtc_ring *r);

/* Producer: waits for a free slot and copies the chunk in; -1 once the consumer is done. */
int mtc_ring_offer(struct mtc_ring *r, const void *data, size_t len);
/* Producer: no more chunks (the consumer then sees the end). */
void mtc_ring_end(struct mtc_ring *r);

/* Consumer, an mtc_wire_source: the next chunk, 0 at the end. */
ssize_t mtc_ring_next(void *ring, const void **buf);
/* Consumer: stopped reading (an offer no longer waits). */
void mtc_ring_done(struct mtc_ring *r);

#endif
