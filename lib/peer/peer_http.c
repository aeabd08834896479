#include "peer_http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "http.h"
#include "log.h"
#include "tls.h"
#include "xalloc.h"

#define CONNECT_TIMEOUT_S 10
#define HEAD_MAX (64 << 10)
#define STOP_POLL_MS 250

struct target {
	char host[256], port[8];
	char *path; /* the path and query the request line carries */
	int tls;    /* https:// (tls.h) */
};

/* url read by curl_url(): http:// or https://, no credentials in it. 0, or -1. */
static int parse_url(const char *url, struct target *t)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL, *user = NULL;
	const char *h;
	size_t hl;
	int rc = -1;

	t->path = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_NO_USER)
		goto out;
	t->tls = !strcasecmp(scheme, "https");
	if (!t->tls && strcasecmp(scheme, "http"))
		goto out;
	h = host;
	hl = strlen(h);
	if (*h == '[') { /* an IPv6 address: the socket wants it bare */
		h++;
		hl -= 2;
	}
	if (!hl || hl >= sizeof t->host || strlen(port) >= sizeof t->port)
		goto out;
	memcpy(t->host, h, hl);
	t->host[hl] = '\0';
	strcpy(t->port, port);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	t->path = query ? xasprintf("%s?%s", path, query) : xstrdup(path);
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_free(user);
	curl_url_cleanup(u);
	return rc;
}

int mtc_http_usable(const char *url)
{
	static const char *const proxies[] = { "http_proxy",  "HTTP_PROXY", "https_proxy",
					       "HTTPS_PROXY", "all_proxy",  "ALL_PROXY" };
	struct target t;

	for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++) {
		const char *v = getenv(proxies[i]);
		if (v && *v)
			return 0;
	}
	if (parse_url(url, &t) < 0)
		return 0;
	free(t.path);
	return !t.tls || mtc_tls_client_on();
}

/*
 * Milliseconds to wait: the stall limit, within the deadline; 0 when the
 * deadline passed. *by_deadline (may be NULL): 1 when the deadline is the nearer.
 */
static int wait_ms(const struct mtc_http_call *p, int *by_deadline)
{
	double left = p->deadline - mtc_now();
	double ms = left < p->stall_s ? left * 1000 : p->stall_s * 1000.0;
	if (by_deadline)
		*by_deadline = left < p->stall_s;
	return ms <= 0 ? 0 : ms < 1 ? 1 : (int)ms;
}

static int stopped(const struct mtc_http_call *p)
{
	return p->stop && __atomic_load_n(p->stop, __ATOMIC_RELAXED);
}

/* poll(2) on one fd for up to ms, ending early (0) once *p->stop is set. */
static int poll_one(const struct mtc_http_call *p, struct pollfd *pfd, int ms)
{
	int n;

	for (double end = mtc_now() + ms / 1000.0;;) {
		int slice = p->stop ? (ms < STOP_POLL_MS ? ms : STOP_POLL_MS) : ms;
		n = poll(pfd, 1, slice);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 0 || stopped(p))
			return n;
		if ((ms = (int)((end - mtc_now()) * 1000)) <= 0)
			return 0;
	}
}

/* Waits for events on fd: 1 ready (revents), 0 the wait ran out (-2 deadline, -1 stall in *rc). */
static int wait_for(const struct mtc_http_call *p, int fd, short events, short *revents, int *rc,
		    char *err, size_t errlen)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int by_deadline, ms = wait_ms(p, &by_deadline), n;

	if (ms == 0) {
		snprintf(err, errlen, "deadline passed");
		*rc = MTC_HTTP_DEADLINE;
		return 0;
	}
	n = poll_one(p, &pfd, ms);
	if (n <= 0) {
		if (mtc_now() >= p->deadline || (n == 0 && by_deadline && !stopped(p))) {
			snprintf(err, errlen, "deadline passed");
			*rc = MTC_HTTP_DEADLINE;
		} else {
			snprintf(err, errlen, "no progress for %d s", p->stall_s);
			*rc = MTC_HTTP_UNREACHED;
		}
		return 0;
	}
	*revents = pfd.revents;
	return 1;
}

