#include "tls_front.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "tls.h"
#include "tls_relay.h"
#include "xalloc.h"

/* One client connection and the thread that serves it. */
struct link {
	struct mtc_tls_front *f;
	LIST_ENTRY(link) link;
	int tcp;
	struct sockaddr_storage sa;
	socklen_t salen;
	double since;
	int handshaking, cut;
};

struct mtc_tls_front {
	struct mtc_tls_front_opts o;
	SSL_CTX *ctx;
	pthread_t acceptor;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	LIST_HEAD(, link) links; /* newest first */
	int handshakes, threads, stopping;
	struct mtc_tls_front_counts counts; /* under mu */
};

static int ssl_fail(char *err, size_t errlen, const char *what, const char *path)
{
	char why[256];
	return mtc_fail(err, errlen, "cannot load %s '%s': %s", what, path,
			mtc_tls_reason(why, sizeof why));
}

static SSL_CTX *server_ctx(const struct mtc_tls_files *t, char *err, size_t errlen)
{
	SSL_CTX *ctx = mtc_tls_ctx(TLS_server_method());
	STACK_OF(X509_NAME) * cas;

	if (!ctx) {
		mtc_fail(err, errlen, "cannot start TLS: out of memory");
		return NULL;
	}
	/* AES-128-GCM first: as safe for this use, and the cheapest per byte with AES-NI */
	SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
				      "TLS_CHACHA20_POLY1305_SHA256");
	SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1)
		ssl_fail(err, errlen, "the certificate", t->cert);
	else if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1 ||
		 SSL_CTX_check_private_key(ctx) != 1) {
		if (ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH)
			ssl_fail(err, errlen, "the key", t->key);
		else
			mtc_fail(err, errlen, "'%s' is not the key of '%s'", t->key, t->cert);
		ERR_clear_error();
	} else if (SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1 ||
		   !(cas = SSL_load_client_CA_file(t->ca)))
		ssl_fail(err, errlen, "the CA", t->ca);
	else {
		/* Asked for, not required: probes and metrics come without one (mtc(7) §4.4). */
		SSL_CTX_set_client_CA_list(ctx, cas);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		/* with a client certificate asked for, OpenSSL resumes no session without it */
		SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"mtc-peer", 8);
		return ctx;
	}
	SSL_CTX_free(ctx);
	return NULL;
}

