#ifndef MTC_PEER_SERVER_H
#define MTC_PEER_SERVER_H

#include <stddef.h>

#include "threads.h"

struct mtc_buf;
struct mtc_peer_cred;

/*
 * The peer daemon (mtc(7) §4) over one local dir:
 *   PUT|GET|HEAD /v1/objects/<hash>.data      a file as raw bytes, a tree as tar (peer_wire.h)
 *   PUT|GET|HEAD /v1/objects/<hash>.manifest  a tree's manifest (peer_manifest.h)
 *   PUT|GET|HEAD /v1/objects/<name>.meta      the hash it names
 *   POST /v1/uploads/<hash>.data              opens a session for a tree: {"session": ID}
 *   PUT /v1/uploads/ID/<n>                    one piece of it (tar), in parallel with others
 *   POST /v1/uploads/ID/commit, DELETE /v1/uploads/ID
 *   GET /v1/inventory, GET /healthz, GET /metrics
 * Visibility invariant: an upload is written below a private staging dir
 * (.mtc-upload-*) and renamed to its name, without replacing anything, only
 * after its digest equals the name and, for a tree, what arrived (paths,
 * sizes, per-file digests) equals the manifest sent before it; a .meta is
 * accepted only when the data it names is present. A manifest is held under
 * a staging name until its tree is published, then kept as <hash>.manifest
 * beside it. Anything else (rejection, disconnect, timeout, shutdown, an
 * idle session) removes the staging dir, and a restart removes leftovers.
 */

struct mtc_peer_server_opts {
	const char *dir;
	const char *listen;	/* HOST:PORT, :PORT, [V6]:PORT; port 0 picks a free one */
	const char *token_file; /* NULL: no auth, loopback only unless insecure */
	const char *tls_dir;	/* NULL: plain HTTP; else HTTPS only, mutual TLS for the data (tls.h) */
	int strict_ranks;	/* the plain secret may read but not write (peer_auth.h) */
	int insecure;
	const char *ready_file; /* /readyz: 200 while it exists, else 503 (NULL: always ready) */
	long long max_body;	/* bytes per upload */
	long long max_files;	/* entries per tree */
	int max_depth;
	int max_connections;
	int max_conns_per_ip;  /* connections from one client address (0: no limit) */
	int max_unauth;	       /* connections that have not shown a valid token yet */
	int head_timeout_s;    /* from accept (or the last answer) to a request's whole head,
				  for a connection that has not shown a valid token */
	int timeout_s;	       /* idle connection timeout */
	long long min_rate;    /* a body slower than this (bytes/s, after 30 s) is cut; 0: never */
	int session_timeout_s; /* an upload session idle this long is discarded */
	/* of writing and hashing uploads (a peer's push), on a pool's threads (threads.h) */
	enum mtc_background upload_class;
	/*
	 * Extra routes (the coordinator): an authorized request whose URL starts
	 * with route_prefix is first shown to route_admit, before any of its body
	 * is read: 0 and the largest body that endpoint takes (at most 64 MiB),
	 * or an HTTP status and a one-line reason to answer at once. Then it
	 * goes, body and all, to route, with who the credential speaks for
	 * (peer_auth.h); route may block; it returns the HTTP status and a
	 * malloc'd JSON answer.
	 */
	const char *route_prefix;
	int (*route_admit)(void *arg, const char *method, const char *url, size_t *max_body, char *err,
			   size_t errlen);
	int (*route)(void *arg, const struct mtc_peer_cred *who, const char *method, const char *url,
		     const char *body, size_t len, char **answer);
	/*
	 * Optional, route without blocking (coord.h: mtc_coord_start and
	 * mtc_coord_collect). Given them and no TLS, a connection whose first
	 * request is a POST to a route is served by a second server that holds
	 * a waiting request without a thread (sorter.h); the one who stops the
	 * server first wakes every wait (mtc_coord_shutdown).
	 */
	int (*route_start)(void *arg, const struct mtc_peer_cred *who, const char *method,
			   const char *url, const char *body, size_t len, char **answer,
			   void (*wake)(void *wake_arg), void *wake_arg, void **wait);
	int (*route_collect)(void *arg, void *wait, char **answer);
	/* More figures for GET /metrics (the coordinator's), or NULL. */
	void (*metrics)(void *arg, struct mtc_buf *t);
	void *route_arg;
};

void mtc_peer_server_defaults(struct mtc_peer_server_opts *o);

struct mtc_peer_server;

/* The caller ignores SIGPIPE first: a peer may close in the middle of an answer. */
struct mtc_peer_server *mtc_peer_server_start(const struct mtc_peer_server_opts *o, char *err,
					      size_t errlen);
/* "HOST:PORT" actually bound. */
const char *mtc_peer_server_address(const struct mtc_peer_server *s);
/* Closes every connection, discards uploads in flight, frees s. */
void mtc_peer_server_stop(struct mtc_peer_server *s);

#endif