static int connect_to(const struct mtc_http_call *p, const struct target *t, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res, *ai;
	int rc = getaddrinfo(t->host, t->port, &hints, &res), fd = -1, e = 0;

	if (rc) {
		snprintf(err, errlen, "cannot resolve '%s': %s", t->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		struct pollfd pfd;
		socklen_t el = sizeof e;
		double left = p->deadline - mtc_now();
		int ms = left < CONNECT_TIMEOUT_S ? (int)(left * 1000) : CONNECT_TIMEOUT_S * 1000;
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		e = errno;
		if (e == EINPROGRESS) {
			pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
			e = ETIMEDOUT;
			if (ms > 0 && poll_one(p, &pfd, ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "cannot connect: %s", strerror(e));
	else if (t->tls)
		/* the handshake is one wait like any other: the stall limit, within the deadline */
		fd = mtc_tls_connect(fd, t->host, mtc_now() + wait_ms(p, NULL) / 1000.0, p->stop, err,
				     errlen);
	return fd;
}

/* Sends all of buf (MSG_MORE: the body follows). 0, -1/-2 with err, 1 when the peer answered or closed. */
static int send_all(struct mtc_http_call *p, int fd, const char *buf, size_t len, char *err,
		    size_t errlen)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_MORE);
		short ev;
		int rc;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return 1;
		if (!wait_for(p, fd, POLLOUT | POLLIN, &ev, &rc, err, errlen))
			return rc;
		if (ev & ~POLLOUT)
			return 1;
	}
	return 0;
}

int mtc_http_send_body(struct mtc_http_call *p, int fd, char *err, size_t errlen)
{
	char why[512];

	for (;;) {
		const char *mem = NULL;
		int src, rc;
		off_t off = 0;
		ssize_t n = mtc_wire_reader_peek(p->body, &mem, &src, &off, why, sizeof why);
		short ev;
		if (n < 0) {
			snprintf(err, errlen, "%s", why);
			return MTC_HTTP_LOCAL;
		}
		if (n == 0)
			return 0;
		if (src < 0) {
			if ((rc = send_all(p, fd, mem, (size_t)n, err, errlen)))
				return rc;
		} else {
			ssize_t k = sendfile(fd, src, &off, (size_t)n);
			if (k == 0) {
				snprintf(err, errlen, "a file shrank while being sent");
				return MTC_HTTP_LOCAL;
			}
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0 && errno == EAGAIN) {
				if (!wait_for(p, fd, POLLOUT | POLLIN, &ev, &rc, err, errlen))
					return rc;
				if (ev & ~POLLOUT)
					return 1;
				continue;
			}
			if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
				return 1;
			if (k < 0) {
				snprintf(err, errlen, "sending: %s", strerror(errno));
				return -1;
			}
			n = k;
		}
		mtc_wire_reader_advance(p->body, (size_t)n);
		p->sent += n;
	}
}

/* The value of the header name (with its colon) in head, or NULL. */
static const char *header(const char *head, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n"))
		if (!strncasecmp(l + 2, name, n))
			return l + 2 + n + strspn(l + 2 + n, " ");
	return NULL;
}

static long long content_length(const char *head)
{
	const char *v = header(head, "Content-Length:");
	return v ? strtoll(v, NULL, 10) : -1;
}

/* The answer is the range w asked for: "Content-Range: bytes A-B/SIZE", exactly. */
static int is_range(const char *head, const struct mtc_wire_entry *w)
{
	const char *v = header(head, "Content-Range:");
	long long a, b, size;
	return v && sscanf(v, "bytes %lld-%lld/%lld", &a, &b, &size) == 3 && a == w->off &&
	       b == w->off + w->size - 1 && size == w->file_size;
}