static void *link_main(void *arg)
{
	struct link *l = arg;
	struct mtc_tls_front *f = l->f;
	SSL *ssl = SSL_new(f->ctx);
	char why[256] = "out of memory";
	int rc = -1, ok, pair[2] = { -1, -1 };

	if (ssl && SSL_set_fd(ssl, l->tcp) == 1) {
		SSL_set_accept_state(ssl);
		rc = mtc_tls_handshake(ssl, l->tcp, l->since + f->o.handshake_timeout_s, &f->stopping,
				       why, sizeof why);
	}
	if ((ok = rc == 0) == 0)
		mtc_debug("TLS handshake with a client failed: %s", why);

	pthread_mutex_lock(&f->mu);
	if (l->handshaking) { /* else cut_oldest_handshake took it off */
		l->handshaking = 0;
		f->handshakes--;
	}
	if (!l->cut) /* a cut one is counted there */
		(*(ok ? &f->counts.ok : rc == MTC_TIMEOUT ? &f->counts.timed_out : &f->counts.failed))++;
	if (ok) {
		int k = mtc_tls_kernel(ssl);
		f->counts.kernel_send += !!(k & MTC_TLS_KERNEL_SEND);
		f->counts.kernel_recv += !!(k & MTC_TLS_KERNEL_RECV);
	}
	pthread_mutex_unlock(&f->mu);
	if (ok && mtc_tls_pair(pair) == 0) {
		X509 *cert = SSL_get1_peer_certificate(ssl);
		int verified = cert && SSL_get_verify_result(ssl) == X509_V_OK;

		X509_free(cert);
		f->o.hand_over(f->o.cls, pair[1], (struct sockaddr *)&l->sa, l->salen, verified);
		mtc_tls_relay(ssl, l->tcp, pair[0], &f->stopping, f->o.idle_timeout_s);
		close(pair[0]);
	}
	/* out of the list before tcp closes: the list's fds are shut down by others */
	pthread_mutex_lock(&f->mu);
	LIST_REMOVE(l, link);
	pthread_mutex_unlock(&f->mu);
	SSL_free(ssl);
	close(l->tcp);
	free(l);
	pthread_mutex_lock(&f->mu);
	f->threads--;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Under f->mu, beyond max_handshakes: the oldest handshake still going is cut (MTC_GUARD_BURST_S). */
static void cut_oldest_handshake(struct mtc_tls_front *f)
{
	struct link *old = NULL;

	struct link *l;
	LIST_FOREACH(l, &f->links, link)
	if (l->handshaking)
		old = l;
	if (old && !mtc_guard_cuts(mtc_now() - old->since, f->handshakes, f->o.max_handshakes))
		return;
	if (old) {
		mtc_debug("%d TLS handshakes at once: cutting the oldest", f->handshakes);
		shutdown(old->tcp, SHUT_RDWR);
		old->handshaking = 0;
		old->cut = 1;
		f->handshakes--;
		f->counts.cut++;
	}
}

static void *accept_main(void *arg)
{
	struct mtc_tls_front *f = arg;

	for (;;) {
		struct link *l = xcalloc(1, sizeof *l);
		pthread_attr_t attr;
		pthread_t t;

		l->f = f;
		l->salen = sizeof l->sa;
		l->tcp = accept4(f->o.listen_fd, (struct sockaddr *)&l->sa, &l->salen,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (l->tcp < 0) {
			int e = errno;
			free(l);
			if (__atomic_load_n(&f->stopping, __ATOMIC_RELAXED))
				return NULL;
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
				usleep(100 * 1000); /* out of descriptors: let some close */
			continue;
		}
		l->since = mtc_now();
		l->handshaking = 1;
		pthread_mutex_lock(&f->mu);
		LIST_INSERT_HEAD(&f->links, l, link);
		f->threads++;
		if (++f->handshakes > f->o.max_handshakes && f->o.max_handshakes > 0)
			cut_oldest_handshake(f);
		pthread_mutex_unlock(&f->mu);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 << 10);
		if (pthread_create(&t, &attr, link_main, l)) {
			pthread_mutex_lock(&f->mu);
			LIST_REMOVE(l, link);
			f->threads--;
			if (l->handshaking)
				f->handshakes--;
			pthread_mutex_unlock(&f->mu);
			close(l->tcp);
			free(l);
		}
		pthread_attr_destroy(&attr);
	}
}

struct mtc_tls_front *mtc_tls_front_start(const struct mtc_tls_front_opts *o, char *err, size_t errlen)
{
	struct mtc_tls_files t;
	struct mtc_tls_front *f;
	SSL_CTX *ctx;

	if (mtc_tls_files(o->dir, 1, &t, err, errlen) < 0 || !(ctx = server_ctx(&t, err, errlen)))
		return NULL;
	f = xcalloc(1, sizeof *f);
	f->o = *o;
	f->ctx = ctx;
	LIST_INIT(&f->links);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (pthread_create(&f->acceptor, NULL, accept_main, f)) {
		mtc_fail(err, errlen, "cannot start the TLS acceptor: out of threads");
		SSL_CTX_free(ctx);
		free(f);
		return NULL;
	}
	return f;
}

void mtc_tls_front_counts(struct mtc_tls_front *f, struct mtc_tls_front_counts *c)
{
	pthread_mutex_lock(&f->mu);
	*c = f->counts;
	pthread_mutex_unlock(&f->mu);
}

void mtc_tls_front_stop(struct mtc_tls_front *f)
{
	__atomic_store_n(&f->stopping, 1, __ATOMIC_RELAXED);
	shutdown(f->o.listen_fd, SHUT_RDWR); /* wakes accept4 */
	pthread_join(f->acceptor, NULL);
	close(f->o.listen_fd);
	pthread_mutex_lock(&f->mu);
	struct link *l;
	LIST_FOREACH(l, &f->links, link)
	shutdown(l->tcp, SHUT_RDWR);
	while (f->threads)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	SSL_CTX_free(f->ctx);
	free(f);
}
