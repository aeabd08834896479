#ifndef MTC_TLS_RELAY_H
#define MTC_TLS_RELAY_H

#include <openssl/ssl.h>

/*
 * A TLS connection as a plain socket (mtc(7) §4.4): code that speaks
 * HTTP on a socket (the daemon's HTTP server, the raw client of
 * peer_http.h) gets one end of a socket pair, and a relay thread carries
 * its bytes to and from the TLS connection. Without kernel TLS this costs
 * one copy each way through the pair.
 */

/* Sets what makes a relayed connection cheap per byte on ctx: records read ahead, in batches. */
void mtc_tls_tune(SSL_CTX *ctx);

/* A connected AF_UNIX stream pair with large buffers, pair[0] nonblocking: 0, or -1 with errno. */
int mtc_tls_pair(int pair[2]);

/*
 * Relays until both sides are done or *stop is set (stop may be NULL):
 * what arrives over TLS on tcp (a nonblocking socket whose handshake is
 * done), decrypted, to plain; what is written to plain's other end,
 * encrypted, to tcp. When plain's other end closes and all it wrote is
 * sent, a close_notify goes out. Each direction holds at most 64 KiB, so
 * a slow reader slows its writer. Closes neither fd.
 */
void mtc_tls_relay(SSL *ssl, int tcp, int plain, const int *stop);

#endif
