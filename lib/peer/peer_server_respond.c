/* Every answer of the daemon goes out here, counted by its code (see peer_server_int.h). */
#include "peer_server_int.h"

enum MHD_Result psrv_queue(struct req *r, struct MHD_Connection *c, unsigned code,
			   struct MHD_Response *resp)
{
	enum MHD_Result rc;
	atomic_fetch_add(&r->s->codes[code < 600 ? code : 0], 1);
	MHD_add_response_header(resp, "Server", "mtc-replicate");
	rc = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result psrv_respond(struct req *r, struct MHD_Connection *c, unsigned code, const char *type,
			     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
enum MHD_Result psrv_respond(struct req *r, struct MHD_Connection *c, unsigned code, const char *type,
			     const char *fmt, ...)
{
	struct MHD_Response *resp;
	va_list ap;
	char *body;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	resp = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (code == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (code == MHD_HTTP_MISDIRECTED_REQUEST || r->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	atomic_fetch_add(&r->s->bytes_out, n);
	return psrv_queue(r, c, code, resp);
}
