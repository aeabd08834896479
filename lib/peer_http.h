#ifndef MTC_PEER_HTTP_H
#define MTC_PEER_HTTP_H

#include <stddef.h>

#include "peer_wire.h"

/*
 * An HTTP/1.1 PUT over a plain socket whose body is a wire reader's
 * stream (peer_wire.h): headers and padding from memory, file contents
 * by sendfile, so they never pass through user space (libcurl reads each
 * byte into its buffer and copies it again into the socket). For the
 * uploads of the peer tier; everything else goes through libcurl.
 */
/*
 * With upgrade, the request has no body: it asks for "Upgrade: mtc-tar",
 * and once the daemon answers 101 the tar stream follows on the
 * connection, ended by its end-of-archive blocks; the daemon then writes
 * the final answer. Any other answer is final.
 */
#define MTC_HTTP_UPGRADE "mtc-tar"

struct mtc_http_put {
	const char *url;
	const char *token; /* NULL: no Authorization header */
	const char *content_type;
	struct mtc_wire_reader *body;
	long long length;
	double deadline; /* mtc_now() clock */
	int stall_s;	 /* this long without progress is an error */
	int upgrade;	 /* a tree: asks the daemon to switch the connection to the raw stream */

	long code; /* the answer's status, 0 when none arrived */
	char *answer; /* its body, malloc'd (at most 64 MiB kept) */
	size_t answer_len;
	long long sent; /* body bytes */
};

/* 1 when url can go this way: http://host[:port][/path], no proxy in the environment. */
int mtc_http_usable(const char *url);

/*
 * 0 when an answer arrived (it may have cut the body short); -1 when the
 * connection failed, -2 when the deadline passed, -3 when the body could
 * not be read (a file vanished or shrank); err says why.
 */
int mtc_http_put(struct mtc_http_put *p, char *err, size_t errlen);

#endif
