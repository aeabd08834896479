#include "peer_server_int.h"

void mtc_peer_server_defaults(struct mtc_peer_server_opts *o)
{
	memset(o, 0, sizeof *o);
	o->listen = "127.0.0.1:7070";
	o->max_body = 0;
	o->max_files = 1000000;
	o->max_depth = 64;
	o->max_connections = 256;
	o->max_conns_per_ip = 64;
	o->max_unauth = 64;
	o->head_timeout_s = 10;
	o->timeout_s = 120;
	o->min_rate = 64 << 10;
	o->session_timeout_s = 600;
	o->upload_class = MTC_BG_IDLE;
}

/* 1 when the request carries the job's secret or a rank's credential (peer_auth.h), with who it is in *who. */
static int authorized(struct mtc_peer_server *s, struct MHD_Connection *c, struct mtc_peer_cred *who)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	return mtc_peer_auth_check(s->auth, h, who) == 0;
}

/* ---- routing ---- */

/* A coordinator request: its endpoint and declared size are judged before any body is read. */
static enum MHD_Result admit_route(struct req *r, struct MHD_Connection *c, const char *url,
				   const char *method)
{
	struct mtc_peer_server *s = r->s;
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	size_t max = ROUTE_BODY_MAX;
	char why[256] = "";
	int code = s->o.route_admit
			   ? s->o.route_admit(s->o.route_arg, method, url, &max, why, sizeof why)
			   : 0;

	if (max > ROUTE_BODY_MAX)
		max = ROUTE_BODY_MAX;
	if (!code && cl && strtoull(cl, NULL, 10) > max) {
		code = MHD_HTTP_CONTENT_TOO_LARGE;
		snprintf(why, sizeof why, "a body of %s bytes; this endpoint takes at most %zu", cl,
			 max);
	}
	if (!code) {
		long long want = cl ? (long long)strtoull(cl, NULL, 10) : (long long)max,
			  held = atomic_load(&s->route_held);
		do {
			if (held > 0 && held + want > ROUTE_HELD_MAX) {
				code = MHD_HTTP_SERVICE_UNAVAILABLE;
				snprintf(why, sizeof why, "too many reports arriving at once: retry");
				break;
			}
		} while (!atomic_compare_exchange_weak(&s->route_held, &held, held + want));
		if (!code)
			r->held = want;
		if (cl && (size_t)want < max)
			max = (size_t)want;
	}
	if (code)
		return psrv_respond(r, c, (unsigned)code, "application/json",
				    "{\"status\":\"error\",\"error\":\"%s\"}\n", why);
	r->kind = REQ_ROUTE;
	mtc_buf_init(&r->body, max);
	if (cl)
		mtc_buf_reserve(&r->body, max); /* its Content-Length: no copy as it grows */
	r->url = xstrdup(url);
	r->method = xstrdup(method);
	return MHD_YES;
}

/*
 * 1 with a 403 queued in *rc when the request's credential may not write for
 * rank of job (rank -1: data, for no rank in particular; peer_auth.h).
 */
static int refused_writer(struct req *r, struct MHD_Connection *c, const char *job, int rank,
			  enum MHD_Result *rc)
{
	char why[384];
	if (!mtc_cred_may_write(&r->who, r->s->o.strict_ranks, job, rank, why, sizeof why))
		return 0;
	if (mtc_peer_auth_first_refusal(r->s->auth, rank >= 0 ? rank : r->who.rank))
		mtc_warn("refused '%s': %s", r->name[0] ? r->name : "an upload", why);
	*rc = psrv_respond(r, c, MHD_HTTP_FORBIDDEN, TEXT, "%s\n", why);
	return 1;
}

