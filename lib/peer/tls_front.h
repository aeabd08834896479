#ifndef MTC_TLS_FRONT_H
#define MTC_TLS_FRONT_H

#include <stddef.h>
#include <sys/socket.h>

/*
 * The daemon's TLS side (mtc(7) §4.4), in front of an HTTP server that
 * speaks plain text: it accepts on a listening socket, does the TLS
 * handshake (OpenSSL) in a thread of its own within a deadline, and hands
 * the server one end of a socket pair whose other end it relays to and
 * from the TLS connection. The server sees the client's address and
 * whether the client showed a certificate signed by the CA.
 *
 * Handshakes are bounded: beyond max_handshakes at once the oldest is cut,
 * so clients that open connections and never finish the handshake cannot
 * keep others out.
 */
/*
 * The connection guard's grace for a burst (mtc(7) §4.3): beyond a limit of
 * unauthenticated connections or handshakes, none younger than this is cut
 * while there are at most twice the limit, so that a client is not cut merely
 * because others arrived with it.
 */
#define MTC_GUARD_BURST_S 1.0

/* Beyond max, whether the oldest (of age seconds) goes now that there are n. */
static inline int mtc_guard_cuts(double age, int n, int max)
{
	return age >= MTC_GUARD_BURST_S || n > 2 * max;
}

struct mtc_tls_front_opts {
	const char *dir;    /* the TLS dir (tls.h) */
	int listen_fd;	    /* bound and listening; the front owns it */
	int max_handshakes; /* at once; 0: no limit */
	int handshake_timeout_s;
	int idle_timeout_s; /* of a relay whose server side has closed, to deliver the rest */
	/*
	 * Takes fd (the server's end of the pair) for a client at sa;
	 * verified: 1 when the client's certificate checked out against
	 * ca.crt. Closes fd on failure.
	 */
	void (*hand_over)(void *cls, int fd, const struct sockaddr *sa, socklen_t salen, int verified);
	void *cls;
};

struct mtc_tls_front;

/* Loads tls.crt, tls.key and ca.crt and starts accepting; NULL with err. */
struct mtc_tls_front *mtc_tls_front_start(const struct mtc_tls_front_opts *o, char *err, size_t errlen);
/* Handshakes so far, by how they ended (beyond the limit: cut; within it: ok, failed, timed out). */
struct mtc_tls_front_counts {
	long long ok, failed, timed_out, cut;
	long long kernel_send, kernel_recv; /* of the ok: the kernel took over that direction */
};
void mtc_tls_front_counts(struct mtc_tls_front *f, struct mtc_tls_front_counts *c);

/* Stops accepting, cuts every connection and waits for its threads; frees f. */
void mtc_tls_front_stop(struct mtc_tls_front *f);

#endif
