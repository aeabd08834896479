#include "http.h"

#include <pthread.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "buf.h"
#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

static CURLSH *pool;
static pthread_mutex_t pool_locks[CURL_LOCK_DATA_LAST];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void pool_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *arg)
{
	pthread_mutex_lock(&pool_locks[data]);
}

static void pool_unlock(CURL *h, curl_lock_data data, void *arg)
{
	pthread_mutex_unlock(&pool_locks[data]);
}

/*
 * Connections are not in the share: libcurl does not support sharing them
 * between threads that run transfers at once, as the peer threads do. Nor
 * are TLS sessions: libcurl before 8.10 hands one SSL_SESSION to connections
 * that handshake at once, which OpenSSL does not allow (seen here as a
 * session leaked under the sanitizers); a handle resumes its own sessions.
 */
static void init(void)
{
	/*
	 * OpenSSL does not clean itself up at exit: threads may still be in it
	 * then (a TLS relay finishing its close_notify, a backup listing left
	 * to end by itself), and a clean-up under them frees what they use and
	 * loses what they hold. First, so that libcurl's own set-up finds it done.
	 */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&pool_locks[i], NULL);
	pool = curl_share_init();
	curl_share_setopt(pool, CURLSHOPT_LOCKFUNC, pool_lock);
	curl_share_setopt(pool, CURLSHOPT_UNLOCKFUNC, pool_unlock);
	curl_share_setopt(pool, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
}

void mtc_http_init(void) { pthread_once(&init_once, init); }

int mtc_http_check(const struct mtc_http_opts *o, char *err, size_t errlen)
{
	return o->tls ? o->tls(NULL, o->url, err, errlen) : 0;
}

char *mtc_http_bearer(const char *token) { return xasprintf("Authorization: Bearer %s", token); }

int mtc_http_setup(CURL *h, const struct mtc_http_opts *o, struct curl_slist **headers, char *errbuf,
		   char *err, size_t errlen)
{
	curl_easy_reset(h);
	if (o->tls && o->tls(h, o->url, err, errlen) < 0)
		return -1;
	if (o->token) {
		char *auth = mtc_http_bearer(o->token);
		*headers = curl_slist_append(*headers, auth);
		free(auth);
	}
	errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_SHARE, pool);
	curl_easy_setopt(h, CURLOPT_URL, o->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->connect_s * 1000));
	if (o->timeout_s > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
				 (long)(o->timeout_s > 0.001 ? o->timeout_s * 1000 : 1));
	if (o->stall_s > 0) {
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->stall_s);
	}
	if (o->bulk) {
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024);
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
	}
	if (!o->idempotent)
		curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	if (mtc_log_level() >= MTC_LOG_DEBUG + 1)
		curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
	return 0;
}

long mtc_http_fetch(const struct mtc_http_opts *o, const char *method, const char *body,
		    struct curl_slist *headers, struct mtc_buf *answer, CURLcode *cc, char *err,
		    size_t errlen)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char ebuf[CURL_ERROR_SIZE];
	long status = 0;

	*cc = CURLE_FAILED_INIT;
	if (!c)
		return mtc_fail(err, errlen, "cannot start a request"), 0;
	if (mtc_http_setup(c, o, &h, ebuf, err, errlen) < 0) {
		curl_easy_cleanup(c);
		return 0;
	}
	for (struct curl_slist *l = headers; l; l = l->next)
		h = curl_slist_append(h, l->data);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mtc_http_to_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	*cc = curl_easy_perform(c);
	if (*cc != CURLE_OK)
		mtc_fail(err, errlen, "%s", ebuf[0] ? ebuf : curl_easy_strerror(*cc));
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

size_t mtc_http_to_buf(char *p, size_t size, size_t n, void *buf)
{
	return mtc_buf_append(buf, p, size * n) < 0 ? 0 : size * n;
}

enum mtc_http_end mtc_http_end_of(CURLcode cc)
{
	return cc == CURLE_OK			? MTC_HTTP_ANSWERED
	       : cc == CURLE_OPERATION_TIMEDOUT ? MTC_HTTP_DEADLINE
						: MTC_HTTP_UNREACHED;
}

int mtc_http_transient(long status) { return status == 408 || status == 429 || status >= 500; }
