#ifndef MTC_TLS_RELAY_H
#define MTC_TLS_RELAY_H

#include <openssl/ssl.h>

#include "../result.h"

/*
 * A TLS connection as a plain socket (mtc(7) §4.4): code that speaks
 * HTTP on a socket (the daemon's HTTP server, the raw client of
 * peer_http.h) gets one end of a socket pair, and a relay thread carries
 * its bytes to and from the TLS connection. This costs one copy each way
 * through the pair; where the kernel has TLS it also does the crypto. The daemon's side (tls_front.h) and
 * the client's (tls.h) share what is here.
 */

/*
 * A context for method (the server's or the client's) as both sides use
 * it: TLS 1.2 or later, kernel TLS where offered, partial writes from a buffer that may move,
 * buffers released when idle, records read ahead in batches. NULL when
 * out of memory.
 */
SSL_CTX *mtc_tls_ctx(const SSL_METHOD *method);

/* 1 when this kernel offers TLS on its sockets (the tls ULP), else 0. */
int mtc_tls_kernel_available(void);

/* After the handshake: which directions of ssl the kernel en- or decrypts. */
#define MTC_TLS_KERNEL_SEND 1
#define MTC_TLS_KERNEL_RECV 2
int mtc_tls_kernel(SSL *ssl);

/* The oldest error in OpenSSL's queue as text in buf, the queue cleared; buf. */
char *mtc_tls_reason(char *buf, size_t len);

/*
 * The handshake on ssl, whose role is set (SSL_set_accept_state or
 * SSL_set_connect_state) and whose fd is tcp, nonblocking: MTC_OK when done,
 * MTC_TIMEOUT when deadline (mtc_now() clock) passed first, MTC_FAILURE when
 * it failed or *stop was set (stop may be NULL); err says why.
 */
enum mtc_result mtc_tls_handshake(SSL *ssl, int tcp, double deadline, const int *stop, char *err,
				  size_t errlen);

/* A connected AF_UNIX stream pair with large buffers, pair[0] nonblocking: 0, or -1 with errno. */
int mtc_tls_pair(int pair[2]);

/*
 * Relays until both sides are done or *stop is set (stop may be NULL):
 * what arrives over TLS on tcp (a nonblocking socket whose handshake is
 * done), decrypted, to plain; what is written to plain's other end,
 * encrypted, to tcp. When plain's other end closes and all it wrote is
 * sent, a close_notify goes out; once it has closed, flush_s seconds in
 * which tcp takes nothing end the relay (else a peer that stops reading
 * would hold the thread while plain's side has long given up). Each
 * direction holds at most 64 KiB, so a slow reader slows its writer.
 * Closes neither fd.
 */
void mtc_tls_relay(SSL *ssl, int tcp, int plain, const int *stop, int flush_s);

#endif