/*
 * Reads the answer: 0 with code and body, or -1/-2 with err. With
 * head_only a 200 stops after its headers: answer holds the body's first
 * bytes, *length its Content-Length.
 */
static int read_answer(struct mtc_http_call *p, int fd, int head_only, long long *length, char *err,
		       size_t errlen)
{
	int ranged = 0;
	char *buf = xmalloc(HEAD_MAX + 1), *end = NULL;
	size_t len = 0;
	long long want = -1;
	int rc;

	for (;;) {
		short ev;
		ssize_t n;
		if (end && want >= 0 && (long long)p->answer.len >= want)
			break;
		if (!end && len == HEAD_MAX) {
			snprintf(err, errlen, "answer headers too long");
			free(buf);
			return -1;
		}
		if (!wait_for(p, fd, POLLIN, &ev, &rc, err, errlen)) {
			free(buf);
			return rc;
		}
		if (!end) {
			n = recv(fd, buf + len, HEAD_MAX - len, 0);
		} else {
			char chunk[65536];
			n = recv(fd, chunk, sizeof chunk, 0);
			if (n > 0)
				mtc_buf_append(&p->answer, chunk, (size_t)n); /* past the cap: cut */
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && !end) {
			snprintf(err, errlen, "receiving the answer: %s", strerror(errno));
			free(buf);
			return -1;
		}
		if (n <= 0)
			break;
		if (end)
			continue;
		len += (size_t)n;
		buf[len] = '\0';
		if (!(end = strstr(buf, "\r\n\r\n")))
			continue;
		if (sscanf(buf, "HTTP/%*d.%*d %ld", &p->code) != 1) {
			snprintf(err, errlen, "not an HTTP answer");
			free(buf);
			return -1;
		}
		end[2] = '\0';
		want = content_length(buf);
		if (length)
			*length = want;
		if (p->code == 206 && p->range && !(ranged = is_range(buf, p->range))) {
			snprintf(err, errlen, "a 206 that is not the range asked for");
			free(buf);
			return -1;
		}
		if (p->code == 101 || (head_only && (p->code == 200 || ranged)))
			want = 0; /* the stream follows */
		end += 4;
		mtc_buf_init(&p->answer, MTC_HTTP_ANSWER_MAX);
		mtc_buf_append(&p->answer, end, len - (size_t)(end - buf));
	}
	free(buf);
	if (!end || (want >= 0 && (long long)p->answer.len < want)) {
		snprintf(err, errlen, "connection closed before the answer");
		p->code = 0;
		return -1;
	}
	return 0;
}

/*
 * Connects to p->url and sends the request's head: method, path, Host,
 * the token, then extra (header lines, each ending in CRLF). 0 or 1 as
 * send_all with the socket in *fd, or -1/-2 with err (*fd is -1 when no
 * connection was made).
 */
static int send_head(struct mtc_http_call *p, const char *method, const char *extra, int *fd, char *err,
		     size_t errlen)
{
	struct target t;
	char *head, *auth;
	int rc;

	*fd = -1;
	if (parse_url(p->url, &t) < 0) {
		snprintf(err, errlen, "not an http:// or https:// URL");
		return -1;
	}
	if ((*fd = connect_to(p, &t, err, errlen)) < 0) {
		free(t.path);
		return -1;
	}
	auth = p->token ? mtc_http_bearer(p->token) : NULL;
	head = xasprintf("%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\n%s%s%s\r\n", method, t.path,
			 strchr(t.host, ':') ? "[" : "", t.host, strchr(t.host, ':') ? "]" : "", t.port,
			 auth ? auth : "", auth ? "\r\n" : "", extra);
	rc = send_all(p, *fd, head, strlen(head), err, errlen);
	free(head);
	free(auth);
	free(t.path);
	return rc;
}