static enum MHD_Result route(struct req *r, struct MHD_Connection *c, const char *url,
			     const char *method)
{
	struct mtc_peer_server *s = r->s;
	int get = !strcmp(method, "GET"), head = !strcmp(method, "HEAD"), put = !strcmp(method, "PUT");
	struct mtc_ckpt_name n;
	const char *name;
	char *path;
	enum req_kind kind;
	enum MHD_Result rc;

	/* Probes and metrics are read without the token (kubelet, Prometheus): they say nothing of the data. */
	if (!strcmp(url, "/healthz") && (get || head))
		return psrv_respond(r, c, MHD_HTTP_OK, TEXT, "ok\n");
	if (!strcmp(url, "/readyz") && (get || head))
		return !s->o.ready_file || access(s->o.ready_file, F_OK) == 0
			       ? psrv_respond(r, c, MHD_HTTP_OK, TEXT, "ready\n")
			       : psrv_respond(r, c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT,
					      "not ready: waiting for the training job or the restore\n");
	if (!strcmp(url, "/metrics") && get)
		return psrv_get_metrics(r, c);
	if (s->tls && !psrv_client_cert(s, c))
		return psrv_respond(r, c, MHD_HTTP_FORBIDDEN, TEXT,
				    "mutual TLS: this needs a client certificate signed by the job's CA\n");
	if (!authorized(s, c, &r->who))
		return psrv_respond(r, c, MHD_HTTP_UNAUTHORIZED, TEXT,
				    "missing or wrong bearer token\n");
	psrv_conn_head(s, c, 1);
	if (s->o.route && !strncmp(url, s->o.route_prefix, strlen(s->o.route_prefix)))
		return admit_route(r, c, url, method);
	if (!strcmp(url, "/v1/inventory") && get)
		return psrv_get_inventory(r, c);
	if (!strncmp(url, UPLOADS, strlen(UPLOADS))) {
		name = url + strlen(UPLOADS);
		if (!get && !head && refused_writer(r, c, NULL, -1, &rc))
			return rc;
		if (strcmp(method, "POST") || mtc_parse_data_name(name, r->hash))
			return psrv_session_request(r, c, name, method);
		snprintf(r->name, sizeof r->name, "%s", name);
		return psrv_open_session(r, c);
	}
	if (strncmp(url, OBJECTS, strlen(OBJECTS)))
		return psrv_respond(r, c, MHD_HTTP_NOT_FOUND, TEXT, "no such endpoint\n");
	name = url + strlen(OBJECTS);
	if (strlen(name) >= sizeof r->name)
		return psrv_respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT, "name too long\n");
	if (!mtc_parse_data_name(name, r->hash))
		kind = REQ_PUT_FILE;
	else if (!mtc_parse_ckpt_name(name, &n) && n.ext == MTC_EXT_META)
		kind = REQ_PUT_META;
	else if (psrv_manifest_name(name, r->hash) == 0)
		kind = REQ_PUT_MANIFEST;
	else
		return psrv_respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT,
				    "name is neither <hash>.data, <hash>.manifest nor "
				    "<job>-s<step>-n<rank>-w<worker>.meta (a job name is UTF-8 text, "
				    "not starting with '.')\n");
	snprintf(r->name, sizeof r->name, "%s", name);
	if (put && refused_writer(r, c, kind == REQ_PUT_META ? n.job : NULL,
				  kind == REQ_PUT_META ? n.rank : -1, &rc))
		return rc;
	if (put)
		return psrv_begin_put(r, c, kind);
	if (!get && !head)
		return psrv_respond(r, c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT, "method not allowed\n");
	if (kind == REQ_PUT_MANIFEST)
		return psrv_get_manifest(r, c, head);
	path = xasprintf("%s/%s", s->dir, name);
	rc = kind == REQ_PUT_FILE ? psrv_get_data(r, c, path, head) : psrv_get_meta(r, c, path, head);
	free(path);
	return rc;
}

/* A route's body is parsed or gone: its bytes no longer count (ROUTE_HELD_MAX). */
static void route_release(struct req *r)
{
	mtc_buf_free(&r->body);
	atomic_fetch_sub(&r->s->route_held, r->held);
	r->held = 0;
}

/* Called by the route under its lock: resumes the connection once it is suspended. */
static void route_wake(void *arg)
{
	struct req *r = arg;

	pthread_mutex_lock(&r->s->wake_mu);
	r->woken = 1;
	if (r->suspended) {
		r->suspended = 0;
		mtc_mhd_loop_resume(r->s->events_loop, r->conn); /* only the events daemon suspends */
	}
	pthread_mutex_unlock(&r->s->wake_mu);
}

/*
 * A route's answer. On the events daemon a report that waits for its round
 * suspends its connection until it is woken; this runs again on resume.
 */
