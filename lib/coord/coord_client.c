#include "coord_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "result.h"
#include "fsutil.h"
#include "http.h"
#include "log.h"
#include "peer/tls.h"
#include "xalloc.h"

#define ANSWER_MAX (256 << 20)

const char *mtc_coord_url(const char *url)
{
	const char *env = getenv("MTC_COORDINATOR");
	if (url && *url)
		return url;
	return env && *env ? env : NULL;
}

void mtc_coord_client_init(struct mtc_coord_client *cc, const char *url, const char *token, int rank)
{
	size_t n;
	struct timespec ts;

	memset(cc, 0, sizeof *cc);
	cc->url = xstrdup(url);
	n = strlen(cc->url);
	while (n && cc->url[n - 1] == '/')
		cc->url[--n] = '\0';
	cc->token = token ? xstrdup(token) : NULL;
	cc->rank = rank;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(cc->session, sizeof cc->session, "%d-%ld-%ld", (int)getpid(), (long)ts.tv_sec,
		 ts.tv_nsec);
	pthread_mutex_init(&cc->mu, NULL);
	pthread_cond_init(&cc->cv, NULL);
	cc->lost_s = 30;
}

int mtc_coord_client_lost(struct mtc_coord_client *cc)
{
	double ok = atomic_load(&cc->last_ok);
	return ok > 0 && mtc_now() - ok > cc->lost_s;
}

static int cancelled(struct mtc_coord_client *cc)
{
	return (cc->cancel && *cc->cancel) || atomic_load(&cc->stop);
}

/* Aborts a long poll when the coordinator is lost (heartbeats unanswered) or on cancel. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct mtc_coord_client *cc = arg;
	return cancelled(cc) || mtc_coord_client_lost(cc);
}

/*
 * One HTTP POST, on keep's connection when given (kept open for the next),
 * else on a connection of its own. MTC_OK with the parsed JSON answer and its
 * HTTP code, MTC_FAILURE with err (transport: worth a retry; *refused 1 when
 * nothing listens at the address), or MTC_USAGE with err when no retry can help
 * (the URL's scheme against the TLS set-up).
 */
static enum mtc_result post_once(struct mtc_coord_client *cc, CURL *keep, const char *kind,
				 const char *body, double timeout_s, json_t **answer, long *code,
				 int *refused, char *err, size_t errlen)
{
	CURL *h = keep ? keep : curl_easy_init();
	struct curl_slist *hdr = NULL;
	struct mtc_buf b = MTC_BUF_INIT(ANSWER_MAX);
	char errbuf[CURL_ERROR_SIZE], *url = xasprintf("%s/v1/coord/%s", cc->url, kind);
	struct mtc_http_opts o = { .url = url,
				   .token = cc->token,
				   .idempotent = 1,
				   .tls = mtc_tls_curl,
				   .timeout_s = timeout_s,
				   .connect_s = 5 };
	CURLcode rc;
	json_error_t jerr;

	*answer = NULL;
	if (keep)
		curl_easy_reset(keep);
	if (mtc_http_setup(h, &o, &hdr, errbuf, err, errlen) < 0) {
		if (!keep)
			curl_easy_cleanup(h);
		curl_slist_free_all(hdr);
		free(url);
		return MTC_USAGE;
	}
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "Expect:");
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mtc_http_to_buf);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (keep && !strncasecmp(cc->url, "https://", 8))
		curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L); /* the next resumes its TLS session */
	if (strcmp(kind, "heartbeat")) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, cc);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
	*refused = 0;
	if (rc == CURLE_COULDNT_CONNECT) {
		long os_errno = 0;
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
		*refused = os_errno == ECONNREFUSED;
	}
	if (rc != CURLE_OK && atomic_load(&cc->last_ok) == 0) {
		long sent = 0;
		/* A report that reached the coordinator before the connection broke is a first contact. */
		if (curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK && sent > 0)
			atomic_store(&cc->last_ok, mtc_now());
	}
	if (!keep)
		curl_easy_cleanup(h);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "cannot reach the coordinator '%s': %s", url,
			 *errbuf ? errbuf : curl_easy_strerror(rc));
		free(url);
		mtc_buf_free(&b);
		return MTC_FAILURE;
	}
	atomic_store(&cc->last_ok, mtc_now());
	atomic_store(&cc->said_unreachable, 0);
	*answer = b.p ? json_loadb(b.p, b.len, 0, &jerr) : NULL;
	if (!json_is_object(*answer)) {
		snprintf(err, errlen, "coordinator '%s' answered HTTP %ld without JSON: %.80s", url,
			 *code, mtc_buf_str(&b));
		json_decref(*answer);
		*answer = NULL;
		free(url);
		mtc_buf_free(&b);
		return MTC_FAILURE;
	}
	free(url);
	mtc_buf_free(&b);
	return MTC_OK;
}

/*
 * Heartbeats go on one kept handle and connection: at 16,384 ranks every 5 s
 * a new connection each would cost the coordinator an accept 3,000 times a
 * second. Over TLS the connection is closed after each (the daemon relays
 * each TLS connection with a thread of its own, and a kept one a rank would
 * hold a thread a rank for good); the next resumes the handle's TLS session
 * instead of a full handshake.
 */
