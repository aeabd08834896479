#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fsutil.h"
#include "log.h"
#include "tls_relay.h"
#include "xalloc.h"

static pthread_mutex_t client_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mtc_tls_files client;
static int client_state; /* 0 not set up yet, 1 no TLS, 2 TLS, 3 a TLS dir that cannot be used */
static char client_err[512];
static SSL_CTX *client_ctx; /* for mtc_tls_connect, made at its first call */

const char *mtc_tls_dir_path(const char *given)
{
	const char *env = getenv("MTC_TLS_DIR");
	return given && *given ? given : env && *env ? env : NULL;
}

static int present(const char *path, char *err, size_t errlen)
{
	if (access(path, R_OK) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	return mtc_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
}

int mtc_tls_files(const char *dir, int need_cert, struct mtc_tls_files *f, char *err, size_t errlen)
{
	struct stat st;
	int cert, key;

	memset(f, 0, sizeof *f);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return mtc_fail(err, errlen, "TLS dir '%s' is not a directory", dir);
	snprintf(f->ca, sizeof f->ca, "%s/ca.crt", dir);
	snprintf(f->cert, sizeof f->cert, "%s/tls.crt", dir);
	snprintf(f->key, sizeof f->key, "%s/tls.key", dir);
	switch (present(f->ca, err, errlen)) {
	case -1: return -1;
	case 0: return mtc_fail(err, errlen, "TLS dir '%s' has no ca.crt", dir);
	}
	if ((cert = present(f->cert, err, errlen)) < 0 || (key = present(f->key, err, errlen)) < 0)
		return -1;
	if (cert != key)
		return mtc_fail(err, errlen, "TLS dir '%s' has %s but not %s", dir,
				cert ? "tls.crt" : "tls.key", cert ? "tls.key" : "tls.crt");
	if (need_cert && !cert)
		return mtc_fail(err, errlen, "TLS dir '%s' has no tls.crt and tls.key", dir);
	if (key && stat(f->key, &st) == 0 && (st.st_mode & 0077))
		mtc_warn("'%s' is readable by group or others (mode %04o): anyone who reads it can "
			 "pose as this node",
			 f->key, (unsigned)(st.st_mode & 07777));
	f->has_cert = cert;
	return 0;
}

/* Under client_mu. */
static void setup_locked(const char *given)
{
	const char *dir = mtc_tls_dir_path(given);
	client_state = !dir								    ? 1
		       : mtc_tls_files(dir, 0, &client, client_err, sizeof client_err) == 0 ? 2
											    : 3;
}

int mtc_tls_client_setup(const char *given, char *err, size_t errlen)
{
	int state;

	pthread_mutex_lock(&client_mu);
	setup_locked(given);
	state = client_state;
	pthread_mutex_unlock(&client_mu);
	return state == 3 ? mtc_fail(err, errlen, "%s", client_err) : 0;
}

/* client_state, set up from $MTC_TLS_DIR when nothing set it up before. */
static int state_now(void)
{
	int state;

	pthread_mutex_lock(&client_mu);
	if (!client_state)
		setup_locked(NULL);
	state = client_state;
	pthread_mutex_unlock(&client_mu);
	return state;
}

int mtc_tls_url_check(const char *url, char *err, size_t errlen)
{
	int state = state_now();

	if (state == 3)
		return mtc_fail(err, errlen, "%s", client_err);
	if (state == 2 && strncasecmp(url, "https://", 8))
		return mtc_fail(err, errlen,
				"TLS is set up (--tls-dir or $MTC_TLS_DIR), so '%s' must be https://: "
				"plain http would carry the token in clear",
				url);
	return 0;
}

int mtc_tls_curl(CURL *h, const char *url, char *err, size_t errlen)
{
	if (mtc_tls_url_check(url, err, errlen) < 0)
		return -1;
	if (!h || state_now() != 2)
		return 0;
	curl_easy_setopt(h, CURLOPT_CAINFO, client.ca);
	curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (client.has_cert) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, client.cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, client.key);
	}
	return 0;
}

int mtc_tls_client_on(void) { return state_now() == 2; }