static enum MHD_Result finish_route(struct req *r, struct MHD_Connection *c, int events)
{
	struct mtc_peer_server *s = r->s;
	struct MHD_Response *resp;
	char *answer = NULL;
	int code, suspended = 0;

	if (r->wait) {
		code = s->o.route_collect(s->o.route_arg, r->wait, &answer);
		r->wait = NULL;
	} else if (events) {
		r->conn = c;
		code = s->o.route_start(s->o.route_arg, &r->who, r->method, r->url, r->body.p,
					r->body.len, &answer, route_wake, r, &r->wait);
		route_release(r); /* parsed: a waiting report holds no copy of it */
		if (code == 0) {
			pthread_mutex_lock(&s->wake_mu);
			if (!r->woken) {
				r->suspended = suspended = 1;
				MHD_suspend_connection(c);
			}
			pthread_mutex_unlock(&s->wake_mu);
			if (suspended)
				return MHD_YES;
			code = s->o.route_collect(s->o.route_arg, r->wait, &answer);
			r->wait = NULL;
		}
	} else {
		code = s->o.route(s->o.route_arg, &r->who, r->method, r->url, r->body.p, r->body.len,
				  &answer);
		route_release(r);
	}
	resp = MHD_create_response_from_buffer(answer ? strlen(answer) : 0, answer ? answer : (void *)"",
					       answer ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	r->kind = REQ_OTHER;
	return psrv_queue(r, c, (unsigned)code, resp);
}

static int on_events(struct mtc_peer_server *s, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
	return s->events && ci && ci->daemon == s->events;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_data_size,
			      void **con_cls)
{
	struct req *r = *con_cls;
	char why[128];

	if (!r) {
		r = xcalloc(1, sizeof *r);
		r->s = cls;
		r->fd = -1;
		mtc_ring_init(&r->ring, 0);
		r->t0 = mtc_now();
		*con_cls = r;
		mtc_debug("%s %s", method, url);
		psrv_conn_head(r->s, c, 0);
		if (mtc_framing_check(c, why, sizeof why) < 0) {
			mtc_debug("refused %s %s: %s", method, url, why);
			r->close = 1; /* whatever follows on the connection is not a request */
			return psrv_respond(r, c, MHD_HTTP_BAD_REQUEST, TEXT, "%s\n", why);
		}
		/* the events daemon's single thread must never block: it serves the routes alone */
		if (on_events(r->s, c) &&
		    (strcmp(method, "POST") ||
		     strncmp(url, r->s->o.route_prefix, strlen(r->s->o.route_prefix))))
			return psrv_respond(r, c, MHD_HTTP_MISDIRECTED_REQUEST, TEXT,
					    "this connection carries coordinator reports only: "
					    "open another one\n");
		return route(r, c, url, method);
	}
	if (*upload_data_size) {
		size_t len = *upload_data_size;
		*upload_data_size = 0;
		return psrv_receive(r, upload_data, len);
	}
	if (r->kind == REQ_ROUTE)
		return finish_route(r, c, on_events(r->s, c));
	if (r->kind == REQ_PUT_META)
		return psrv_finish_meta(r, c);
	if (r->kind == REQ_PUT_MANIFEST)
		return psrv_finish_manifest(r, c);
	if (r->kind == REQ_PUT_TREE_SOCK)
		return psrv_start_upgrade(r, c);
	if (r->kind == REQ_PUT_FILE || r->kind == REQ_PUT_TREE)
		return psrv_finish_data(r, c);
	if (r->kind == REQ_PUT_RANGE)
		return psrv_finish_range(r, c);
	return MHD_NO;
}

void psrv_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode why)
{
	struct req *r = *con_cls;

	psrv_conn_answered(cls, c);
	if (!r)
		return;
	if (r->staging.path && why != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		mtc_warn("'%s': upload abandoned after %lld bytes (%s)", r->name, r->bytes,
			 why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED	 ? "timeout"
			 : why == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "shutdown"
									 : "connection lost");
	if (r->wait) { /* its connection went before the answer */
		char *answer = NULL;
		r->s->o.route_collect(r->s->o.route_arg, r->wait, &answer);
		free(answer);
	}
	psrv_remove_staging(r);
	mtc_wire_reader_close(r->send);
	route_release(r);
	free(r->why);
	free(r->extract_why);
	free(r->url);
	free(r->method);
	mtc_ring_free(&r->ring);
	free(r);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;
	if (mtc_log_level() < MTC_LOG_DEBUG)
		return;
	vsnprintf(line, sizeof line, fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ':'))
		line[--n] = '\0';
	mtc_debug("httpd: %s", line);
}

