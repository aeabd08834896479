#include "peer_server_int.h"

/* ---- the connection guard ---- */

/*
 * No lockout (mtc(7) §4): a connection is unauthenticated from its accept
 * until a request head with a valid token arrives on it (any whole head when
 * the daemon has no token). At most max_unauth of them are open: one more
 * cuts the oldest one not being answered, once that one has had
 * MTC_GUARD_BURST_S to send its head (a burst of younger ones may reach
 * twice the limit first; a flood must open twice max_unauth connections in
 * that second to cut a client that has just connected). An unauthenticated connection has head_timeout_s from its
 * accept (or its last answer) to the end of its next request head, however
 * slowly the head trickles in. The library refuses a connection beyond
 * max_conns_per_ip from one address or max_connections in all. So a flood
 * of half-open connections holds at most max_unauth slots, each for at most
 * head_timeout_s, and /healthz and the peers find room meanwhile.
 */

/* Under conns_mu. */
static void conn_cut(struct mtc_peer_server *s, struct conn *k, atomic_llong *counter)
{
	if (k->fd >= 0)
		shutdown(k->fd, SHUT_RDWR);
	k->cut = 1;
	if (!k->authed)
		s->unauth--;
	atomic_fetch_add(counter, 1);
}

void psrv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode code)
{
	struct mtc_peer_server *s = cls;
	struct conn *k = *socket_context, *old;

	pthread_mutex_lock(&s->conns_mu);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = xcalloc(1, sizeof *k);
		atomic_fetch_add(&s->conns_opened, 1);
		atomic_fetch_add(&s->conns_open, 1);
		k->fd = ci ? ci->connect_fd : -1;
		k->since = mtc_now();
		if (k->fd >= 0 && (size_t)k->fd < s->tls_client_cap) {
			k->psrv_client_cert = s->tls_client[k->fd] == 2;
			s->tls_client[k->fd] = 0;
		}
		TAILQ_INSERT_TAIL(&s->conns, k, link);
		*socket_context = k;
		if (++s->unauth > s->o.max_unauth && s->o.max_unauth > 0) {
			for (old = TAILQ_FIRST(&s->conns); old->authed || old->cut || old->in_request;)
				old = TAILQ_NEXT(old, link); /* k itself at the latest */
			if (mtc_guard_cuts(k->since - old->since, s->unauth, s->o.max_unauth)) {
				mtc_debug("%d unauthenticated connections: cutting the oldest",
					  s->unauth);
				conn_cut(s, old, &s->cut_unauth);
			}
		}
	} else if (k) {
		atomic_fetch_sub(&s->conns_open, 1);
		if (!k->authed) {
			if (!k->cut)
				s->unauth--;
			TAILQ_REMOVE(&s->conns, k, link);
		}
		free(k);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->conns_mu);
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
								     MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

int psrv_client_cert(struct mtc_peer_server *s, struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);
	int ok;

	pthread_mutex_lock(&s->conns_mu);
	ok = k && k->psrv_client_cert;
	pthread_mutex_unlock(&s->conns_mu);
	return ok;
}

/* A whole request head arrived on c; trusted: with a valid token (or none needed). */
void psrv_conn_head(struct mtc_peer_server *s, struct MHD_Connection *c, int trusted)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&s->conns_mu);
	k->in_request = 1;
	if (trusted && !k->authed) {
		k->authed = 1;
		if (!k->cut)
			s->unauth--;
		TAILQ_REMOVE(&s->conns, k, link);
	}
	pthread_mutex_unlock(&s->conns_mu);
}

/* c answered its request: the next head's deadline starts now. */
void psrv_conn_answered(struct mtc_peer_server *s, struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&s->conns_mu);
	k->in_request = 0;
	k->since = mtc_now();
	pthread_mutex_unlock(&s->conns_mu);
}

/*
 * Cuts unauthenticated connections past the head deadline, drops upload
 * sessions idle past theirs each second; warns of cuts now and then.
 */
void *psrv_guard_main(void *arg)
{
	struct mtc_peer_server *s = arg;
	long long warned = 0;
	double warned_at = 0, reaped_at = mtc_now();

	pthread_mutex_lock(&s->conns_mu);
	while (!s->guard_stop) {
		struct timespec until;
		double now;
		long long cuts;

		until = mtc_wall_after(GUARD_TICK_NS / 1e9);
		pthread_cond_timedwait(&s->conns_cv, &s->conns_mu, &until);
		now = mtc_now();
		for (struct conn *k = TAILQ_FIRST(&s->conns); k && s->o.head_timeout_s > 0;
		     k = TAILQ_NEXT(k, link))
			if (!k->authed && !k->cut && !k->in_request &&
			    now - k->since > s->o.head_timeout_s)
				conn_cut(s, k, &s->cut_head);
		if (now - reaped_at >= 1) {
			pthread_mutex_unlock(&s->conns_mu);
			psrv_reap_sessions(s);
			pthread_mutex_lock(&s->conns_mu);
			reaped_at = now;
		}
		cuts = atomic_load(&s->cut_unauth) + atomic_load(&s->cut_head);
		if (cuts > warned && now - warned_at >= GUARD_WARN_S) {
			mtc_warn("cut %lld unauthenticated connections so far (%lld beyond --max-unauth, "
				 "%lld past --head-timeout): a client opens connections and sends no "
				 "valid request",
				 cuts, (long long)atomic_load(&s->cut_unauth),
				 (long long)atomic_load(&s->cut_head));
			warned = cuts;
			warned_at = now;
		}
	}
	pthread_mutex_unlock(&s->conns_mu);
	return NULL;
}