static void *heartbeat_main(void *arg)
{
	struct mtc_coord_client *cc = arg;
	char *body = xasprintf("{\"rank\":%d,\"session\":\"%s\"}", cc->rank, cc->session), err[512];
	CURL *keep = curl_easy_init();

	pthread_mutex_lock(&cc->mu);
	while (!atomic_load(&cc->stop)) {
		struct timespec ts;
		json_t *a;
		long code;
		int refused;
		pthread_mutex_unlock(&cc->mu);
		if (post_once(cc, keep, "heartbeat", body, 10, &a, &code, &refused, err, sizeof err) !=
		    MTC_OK)
			mtc_debug("heartbeat: %s", err);
		json_decref(a);
		pthread_mutex_lock(&cc->mu);
		ts = mtc_wall_after(cc->heartbeat_s);
		if (!atomic_load(&cc->stop))
			pthread_cond_timedwait(&cc->cv, &cc->mu, &ts);
	}
	pthread_mutex_unlock(&cc->mu);
	curl_easy_cleanup(keep);
	free(body);
	return NULL;
}

void mtc_coord_client_heartbeat(struct mtc_coord_client *cc, double interval_s)
{
	if (cc->heartbeat_running || interval_s <= 0)
		return;
	cc->heartbeat_s = interval_s;
	cc->lost_s = interval_s * 6 < 3 ? 3 : interval_s * 6;
	if (pthread_create(&cc->heartbeat, NULL, heartbeat_main, cc) == 0)
		cc->heartbeat_running = 1;
}

void mtc_coord_client_close(struct mtc_coord_client *cc)
{
	pthread_mutex_lock(&cc->mu);
	atomic_store(&cc->stop, 1);
	pthread_cond_broadcast(&cc->cv);
	pthread_mutex_unlock(&cc->mu);
	if (cc->heartbeat_running)
		pthread_join(cc->heartbeat, NULL);
	cc->heartbeat_running = 0;
	pthread_cond_destroy(&cc->cv);
	pthread_mutex_destroy(&cc->mu);
	free(cc->url);
	free(cc->token);
	cc->url = cc->token = NULL;
}

enum mtc_result mtc_coord_post(struct mtc_coord_client *cc, const char *kind, json_t *report,
			       double wait_s, double deadline, json_t **answer, char *err, size_t errlen)
{
	json_t *r = json_deep_copy(report);
	char *body;
	struct mtc_retry retry;
	const char *status;
	int rc, refused;

	*answer = NULL;
	err[0] = '\0';
	json_object_set_new(r, "rank", json_integer(cc->rank));
	json_object_set_new(r, "session", json_string(cc->session));
	if (wait_s >= 0)
		json_object_set_new(r, "wait", json_real(wait_s));
	body = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	mtc_retry_init(&retry, MTC_BACKOFF_COORD, deadline);
	for (;;) {
		json_t *a;
		long code = 0;
		double left = deadline - mtc_now();
		if (left <= 0) {
			free(body);
			if (!*err)
				snprintf(err, errlen, "no answer from the coordinator '%s'", cc->url);
			return MTC_TIMEOUT;
		}
		if (cancelled(cc)) {
			free(body);
			snprintf(err, errlen, "stopped while waiting for the coordinator '%s'", cc->url);
			return MTC_FAILURE;
		}
		if (*err && mtc_coord_client_lost(cc)) {
			char why[512];
			snprintf(why, sizeof why, "%s", err);
			free(body);
			snprintf(err, errlen, "lost the coordinator '%s' (no answer for %.0f s): %s",
				 cc->url, mtc_now() - atomic_load(&cc->last_ok), why);
			return MTC_FAILURE;
		}
		err[0] = '\0';
		rc = post_once(cc, NULL, kind, body, (wait_s >= 0 ? wait_s : 60) + 30, &a, &code,
			       &refused, err, errlen);
		if (rc == MTC_USAGE) {
			free(body);
			return MTC_FAILURE;
		}
		if (rc != MTC_OK || code == 503) {
			if (a)
				snprintf(err, errlen, "coordinator '%s': %s", cc->url,
					 json_string_value(json_object_get(a, "error"))
						 ?: "unavailable");
			json_decref(a);
			if (refused && !atomic_exchange(&cc->said_unreachable, 1))
				mtc_warn("cannot reach the coordinator '%s': connection refused; retrying for up to %.0f s",
					 cc->url, deadline - mtc_now());
			mtc_debug("%s: %s; retrying", kind, err);
			if ((refused ? mtc_retry_wait_refused(&retry) : mtc_retry_wait(&retry)) < 0) {
				free(body);
				return MTC_TIMEOUT;
			}
			continue;
		}
		free(body);
		status = json_string_value(json_object_get(a, "status"));
		if (code == 200 && status && !strcmp(status, "done")) {
			*answer = a;
			return 0;
		}
		if (code == 200 && status && !strcmp(status, "waiting")) {
			json_decref(a);
			return 0;
		}
		snprintf(err, errlen, "%s",
			 json_string_value(json_object_get(a, "error"))
				 ?: "the coordinator refused the report");
		json_decref(a);
		return MTC_FAILURE;
	}
}

enum mtc_result mtc_coord_call(struct mtc_coord_client *cc, const char *kind, json_t *report,
			       double deadline, json_t **answer, char *err, size_t errlen)
{
	for (;;) {
		double left = deadline - mtc_now();
		int rc = mtc_coord_post(cc, kind, report,
					left > 20  ? 20
					: left > 0 ? left
						   : 0,
					deadline, answer, err, errlen);
		if (rc != 0 || *answer)
			return rc;
	}
}