/* ---- lifecycle ---- */

static int parse_listen(const char *listen, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM },
			*res;
	int rc;

	if (strlen(listen) >= sizeof host) {
		snprintf(err, errlen, "listen address '%s' too long", listen);
		return -1;
	}
	strcpy(host, listen);
	if (host[0] == '[') {
		char *close = strchr(host, ']');
		if (!close || close[1] != ':') {
			snprintf(err, errlen, "bad listen address '%s'", listen);
			return -1;
		}
		*close = '\0';
		port = close + 2;
		memmove(host, host + 1, strlen(host + 1) + 1);
	} else {
		if (!(port = strrchr(host, ':'))) {
			snprintf(err, errlen, "listen address '%s' has no port", listen);
			return -1;
		}
		*port++ = '\0';
	}
	if (strspn(port, "0123456789") == strlen(port) &&
	    (!*port || strlen(port) > 5 || atoi(port) > 65535)) {
		snprintf(err, errlen, "listen address '%s': the port is 0 to 65535", listen);
		return -1;
	}
	rc = getaddrinfo(*host ? host : "0.0.0.0", port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "bad listen address '%s': %s", listen, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return 0;
}

static void log_leftover(const char *path, long long bytes, void *arg)
{
	mtc_info("removing leftover '%s' (%lld bytes)", path, bytes);
}

/* What a stopped daemon was receiving: pending manifests, and dead writers' temporaries. */
static void remove_leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, MTC_PENDING_MANIFEST, strlen(MTC_PENDING_MANIFEST))) {
			char *p = xasprintf("%s/%s", dir, e->d_name);
			mtc_info("removing leftover upload '%s'", p);
			unlink(p);
			free(p);
		}
	closedir(d);
	mtc_tmp_sweep(dir, 1, 1, log_leftover, NULL);
}

/* With TLS, the front hands over each client's plain end of its relay: MHD serves it as a connection. */
static void tls_hand_over(void *cls, int fd, const struct sockaddr *sa, socklen_t salen, int verified)
{
	struct mtc_peer_server *s = cls;

	pthread_mutex_lock(&s->conns_mu);
	if ((size_t)fd >= s->tls_client_cap) {
		size_t cap = (size_t)fd * 2 + 64;
		s->tls_client = xrealloc(s->tls_client, cap);
		memset(s->tls_client + s->tls_client_cap, 0, cap - s->tls_client_cap);
		s->tls_client_cap = cap;
	}
	s->tls_client[fd] = verified ? 2 : 1;
	pthread_mutex_unlock(&s->conns_mu);
	if (MHD_add_connection(s->daemon, fd, sa, salen) != MHD_YES) { /* MHD closed fd */
		pthread_mutex_lock(&s->conns_mu);
		s->tls_client[fd] = 0;
		pthread_mutex_unlock(&s->conns_mu);
	}
}