enum mtc_http_end mtc_http_put(struct mtc_http_call *p, char *err, size_t errlen)
{
	char range[96] = "";
	char *extra;
	int fd, rc, one = 1;

	if (p->range)
		snprintf(range, sizeof range, "Content-Range: bytes %lld-%lld/%lld\r\n", p->range->off,
			 p->range->off + p->range->size - 1, p->range->file_size);
	extra = xasprintf("Content-Type: %s\r\nContent-Length: %lld\r\n%sConnection: %s\r\n",
			  p->content_type, p->upgrade ? 0 : p->length, range,
			  p->upgrade ? "Upgrade\r\nUpgrade: " MTC_HTTP_UPGRADE : "close");

	p->code = 0;
	p->sent = 0;
	rc = send_head(p, "PUT", extra, &fd, err, errlen);
	free(extra);
	if (fd < 0)
		return rc;
	if (rc == 0 && p->upgrade) {
		/* the body goes only once the daemon has switched to the stream */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		rc = read_answer(p, fd, 0, NULL, err, errlen);
		if (rc < 0 || p->code != 101) {
			close(fd);
			return rc;
		}
		mtc_buf_free(&p->answer);
		p->code = 0;
		one = 0;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		one = 1;
	}
	if (rc == 0)
		rc = mtc_http_send_body(p, fd, err, errlen);
	if (rc >= 0) {
		/* pushes out what MSG_MORE held back */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		rc = read_answer(p, fd, 0, NULL, err, errlen);
	}
	close(fd);
	return rc;
}

enum mtc_http_end mtc_http_get(struct mtc_http_call *p, char *err, size_t errlen)
{
	long long length = -1;
	int fd, rc;

	char *extra = p->root	 ? xstrdup("Connection: Upgrade\r\nUpgrade: " MTC_HTTP_UPGRADE "\r\n")
		      : p->range ? xasprintf("Range: bytes=%lld-%lld\r\nConnection: close\r\n",
					     p->range->off, p->range->off + p->range->size - 1)
				 : xstrdup("Connection: close\r\n");
	p->code = 0;
	p->received = 0;
	rc = send_head(p, "GET", extra, &fd, err, errlen);
	free(extra);
	if (fd < 0)
		return rc;
	if (rc >= 0) {
		int one = 1; /* pushes out what MSG_MORE held back */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		rc = read_answer(p, fd, 1, &length, err, errlen);
	}
	if (rc == 0 && (p->code == 101 || p->code == 200 || (p->code == 206 && p->range))) {
		char why[512];
		struct mtc_wire_entry whole = { .size = length };
		int x = p->root ? (mtc_wire_extract_sock(fd, p->answer.p, p->answer.len, p->stall_s,
							 p->stop, p->root, p->limits, p->expected,
							 p->got, &p->received, why, sizeof why)
					   ? -1
					   : 0)
			: p->range && p->code != 206
				? mtc_fail(why, sizeof why,
					   "the whole file came, not the range asked for")
			: length < 0 || (p->range && length != p->range->size)
				? mtc_fail(why, sizeof why, "no Content-Length, or not the range's")
				: mtc_wire_receive(fd, p->answer.p, p->answer.len, p->stall_s, p->stop,
						   p->fd, p->range ? p->range : &whole, &p->received,
						   why, sizeof why);
		if (x == 0 && !p->root && !p->range)
			memcpy(p->digest, whole.digest, sizeof p->digest);
		if (x == 0 && p->root && p->code == 200 && p->received != length)
			x = mtc_fail(why, sizeof why, "the stream is %lld bytes, the answer said %lld",
				     p->received, length);
		if (x < 0) {
			snprintf(err, errlen, "%s", why);
			rc = MTC_HTTP_LOCAL;
		} else {
			p->code = 200;
		}
		mtc_buf_free(&p->answer);
	}
	close(fd);
	return rc;
}
