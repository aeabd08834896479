#ifndef MTC_FRAMING_H
#define MTC_FRAMING_H

#include <stddef.h>

struct MHD_Connection;

/*
 * Whether a request's body has one length that every reader agrees on (RFC
 * 9112 §6.3), judged on its head before any of the body is read. Refused:
 * more than one Content-Length (equal ones too: RFC 9110 allows folding
 * them, nothing of ours sends them), Content-Length beside
 * Transfer-Encoding, a Transfer-Encoding other than one "chunked", and
 * whitespace between a header's name and its colon (RFC 9112 §5.1), which
 * libmicrohttpd would keep as part of the name. A proxy in front could
 * frame such a request otherwise and pass bytes this server takes for a
 * second request (request smuggling); the answer is 400 and the connection
 * is closed. libmicrohttpd itself refuses a Content-Length that is not
 * digits (400) or beyond 64 bits (413), and closes.
 *
 * 0 when c's head is sound, else -1 with why.
 */
int mtc_framing_check(struct MHD_Connection *c, char *err, size_t errlen);

#endif