/* A listening socket on ss, for the TLS front or the sorter; -1 with err. */
static int listen_on(const struct sockaddr_storage *ss, const char *listen_s, char *err, size_t errlen)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return mtc_fail(err, errlen, "cannot listen on '%s': %s", listen_s, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
		mtc_fail(err, errlen, "cannot listen on '%s': %s", listen_s, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The sorter hands a connection to the events daemon or the main one; MHD closes fd on failure. */
static void sorted_hand_over(void *cls, int matched, int fd, const struct sockaddr *sa, socklen_t salen)
{
	struct mtc_peer_server *s = cls;
	if (matched)
		mtc_mhd_loop_add(s->events_loop, fd, sa, salen);
	else
		MHD_add_connection(s->daemon, fd, sa, salen);
}

/* The events daemon and the sorter in front of both daemons, on fd; -1 with err. */
static int start_events(struct mtc_peer_server *s, int fd, int ipv6, char *err, size_t errlen)
{
	char prefix[80];
	const struct mtc_peer_server_opts *o = &s->o;
	struct mtc_sorter_opts so = { .listen_fd = fd,
				      .prefix = prefix,
				      .max_pending = o->max_unauth,
				      .timeout_s = o->head_timeout_s > 0 ? o->head_timeout_s
									 : o->timeout_s,
				      .hand_over = sorted_hand_over,
				      .cls = s,
				      .cut_pending = &s->cut_unauth,
				      .cut_timeout = &s->cut_head };

	snprintf(prefix, sizeof prefix, "POST %s", o->route_prefix);
	s->events = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME |
					     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG |
					     (ipv6 ? MHD_USE_IPv6 : 0),
				     0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
				     MHD_OPTION_NOTIFY_COMPLETED, psrv_completed, s,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)EVENTS_CONN_MEMORY,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->max_conns_per_ip,
				     MHD_OPTION_NOTIFY_CONNECTION, psrv_conn_notify, s, MHD_OPTION_END);
	if (!s->events)
		return mtc_fail(err, errlen, "cannot start the coordinator's server: %s",
				errno ? strerror(errno) : "out of resources");
	if (!(s->events_loop = mtc_mhd_loop_start(s->events, EVENTS_PAUSE_MS, err, errlen))) {
		MHD_stop_daemon(s->events);
		s->events = NULL;
		return -1;
	}
	if (!(s->sorter = mtc_sorter_start(&so, err, errlen))) {
		mtc_mhd_loop_stop(s->events_loop);
		s->events_loop = NULL;
		s->events = NULL;
		return -1;
	}
	return 0;
}

static void server_free(struct mtc_peer_server *s)
{
	mtc_peer_auth_free(s->auth);
	mtc_bg_pool_free(s->pool);
	free(s->tls_client);
	free(s->dir);
	free(s);
}

