#ifndef MTC_PEER_HTTP_H
#define MTC_PEER_HTTP_H

#include <stddef.h>

#include "buf.h"
#include "http.h"
#include "peer_wire.h"

/*
 * The bulk transfers of the peer tier over plain sockets: the raw mode of
 * the HTTP layer (http.h), with its outcomes; everything else goes through
 * libcurl. A PUT's body is a wire reader's stream
 * (peer_wire.h): headers and padding from memory, file contents by
 * sendfile, so they never pass through user space (libcurl reads each
 * byte into its buffer and copies it again into the socket). A GET of a
 * tree hands the socket to mtc_wire_extract_sock once the answer's
 * headers are in, instead of copying the stream through libcurl's buffer
 * and a ring to an extractor thread.
 */
/*
 * With upgrade, a PUT has no body: it asks for "Upgrade: mtc-tar", and
 * once the daemon answers 101 the tar stream follows on the connection,
 * ended by its end-of-archive blocks; the daemon then writes the final
 * answer. A tree's GET asks for the same, and after the 101 the daemon
 * sends the stream (by sendfile) and closes. Any other answer is final.
 */
#define MTC_HTTP_UPGRADE "mtc-tar"

/* What is kept of an answer's body. */
#define MTC_HTTP_ANSWER_MAX (64u << 20)

struct mtc_http_call {
	const char *url;
	const char *token; /* NULL: no Authorization header */
	const char *content_type;
	struct mtc_wire_reader *body;
	long long length;
	double deadline; /* mtc_now() clock */
	int stall_s;	 /* this long without progress is an error */
	int upgrade;	 /* a tree: asks the daemon to switch the connection to the raw stream */
	const int *stop; /* when set, every wait ends (-1) */

	long code;	       /* the answer's status, 0 when none arrived */
	struct mtc_buf answer; /* its body, cut at MTC_HTTP_ANSWER_MAX */
	long long sent;	       /* body bytes */

	/* mtc_http_get: where a 200's body goes, a file (fd, digest) or a tree (root...) */
	int fd;
	char digest[66];
	struct mtc_wire_entry
		*range; /* or a range of the file: asked for, its 206 into fd; a PUT's Content-Range */
	const char *root;
	const struct mtc_wire_limits *limits;
	const struct mtc_manifest *expected;
	struct mtc_wire_list *got;
	long long received; /* stream bytes */
};

/*
 * 1 when url can go this way: http://host[:port][/path], or https:// once
 * TLS is set up (tls.h: the connection is relayed through a socket pair),
 * and no proxy in the environment.
 */
int mtc_http_usable(const char *url);

/*
 * MTC_HTTP_ANSWERED when an answer arrived (it may have cut the body
 * short); UNREACHED when the connection failed, DEADLINE when the deadline
 * passed, LOCAL when the body could not be read (a file vanished or
 * shrank); err says why.
 */
enum mtc_http_end mtc_http_put(struct mtc_http_call *p, char *err, size_t errlen);

/*
 * Sends p->body on fd, a connected nonblocking socket, counting p->sent:
 * 0 all sent, 1 the other side sent something or closed first, -1 the
 * connection failed or stalled for stall_s (or *stop was set), -2 the
 * deadline passed, -3 a file vanished or shrank; err says why.
 */
int mtc_http_send_body(struct mtc_http_call *p, int fd, char *err, size_t errlen);

/*
 * GET url. With root (a tree), it asks for the upgrade, and the tar stream
 * after the 101 (or a 200's body, which must be exactly one stream) is
 * extracted into root, an empty directory. Else a 200's body goes into fd
 * and digest gets its hash; with range, it asks for those bytes, and a 206
 * that is exactly them goes into their place in fd, hashed into range (a
 * 200 is then refused as LOCAL: the daemon does not serve ranges). MTC_HTTP_ANSWERED when an answer arrived (any
 * other answer's body is in answer); UNREACHED when the connection failed,
 * DEADLINE when the deadline passed, LOCAL when the body was short or the
 * stream was rejected (not a clean tree within the limits, or not what
 * expected lists); err says why.
 */
enum mtc_http_end mtc_http_get(struct mtc_http_call *p, char *err, size_t errlen);

#endif
