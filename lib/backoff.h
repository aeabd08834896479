#ifndef MTC_BACKOFF_H
#define MTC_BACKOFF_H

/*
 * The one retry policy, and the one place its constants are chosen: before
 * try attempt + 1, a wait drawn uniformly from [0, min(cap, base * 2^attempt))
 * (full jitter), never past the caller's deadline. Each kind of far end has
 * its base and cap here.
 */
enum mtc_backoff_kind {
	MTC_BACKOFF_STORE,     /* an object store's request (transfer.c): 0.1 s up to 10 s */
	MTC_BACKOFF_PEER,      /* a peer daemon (peer_client.c): 0.2 s up to 6.4 s */
	MTC_BACKOFF_COORD,     /* the coordinator (coord_client.c): 0.2 s up to 3.2 s */
	MTC_BACKOFF_TOKEN,     /* a token endpoint, OAuth or STS: 0.2 s up to 1.6 s */
	MTC_BACKOFF_METADATA,  /* the GCE metadata server while it starts: 0.1 s up to 3.2 s */
	MTC_BACKOFF_CONTAINER, /* a container's credential endpoint: 0.1 s up to 1 s */
};

struct mtc_backoff {
	double base, cap; /* seconds */
};

const struct mtc_backoff *mtc_backoff_of(enum mtc_backoff_kind kind);

struct mtc_retry {
	double base, cap; /* seconds */
	double deadline;  /* mtc_now() clock */
	int attempt;	  /* waits so far */
	double refused;	  /* when the first wait after a refused connection began, or 0 */
	unsigned seed;
};

void mtc_retry_init(struct mtc_retry *r, enum mtc_backoff_kind kind, double deadline);
/* The wait before try attempt + 1. */
double mtc_backoff(int attempt, double base, double cap, unsigned *seed);
/* Waits before the next try: 0, or -1 at once when the wait would end past the deadline. */
int mtc_retry_wait(struct mtc_retry *r);

/*
 * The same after a refused connection: nothing listens there, as while a
 * daemon restarts, and a try costs the far end no more than a reset. For
 * its first MTC_RETRY_REFUSED_S the next try comes within 50 ms (full
 * jitter), the backoff not grown; then the policy above.
 */
#define MTC_RETRY_REFUSED_S 2.0
int mtc_retry_wait_refused(struct mtc_retry *r);

#endif
