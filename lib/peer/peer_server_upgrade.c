#include "peer_server_int.h"

static void sock_send(struct mtc_peer_server *s, int sock, const char *buf, size_t len)
{
	while (len) {
		struct pollfd p = { .fd = sock, .events = POLLOUT };
		ssize_t n = send(sock, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
			return;
		} else if (n < 0 && errno == EAGAIN && poll(&p, 1, s->o.timeout_s * 1000) <= 0) {
			return;
		}
	}
}

/*
 * After an answer that cut the stream short: reads and drops what the
 * client still sends (for a few seconds at most), so that closing does
 * not reset the connection before the client has read the answer.
 */
static void drain(int sock)
{
	double end = mtc_now() + 5;
	char buf[65536];

	shutdown(sock, SHUT_WR);
	while (mtc_now() < end) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		ssize_t n;
		if (poll(&p, 1, 250) < 0 && errno != EINTR)
			return;
		n = recv(sock, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

/* After a GET's 101: the stream by sendfile, then the connection closes. */
static void send_tree(struct req *r, int sock)
{
	struct mtc_http_call p = { .body = r->send,
				   .deadline = mtc_now() + 1e9,
				   .stall_s = r->s->o.timeout_s,
				   .stop = (const int *)&r->s->stopping };
	char why[512];
	int rc = mtc_http_send_body(&p, sock, why, sizeof why);

	r->bytes = p.sent;
	atomic_fetch_add(&r->s->bytes_out, p.sent);
	if (rc)
		mtc_warn("sending '%s': %s", r->name, rc == 1 ? "the client went away" : why);
}

/*
 * After the 101: the tree (or piece) arrives on the socket itself and is
 * extracted from it (mtc_wire_extract_sock); the answer is written
 * on the socket as an HTTP response, then the connection is closed.
 * Runs in the connection's own thread; r stays owned by MHD's request
 * (psrv_completed() frees it once the connection is closed).
 */
void psrv_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
		   size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct req *r = con_cls;
	struct mtc_peer_server *s = r->s;
	struct mtc_wire_limits lim = psrv_server_limits(s);
	char xwhy[512], why[1024], *answer;
	long long consumed = 0;
	unsigned code;
	int rc;

	if (r->kind == REQ_GET_TREE_SOCK) {
		send_tree(r, sock);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		return;
	}
	rc = mtc_wire_extract_sock(sock, extra_in, extra_in_size, s->o.timeout_s,
				   (const int *)&s->stopping, r->sess->obj, &lim, &r->sess->exp->m,
				   &r->got, &consumed, xwhy, sizeof xwhy);
	r->bytes = consumed;
	atomic_fetch_add(&s->bytes_in, consumed);
	code = psrv_tree_outcome(r, rc, xwhy, why, sizeof why);
	answer = xasprintf("HTTP/1.1 %u %s\r\nServer: mtc-replicate\r\nContent-Type: " TEXT
			   "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
			   code, MHD_get_reason_phrase_for(code), strlen(why) + 1, why);
	atomic_fetch_add(&s->codes[code < 600 ? code : 0], 1);
	atomic_fetch_add(&s->bytes_out, (long long)strlen(why) + 1);
	sock_send(s, sock, answer, strlen(answer));
	free(answer);
	if (code >= 300)
		drain(sock);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

enum MHD_Result psrv_start_upgrade(struct req *r, struct MHD_Connection *c)
{
	struct MHD_Response *resp = MHD_create_response_for_upgrade(psrv_upgraded, NULL);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, UPGRADE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
	return psrv_queue(r, c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}
