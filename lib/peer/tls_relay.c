#include "tls_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

#define RELAY_BUF (64 << 10)
#define TLS_RECORD (16 << 10)
#define PAIR_BUF (1 << 20)
#define POLL_MS 500

SSL_CTX *mtc_tls_ctx(const SSL_METHOD *method)
{
	SSL_CTX *ctx = SSL_CTX_new(method);

	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* where the kernel has TLS (the tls ULP) it en- and decrypts the records; else OpenSSL does */
	SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, RELAY_BUF);
	return ctx;
}

int mtc_tls_kernel_available(void)
{
	char *ulps = NULL;
	int yes;

	if (mtc_read_file("/proc/sys/net/ipv4/tcp_available_ulp", 4096, &ulps, NULL) < 0)
		return 0;
	yes = strstr(ulps, "tls") != NULL;
	free(ulps);
	return yes;
}

int mtc_tls_kernel(SSL *ssl)
{
	return (BIO_get_ktls_send(SSL_get_wbio(ssl)) ? MTC_TLS_KERNEL_SEND : 0) |
	       (BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? MTC_TLS_KERNEL_RECV : 0);
}

char *mtc_tls_reason(char *buf, size_t len)
{
	ERR_error_string_n(ERR_get_error(), buf, len);
	ERR_clear_error();
	return buf;
}

enum mtc_result mtc_tls_handshake(SSL *ssl, int tcp, double deadline, const int *stop, char *err,
				  size_t errlen)
{
	for (;;) {
		int n = SSL_do_handshake(ssl), e, ms;
		struct pollfd p = { .fd = tcp };

		if (n == 1)
			return MTC_OK;
		e = SSL_get_error(ssl, n);
		p.events = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
		if (!p.events) {
			long v = SSL_get_verify_result(ssl);
			char ossl[256];

			mtc_tls_reason(ossl, sizeof ossl);
			mtc_fail(err, errlen, "%s",
				 v != X509_V_OK	      ? X509_verify_cert_error_string(v)
				 : e == SSL_ERROR_SSL ? ossl
						      : "connection closed");
			return MTC_FAILURE;
		}
		if ((ms = (int)((deadline - mtc_now()) * 1000)) <= 0) {
			mtc_fail(err, errlen, "deadline passed");
			return MTC_TIMEOUT;
		}
		if (poll(&p, 1, ms < POLL_MS ? ms : POLL_MS) < 0 && errno != EINTR)
			return mtc_fail(err, errlen, "%s", strerror(errno)), MTC_FAILURE;
		if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED))
			return mtc_fail(err, errlen, "stopped"), MTC_FAILURE;
	}
}

int mtc_tls_pair(int pair[2])
{
	int size = PAIR_BUF;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		setsockopt(pair[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
		setsockopt(pair[i], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	}
	fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK);
	return 0;
}

/* What an SSL call that returned n < 1 waits for: POLLIN, POLLOUT, or 0 when the TLS side ended. */
static short ssl_wants(SSL *ssl, int n)
{
	switch (SSL_get_error(ssl, n)) {
	case SSL_ERROR_WANT_READ: return POLLIN;
	case SSL_ERROR_WANT_WRITE: return POLLOUT;
	default: ERR_clear_error(); return 0;
	}
}

void mtc_tls_relay(SSL *ssl, int tcp, int plain, const int *stop, int flush_s)
{
	char *in = xmalloc(RELAY_BUF), *out = xmalloc(RELAY_BUF);
	size_t in_len = 0, in_off = 0, out_len = 0, out_off = 0;
	int tls_open = 1, plain_open = 1, plain_gone = 0;
	double moved_at = mtc_now();

	while (!(stop && __atomic_load_n(stop, __ATOMIC_RELAXED))) {
		struct pollfd p[2] = { { .fd = tcp }, { .fd = plain } };
		int moved = 0, n = 0;
		ssize_t k;

		if (tls_open && in_off == in_len) {
			/* records are at most 16 KiB: a few at once make fewer writes to plain */
			in_off = in_len = 0;
			while (in_len + TLS_RECORD <= RELAY_BUF &&
			       (n = SSL_read(ssl, in + in_len, (int)(RELAY_BUF - in_len))) > 0)
				in_len += (size_t)n;
			if (in_len) {
				moved = 1;
			} else if (!(p[0].events |= ssl_wants(ssl, n))) {
				tls_open = 0; /* close_notify, a reset or a TLS error */
				shutdown(plain, SHUT_WR);
				moved = 1;
			}
		}
		if (in_off < in_len) {
			if ((k = write(plain, in + in_off, in_len - in_off)) > 0) {
				in_off += (size_t)k;
				moved = 1;
			} else if (k < 0 && errno == EAGAIN) {
				p[1].events |= POLLOUT;
			} else {
				break; /* plain's reader closed its end */
			}
		}
		if (plain_open && out_off == out_len) {
			out_off = out_len = 0;
			if ((k = read(plain, out, RELAY_BUF)) > 0) {
				out_len = (size_t)k;
				moved = 1;
			} else if (k < 0 && errno == EAGAIN) {
				p[1].events |= POLLIN;
			} else {
				plain_open = 0;
				moved = 1;
			}
		}
		if (out_off < out_len) {
			if ((n = SSL_write(ssl, out + out_off, (int)(out_len - out_off))) > 0) {
				out_off += (size_t)n;
				moved = 1;
			} else if (!(p[0].events |= ssl_wants(ssl, n))) {
				break;
			}
		}
		if (!plain_open && out_off == out_len) {
			SSL_shutdown(ssl); /* all of plain's side is sent: close_notify, best effort */
			break;
		}
		if (moved) {
			moved_at = mtc_now();
			continue;
		}
		if ((!plain_open || plain_gone) && mtc_now() - moved_at > flush_s)
			break; /* the other end of tcp stopped reading */
		if (out_off < out_len && !plain_gone)
			p[1].events |= POLLRDHUP; /* plain is not read while tcp is full: see it close */
		for (int i = 0; i < 2; i++)
			if (!p[i].events)
				p[i].fd =
					-1; /* a hung-up fd waited for nothing would wake poll at once */
		if (poll(p, 2, POLL_MS) < 0 && errno != EINTR)
			break;
		plain_gone |= !!(p[1].revents & (POLLRDHUP | POLLHUP));
	}
	free(in);
	free(out);
}
