#ifndef MTC_HTTP_H
#define MTC_HTTP_H

#include <stddef.h>

#include <curl/curl.h>

struct mtc_buf;

/*
 * The one HTTP client layer (mtc(7) §9.6): every request the programs
 * make (GCS, its token endpoints, the peers, the coordinator) is set up here. One pool:
 * a curl share of DNS answers and TLS sessions across every handle and
 * thread (a multi handle also reuses its connections). One place that
 * adds credentials. One retry policy (backoff.h): full jitter within a deadline, and
 * a call states whether it is idempotent: one that is not never goes on a
 * reused connection, which libcurl would resend on by itself. The peers'
 * raw-socket path (peer/peer_http.h) is a mode of the layer: it ends with
 * the same outcome (enum mtc_http_end) and the same header.
 */

/* Once, at each program's start-up: curl_global_init and the pool. */
void mtc_http_init(void);

/* How an exchange ended. */
enum mtc_http_end {
	MTC_HTTP_ANSWERED = 0,	 /* a status arrived (its body may be cut short) */
	MTC_HTTP_UNREACHED = -1, /* no answer: the connection failed, broke or stalled */
	MTC_HTTP_DEADLINE = -2,	 /* the time allowed ran out */
	MTC_HTTP_LOCAL = -3,	 /* our side failed: the body to send, or where the answer goes */
};

/* What every request states. */
struct mtc_http_opts {
	const char *url;
	const char *token; /* a bearer credential; NULL: none */
	int idempotent;	   /* may be sent twice: a reused connection is fine */
	/* a peer or the coordinator: the node's TLS set-up (peer/tls.h's mtc_tls_curl; h NULL: url checked only) */
	int (*tls)(CURL *h, const char *url, char *err, size_t errlen);
	double timeout_s; /* the whole exchange; 0: no limit */
	double connect_s; /* the connection's set-up */
	long stall_s;	  /* this long below 1 byte/s ends the exchange; 0: no limit */
	int bulk;	  /* large transfers: large buffers */
};

/*
 * Resets h for one request as o states: the pool, no signals, the time
 * limits, errbuf (CURL_ERROR_SIZE) for curl's reason, the peers' TLS (an
 * http:// url is refused once TLS is set up) and the Authorization header,
 * appended to *headers. The caller adds its method, body, callbacks and
 * headers, then sets CURLOPT_HTTPHEADER. 0, or -1 with err.
 */
int mtc_http_setup(CURL *h, const struct mtc_http_opts *o, struct curl_slist **headers, char *errbuf,
		   char *err, size_t errlen);

/*
 * One small exchange, its answer kept whole in answer (its cap bounds it):
 * method (NULL: GET, or POST with a body), the body as a string (NULL: none),
 * headers the caller's (still theirs to free). Returns the status, or 0 when
 * none came, with curl's reason in err and its code in *cc.
 */
long mtc_http_fetch(const struct mtc_http_opts *o, const char *method, const char *body,
		    struct curl_slist *headers, struct mtc_buf *answer, CURLcode *cc, char *err,
		    size_t errlen);

/* 0 when o may be sent as stated (the peers' TLS rule, tls.h), else -1 with err. */
int mtc_http_check(const struct mtc_http_opts *o, char *err, size_t errlen);

/* "Authorization: Bearer <token>" (malloc'd): the one place the header is built. */
char *mtc_http_bearer(const char *token);

/* A write callback that keeps the body in a struct mtc_buf (buf.h): past its cap, an error. */
size_t mtc_http_to_buf(char *p, size_t size, size_t n, void *buf);

/* The outcome of a transfer that libcurl ended with cc. */
enum mtc_http_end mtc_http_end_of(CURLcode cc);

/* 1 for an answer that another try may change: 408, 429 and 5xx. */
int mtc_http_transient(long status);

#endif