struct mtc_peer_server *mtc_peer_server_start(const struct mtc_peer_server_opts *o, char *err,
					      size_t errlen)
{
	static const double buckets[] = { 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300 };
	struct mtc_peer_server *s;
	struct sockaddr_storage ss = { 0 }, bound;
	socklen_t blen = sizeof bound;
	const union MHD_DaemonInfo *info;
	char host[INET6_ADDRSTRLEN];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
	struct stat st;
	int front_fd = -1; /* the TLS front's or the sorter's */
	int sorted = o->route_start && o->route_collect && !o->tls_dir;

	if (stat(o->dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a directory", o->dir);
		return NULL;
	}
	if (parse_listen(o->listen, &ss, err, errlen) < 0)
		return NULL;
	if (!o->token_file && !o->insecure && !is_loopback(&ss)) {
		snprintf(err, errlen,
			 "refusing to listen on '%s' without --peer-token-file (use --insecure to allow)",
			 o->listen);
		return NULL;
	}
	if (!o->token_file && !is_loopback(&ss))
		mtc_warn("listening on '%s' beyond loopback with no token (--insecure): anyone who "
			 "reaches this address can read and replace this node's checkpoints",
			 o->listen);
	/*
	 * One malloc arena: a manifest checked in one connection's thread and
	 * freed leaves its pages to the next, in another thread, instead of
	 * each thread's arena keeping a manifest's worth (measured: 127 MB
	 * peak for four 16 MiB manifests at once with an arena per thread, 73
	 * with one).
	 */
	mallopt(M_ARENA_MAX, 1);
	s = xcalloc(1, sizeof *s);
	TAILQ_INIT(&s->conns);
	s->o = *o;
	s->dir = xstrdup(o->dir);
	s->pool = mtc_bg_pool_new(o->upload_class, mtc_cpu_count());
	pthread_mutex_init(&s->sessions_mu, NULL);
	pthread_mutex_init(&s->manifest_mu, NULL);
	pthread_mutex_init(&s->split_mu, NULL);
	pthread_cond_init(&s->manifest_cv, NULL);
	pthread_mutex_init(&s->conns_mu, NULL);
	pthread_cond_init(&s->conns_cv, NULL);
	if (o->token_file && !(s->auth = mtc_peer_auth_load(o->token_file, err, errlen))) {
		server_free(s);
		return NULL;
	}
	mtc_histogram_init(&s->seconds, buckets, (int)(sizeof buckets / sizeof *buckets));
	remove_leftovers(s->dir);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pthread_mutex_init(&s->wake_mu, NULL);
	if (o->tls_dir || sorted) {
		if ((front_fd = listen_on(&ss, o->listen, err, errlen)) < 0) {
			server_free(s);
			return NULL;
		}
		flags |= MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	}
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
				     mhd_log, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
				     MHD_OPTION_NOTIFY_COMPLETED, psrv_completed, s,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
				     MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (size_t)CONN_MEMORY / 4,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->max_conns_per_ip,
				     MHD_OPTION_NOTIFY_CONNECTION, psrv_conn_notify, s, MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "cannot listen on '%s': %s", o->listen,
			 errno ? strerror(errno) : "address in use or not available");
		if (front_fd >= 0)
			close(front_fd);
		server_free(s);
		return NULL;
	}
	if (sorted && start_events(s, front_fd, ss.ss_family == AF_INET6, err, errlen) < 0) {
		close(front_fd);
		MHD_stop_daemon(s->daemon);
		server_free(s);
		return NULL;
	}
	if (o->tls_dir) {
		struct mtc_tls_front_opts fo = {
			.dir = o->tls_dir,
			.listen_fd = front_fd,
			.max_handshakes = o->max_unauth,
			/* a handshake always has a deadline, the idle one at most */
			.handshake_timeout_s = o->head_timeout_s > 0 ? o->head_timeout_s : o->timeout_s,
			.idle_timeout_s = o->timeout_s,
			.hand_over = tls_hand_over,
			.cls = s
		};
		if (!(s->tls = mtc_tls_front_start(&fo, err, errlen))) {
			close(front_fd);
			MHD_stop_daemon(s->daemon);
			server_free(s);
			return NULL;
		}
		if (mtc_tls_kernel_available())
			mtc_info("TLS: the kernel offers TLS on sockets; /metrics counts the "
				 "connections it took over (mtc_peer_tls_kernel_total)");
		else
			mtc_info("TLS: this kernel has no TLS on sockets (no 'tls' in "
				 "tcp_available_ulp): records are en- and decrypted in user space");
	}
	if (pthread_create(&s->guard, NULL, psrv_guard_main, s)) {
		snprintf(err, errlen, "cannot start the connection guard: out of threads");
		if (s->tls)
			mtc_tls_front_stop(s->tls);
		mtc_sorter_stop(s->sorter);
		mtc_mhd_loop_stop(s->events_loop);
		MHD_stop_daemon(s->daemon);
		server_free(s);
		return NULL;
	}
	/* the port bound (port 0 picks one), by the front's socket or MHD's */
	info = front_fd < 0 ? MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_LISTEN_FD) : NULL;
	memset(&bound, 0, sizeof bound);
	getsockname(info ? info->listen_fd : front_fd, (struct sockaddr *)&bound, &blen);
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
	snprintf(s->address, sizeof s->address, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host,
		 ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						: ((struct sockaddr_in *)&bound)->sin_port));
	return s;
}

const char *mtc_peer_server_address(const struct mtc_peer_server *s) { return s->address; }

void mtc_peer_server_stop(struct mtc_peer_server *s)
{
	atomic_store(&s->stopping, 1);
	mtc_thread_stop(s->guard, &s->conns_mu, &s->conns_cv, &s->guard_stop);
	if (s->tls)
		mtc_tls_front_stop(s->tls);
	mtc_sorter_stop(s->sorter);
	mtc_mhd_loop_stop(s->events_loop);
	MHD_stop_daemon(s->daemon);
	while (s->sessions) {
		struct session *x = s->sessions;
		s->sessions = x->next;
		psrv_session_free(s, x);
	}
	pthread_mutex_destroy(&s->sessions_mu);
	pthread_mutex_destroy(&s->manifest_mu);
	psrv_split_free(s->split);
	pthread_mutex_destroy(&s->split_mu);
	pthread_cond_destroy(&s->manifest_cv);
	pthread_mutex_destroy(&s->conns_mu);
	pthread_cond_destroy(&s->conns_cv);
	pthread_mutex_destroy(&s->wake_mu);
	remove_leftovers(s->dir);
	server_free(s);
}
