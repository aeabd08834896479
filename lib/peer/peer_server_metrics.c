#include "peer_server_int.h"

static void node_metrics(struct mtc_peer_server *s, struct mtc_buf *t)
{
	struct mtc_node_status st;
	struct statvfs fs;

	if (mtc_node_status_read(s->dir, &st) == 0)
		mtc_node_status_metrics(&st, t);
	if (statvfs(s->dir, &fs) == 0) {
		mtc_metric_header(t, "mtc_local_dir_size_bytes", "gauge",
				  "size of the local dir's filesystem");
		mtc_metric_value(t, "mtc_local_dir_size_bytes", NULL, (double)fs.f_blocks * fs.f_frsize);
		mtc_metric_header(t, "mtc_local_dir_free_bytes", "gauge", "free bytes there");
		mtc_metric_value(t, "mtc_local_dir_free_bytes", NULL, (double)fs.f_bavail * fs.f_frsize);
	}
}

enum MHD_Result psrv_get_metrics(struct req *r, struct MHD_Connection *c)
{
	struct mtc_peer_server *s = r->s;
	struct mtc_buf t = MTC_BUF_INIT(MTC_METRICS_MAX);
	enum MHD_Result rc;

	mtc_metric_header(&t, "mtc_peer_bytes_received_total", "counter", "request body bytes received");
	mtc_metric_value(&t, "mtc_peer_bytes_received_total", NULL, (double)atomic_load(&s->bytes_in));
	mtc_metric_header(&t, "mtc_peer_bytes_sent_total", "counter", "response body bytes sent");
	mtc_metric_value(&t, "mtc_peer_bytes_sent_total", NULL, (double)atomic_load(&s->bytes_out));
	mtc_metric_header(&t, "mtc_peer_requests_total", "counter", "requests answered, by HTTP code");
	for (int code = 100; code < 600; code++) {
		long long n = atomic_load(&s->codes[code]);
		char label[32];
		if (!n)
			continue;
		snprintf(label, sizeof label, "code=\"%d\"", code);
		mtc_metric_value(&t, "mtc_peer_requests_total", label, (double)n);
	}
	mtc_metric_header(&t, "mtc_peer_uploads_total", "counter", "data uploads by outcome");
	mtc_metric_value(&t, "mtc_peer_uploads_total", "result=\"published\"",
			 (double)atomic_load(&s->published));
	mtc_metric_value(&t, "mtc_peer_uploads_total", "result=\"present\"",
			 (double)atomic_load(&s->already_present));
	mtc_metric_value(&t, "mtc_peer_uploads_total", "result=\"rejected\"",
			 (double)atomic_load(&s->rejected));
	mtc_metric_header(&t, "mtc_peer_active_transfers", "gauge", "uploads in progress");
	mtc_metric_value(&t, "mtc_peer_active_transfers", NULL, (double)atomic_load(&s->active));
	mtc_metric_header(&t, "mtc_peer_connections_total", "counter", "connections accepted");
	mtc_metric_value(&t, "mtc_peer_connections_total", NULL, (double)atomic_load(&s->conns_opened));
	mtc_metric_header(&t, "mtc_peer_connections_open", "gauge", "connections open now");
	mtc_metric_value(&t, "mtc_peer_connections_open", NULL, (double)atomic_load(&s->conns_open));
	mtc_metric_header(&t, "mtc_peer_connections_cut_total", "counter",
			  "unauthenticated connections cut: beyond --max-unauth or past --head-timeout");
	mtc_metric_value(&t, "mtc_peer_connections_cut_total", "reason=\"unauthenticated\"",
			 (double)atomic_load(&s->cut_unauth));
	mtc_metric_value(&t, "mtc_peer_connections_cut_total", "reason=\"head-timeout\"",
			 (double)atomic_load(&s->cut_head));
	if (s->tls) {
		struct mtc_tls_front_counts k;
		mtc_tls_front_counts(s->tls, &k);
		mtc_metric_header(&t, "mtc_peer_tls_handshakes_total", "counter",
				  "TLS handshakes by how they ended: cut is beyond --max-unauth at once, "
				  "timeout past --head-timeout");
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"ok\"", (double)k.ok);
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"failed\"",
				 (double)k.failed);
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"timeout\"",
				 (double)k.timed_out);
		mtc_metric_value(&t, "mtc_peer_tls_handshakes_total", "result=\"cut\"", (double)k.cut);
		mtc_metric_header(&t, "mtc_peer_tls_kernel_total", "counter",
				  "TLS connections whose records the kernel en- or decrypts (kernel TLS), "
				  "by direction");
		mtc_metric_value(&t, "mtc_peer_tls_kernel_total", "direction=\"send\"",
				 (double)k.kernel_send);
		mtc_metric_value(&t, "mtc_peer_tls_kernel_total", "direction=\"psrv_receive\"",
				 (double)k.kernel_recv);
	}
	mtc_metric_header(&t, "mtc_peer_digest_failures_total", "counter",
			  "uploads whose content did not hash to their name");
	mtc_metric_value(&t, "mtc_peer_digest_failures_total", NULL,
			 (double)atomic_load(&s->digest_failures));
	mtc_metric_histogram(&t, "mtc_peer_transfer_seconds",
			     "seconds per data upload, hashed as it arrives", &s->seconds);
	node_metrics(s, &t);
	if (s->o.metrics)
		s->o.metrics(s->o.route_arg, &t);
	rc = psrv_respond(r, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", "%s",
			  mtc_buf_str(&t));
	mtc_buf_free(&t);
	return rc;
}

/* "<hash>.manifest" of a tree hash, parsed as the <hash>.data it belongs to. */
