#include "framing.h"

#include <microhttpd.h>
#include <string.h>
#include <strings.h>

#include "log.h"

struct heads {
	int content_length, transfer_encoding, chunked, spaced;
};

static enum MHD_Result count(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct heads *h = cls;

	if (strpbrk(key, " \t"))
		h->spaced = 1;
	else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
		h->content_length++;
	else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		h->transfer_encoding++;
		/* libmicrohttpd's own test: anything else it reads as a body up to the close */
		h->chunked = value && !strcasecmp(value, "chunked");
	}
	return MHD_YES;
}

int mtc_framing_check(struct MHD_Connection *c, char *err, size_t errlen)
{
	struct heads h = { 0 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count, &h);
	if (h.spaced)
		return mtc_fail(err, errlen, "whitespace between a header's name and its colon");
	if (h.content_length > 1)
		return mtc_fail(err, errlen, "more than one Content-Length");
	if (h.content_length && h.transfer_encoding)
		return mtc_fail(err, errlen, "both Content-Length and Transfer-Encoding");
	if (h.transfer_encoding > 1 || (h.transfer_encoding && !h.chunked))
		return mtc_fail(err, errlen, "a Transfer-Encoding other than one 'chunked'");
	return 0;
}