/* Under client_mu, with client_state 2. */
static SSL_CTX *client_ctx_locked(char *err, size_t errlen)
{
	SSL_CTX *ctx;

	if (client_ctx)
		return client_ctx;
	if (!(ctx = mtc_tls_ctx(TLS_client_method()))) {
		mtc_fail(err, errlen, "cannot start TLS: out of memory");
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_load_verify_locations(ctx, client.ca, NULL) != 1 ||
	    (client.has_cert && (SSL_CTX_use_certificate_chain_file(ctx, client.cert) != 1 ||
				 SSL_CTX_use_PrivateKey_file(ctx, client.key, SSL_FILETYPE_PEM) != 1))) {
		char why[256];
		mtc_fail(err, errlen, "cannot load the TLS dir's files: %s",
			 mtc_tls_reason(why, sizeof why));
		SSL_CTX_free(ctx);
		return NULL;
	}
	return client_ctx = ctx;
}

struct relay_arg {
	SSL *ssl;
	int tcp, plain;
};

/* Relays still running, under client_mu; relay_done is signalled as each ends. */
static int relays, exit_hooked;
static pthread_cond_t relay_done = PTHREAD_COND_INITIALIZER;

#define RELAY_EXIT_WAIT_S 2
#define RELAY_FLUSH_S 30 /* a request's last bytes to a peer that takes none, once its caller is gone */

/*
 * At exit: the relays of connections just closed are still ending their TLS
 * sessions (close_notify, a late session ticket); a process that exits under
 * them leaves its peers connections that end without a close_notify.
 */
static void wait_relays(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += RELAY_EXIT_WAIT_S;
	pthread_mutex_lock(&client_mu);
	while (relays > 0 && pthread_cond_timedwait(&relay_done, &client_mu, &until) == 0)
		;
	pthread_mutex_unlock(&client_mu);
}

static void *relay_main(void *arg)
{
	struct relay_arg *a = arg;

	mtc_tls_relay(a->ssl, a->tcp, a->plain, NULL, RELAY_FLUSH_S);
	SSL_free(a->ssl);
	close(a->tcp);
	close(a->plain);
	free(a);
	pthread_mutex_lock(&client_mu);
	relays--;
	pthread_cond_broadcast(&relay_done);
	pthread_mutex_unlock(&client_mu);
	return NULL;
}

int mtc_tls_connect(int tcp, const char *host, double deadline, const int *stop, char *err,
		    size_t errlen)
{
	unsigned char ip[16];
	struct relay_arg *a;
	pthread_attr_t attr;
	pthread_t t;
	SSL_CTX *ctx;
	SSL *ssl = NULL;
	int pair[2] = { -1, -1 }, is_ip, rc;
	char why[256];

	pthread_mutex_lock(&client_mu);
	ctx = client_state == 2 ? client_ctx_locked(err, errlen) : NULL;
	if (client_state != 2)
		mtc_fail(err, errlen, "TLS is not set up (--tls-dir or $MTC_TLS_DIR)");
	pthread_mutex_unlock(&client_mu);
	is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	if (!ctx || !(ssl = SSL_new(ctx)) || SSL_set_fd(ssl, tcp) != 1 ||
	    (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
		   : SSL_set1_host(ssl, host) != 1 || SSL_set_tlsext_host_name(ssl, host) != 1)) {
		if (ctx)
			mtc_fail(err, errlen, "cannot start TLS with '%s'", host);
		goto fail;
	}
	SSL_set_connect_state(ssl);
	if ((rc = mtc_tls_handshake(ssl, tcp, deadline, stop, why, sizeof why)) != MTC_OK) {
		mtc_fail(err, errlen,
			 rc == MTC_TIMEOUT ? "TLS handshake with '%s': %s"
					   : "TLS handshake with '%s' failed: %s",
			 host, why);
		goto fail;
	}
	if (mtc_tls_pair(pair) < 0) {
		mtc_fail(err, errlen, "cannot relay TLS: %s", strerror(errno));
		goto fail;
	}
	fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK);
	a = xmalloc(sizeof *a);
	*a = (struct relay_arg){ .ssl = ssl, .tcp = tcp, .plain = pair[0] };
	pthread_mutex_lock(&client_mu);
	if (!exit_hooked)
		exit_hooked = atexit(wait_relays) == 0;
	relays++;
	pthread_mutex_unlock(&client_mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, relay_main, a);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_lock(&client_mu);
		relays--;
		pthread_mutex_unlock(&client_mu);
		free(a);
		mtc_fail(err, errlen, "cannot relay TLS: out of threads");
		goto fail;
	}
	return pair[1];
fail:
	if (pair[0] >= 0) {
		close(pair[0]);
		close(pair[1]);
	}
	SSL_free(ssl);
	close(tcp);
	return -1;
}
