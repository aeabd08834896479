#ifndef MTC_PEER_SERVER_INT_H
#define MTC_PEER_SERVER_INT_H

/*
 * The peer daemon's parts, shared by its files and by no one else:
 * peer_server.c routes requests and runs the daemon's life,
 * peer_server_respond.c sends every answer, peer_server_reads.c answers
 * reads, peer_server_uploads.c takes uploads and their sessions,
 * peer_server_upgrade.c the tar stream over an upgraded connection,
 * peer_server_guard.c cuts connections that send no head in time, and
 * peer_server_metrics.c answers /metrics.
 */

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "blake3/blake3.h"
#include "buf.h"
#include "clock.h"
#include "config.h"
#include "cpu_count.h"
#include "local_dir.h"
#include "object.h"
#include "framing.h"
#include "fsutil.h"
#include "inventory.h"
#include "log.h"
#include "manifest_text.h"
#include "mhd_loop.h"
#include "metrics.h"
#include "naming.h"
#include "node_status.h"
#include "peer_http.h"
#include "peer_auth.h"
#include "peer_manifest.h"
#include "peer_ring.h"
#include "peer_wire.h"
#include "sorter.h"
#include "tls_front.h"
#include "tls_relay.h"
#include "threads.h"
#include "tmpname.h"
#include "walk.h"
#include "xalloc.h"

#include "peer_server.h"

#define OBJECTS "/v1/objects/"
#define UPLOADS "/v1/uploads/"
#define MAX_PIECES 64
#define META_BODY_MAX 128
#define EXTRACT_WHY 512
#define STREAM_BLOCK (256 * 1024)
#define CONN_MEMORY (256 << 10)
#define EVENTS_CONN_MEMORY (4 << 10) /* a report's head; its body is kept apart (req.body) */
/*
 * After each pass the coordinator's loop rests this long, so that the reports
 * and heartbeats of thousands of ranks are served a batch per wakeup rather
 * than one each; a round waits seconds, a heartbeat is due in tens.
 */
#define EVENTS_PAUSE_MS 2
#define HTTP_UNPROCESSABLE 422
#define HTTP_TOO_LARGE 413
#define HTTP_PRECONDITION_REQUIRED 428
#define UPGRADE MTC_HTTP_UPGRADE

struct mtc_peer_server {
	struct MHD_Daemon *daemon;
	/* with route_start: the routes' long polls, on one thread (sorter.h) */
	struct MHD_Daemon *events;
	struct mtc_mhd_loop *events_loop; /* runs events */
	struct mtc_sorter *sorter;
	pthread_mutex_t wake_mu; /* a route's wait woken against its connection being suspended */
	atomic_llong route_held; /* ROUTE_HELD_MAX */
	struct mtc_peer_server_opts o;
	char *dir;
	/* where uploads are written and hashed: in serve --background's class (threads.h) */
	struct mtc_bg_pool *pool;
	struct mtc_peer_auth *auth; /* NULL: no token */
	char address[128];
	atomic_int stopping;

	atomic_llong bytes_in, bytes_out, active, digest_failures;
	atomic_llong published, already_present, rejected;
	atomic_llong codes[600];
	struct mtc_histogram seconds;

	pthread_mutex_t sessions_mu;
	/* manifests being parsed and checked (each costs about its size again): at most one */
	pthread_mutex_t manifest_mu;
	pthread_cond_t manifest_cv;
	int manifest_busy;
	/* the tree last served in pieces (piece_reader), under split_mu */
	pthread_mutex_t split_mu;
	struct split *split;
	/* manifest entries held by open sessions (twice: expected and what arrived) */
	size_t held_entries;
	struct session *sessions;

	/* the connection guard (conn_started): every open connection, oldest first */
	pthread_mutex_t conns_mu;
	pthread_cond_t conns_cv;
	TAILQ_HEAD(, conn) conns;
	int unauth; /* connections that have not shown a valid token yet */
	int guard_stop;
	pthread_t guard;
	atomic_llong cut_unauth, cut_head;
	atomic_llong conns_opened, conns_open;

	/* with TLS (tls_front.h): whether the client behind each of MHD's fds showed a CA-signed certificate */
	struct mtc_tls_front *tls;
	unsigned char *tls_client; /* by fd: 0 not known, 1 no certificate, 2 verified */
	size_t tls_client_cap;
};

/* A tree's manifest, parsed once for all the sessions uploading it. */
struct expected {
	struct mtc_manifest m;
	atomic_int refs;
};

/*
 * A tree upload: the expected manifest, the staging dir its pieces are
 * extracted into, and what has arrived. A PUT of the whole tree is a
 * session of one piece; the upload API (UPLOADS) lets several pieces
 * arrive over parallel connections before one commit. An object that is
 * one file can come the same way, its pieces byte ranges written into
 * their places in the staging file and hashed as units (peer_wire.h).
 */
struct session {
	struct session *next;
	char id[33]; /* "" when not listed */
	char hash[MTC_HASH_MAX + 1];
	struct mtc_tmp staging; /* set when path is */
	char *obj;
	struct expected *exp; /* shared by the open sessions of one tree */
	long long file_size;  /* an object that is one file: its size, its pieces its ranges */
	struct mtc_wire_list got;
	int pieces; /* in flight */
	int failed;
	char why[512];
	double t0, last;
};

enum req_kind {
	REQ_OTHER,
	REQ_PUT_FILE,
	REQ_PUT_TREE,
	REQ_PUT_RANGE,	   /* a byte range of a one-file object's upload session */
	REQ_PUT_TREE_SOCK, /* the tar comes over the socket after a 101 (UPGRADE) */
	REQ_GET_TREE_SOCK, /* the tar goes over the socket after a 101 (UPGRADE) */
	REQ_PUT_META,
	REQ_PUT_MANIFEST,
	REQ_ROUTE
};
#define ROUTE_BODY_MAX (64 << 20)
/*
 * The bytes of route bodies held at once, reserved when a request is admitted
 * (its Content-Length, else its endpoint's limit) and given back once it is
 * parsed: beyond, 503 and Retry-After, so that ranks reporting at once cannot
 * raise the coordinator's peak. A lone body is taken whatever its size.
 */
#define ROUTE_HELD_MAX (8 << 20)

struct req {
	struct mtc_peer_server *s;
	enum req_kind kind;
	char name[MTC_JOB_MAX + 64];
	char hash[MTC_HASH_MAX + 1];
	struct mtc_tmp staging; /* set when path is */
	char *obj;
	int fd;		      /* the file being written */
	struct mtc_ring ring; /* body chunks to the extractor */
	pthread_t extractor;
	int extracting, extract_rc;
	char *extract_why; /* the extractor's, EXTRACT_WHY bytes */
	int fail_code;
	char *why; /* with fail_code */
	char meta[META_BODY_MAX + 1];
	size_t meta_len;
	long long bytes, limit; /* limit: the largest body this request may have */
	double t0;
	int transfer;
	char *url, *method;		/* REQ_ROUTE, REQ_PUT_MANIFEST */
	struct mtc_buf body;		/* REQ_ROUTE: capped at the largest body its endpoint takes */
	long long held;			/* REQ_ROUTE: its part of route_held */
	struct session *sess;		/* REQ_PUT_TREE, REQ_PUT_RANGE */
	struct mtc_wire_hash body_hash; /* REQ_PUT_FILE, REQ_PUT_RANGE: into got's one entry */
	int piece;			/* sess is listed: this request is one piece of it */
	struct mtc_wire_list got;
	struct mtc_wire_reader *send; /* REQ_GET_TREE_SOCK */
	struct mtc_peer_cred who;
	/* REQ_ROUTE on the events daemon: the route's wait; suspended, woken under wake_mu */
	struct MHD_Connection *conn;
	void *wait;
	int suspended, woken;
	int close; /* the answer closes the connection */
};

#define TEXT "text/plain; charset=utf-8"

#define GUARD_TICK_NS 250000000L
#define GUARD_WARN_S 60

/* In s->conns, oldest first, while unauthenticated: the guard walks only those. */
struct conn {
	TAILQ_ENTRY(conn) link;
	int fd;
	int authed, in_request, cut;
	int psrv_client_cert; /* TLS: the client's certificate checked out against ca.crt */
	double since;	      /* accept, or the last answer */
};

/* peer_server.c */
void psrv_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode why);

/* peer_server_respond.c */
enum MHD_Result psrv_queue(struct req *r, struct MHD_Connection *c, unsigned code,
			   struct MHD_Response *resp);
enum MHD_Result psrv_respond(struct req *r, struct MHD_Connection *c, unsigned code, const char *type,
			     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* peer_server_guard.c */
int psrv_client_cert(struct mtc_peer_server *s, struct MHD_Connection *c);
void psrv_conn_answered(struct mtc_peer_server *s, struct MHD_Connection *c);
void psrv_conn_head(struct mtc_peer_server *s, struct MHD_Connection *c, int trusted);
void psrv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode code);
void *psrv_guard_main(void *arg);

/* peer_server_metrics.c */
enum MHD_Result psrv_get_metrics(struct req *r, struct MHD_Connection *c);

/* peer_server_reads.c */
enum MHD_Result psrv_get_data(struct req *r, struct MHD_Connection *c, const char *path, int head);
enum MHD_Result psrv_get_inventory(struct req *r, struct MHD_Connection *c);
enum MHD_Result psrv_get_manifest(struct req *r, struct MHD_Connection *c, int head);
enum MHD_Result psrv_get_meta(struct req *r, struct MHD_Connection *c, const char *path, int head);
int psrv_manifest_name(const char *name, char hash[MTC_HASH_MAX + 1]);
void psrv_split_free(struct split *x);

/* peer_server_upgrade.c */
enum MHD_Result psrv_start_upgrade(struct req *r, struct MHD_Connection *c);
void psrv_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
		   size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh);

/* peer_server_uploads.c */
enum MHD_Result psrv_begin_put(struct req *r, struct MHD_Connection *c, enum req_kind kind);
enum MHD_Result psrv_finish_data(struct req *r, struct MHD_Connection *c);
enum MHD_Result psrv_finish_manifest(struct req *r, struct MHD_Connection *c);
enum MHD_Result psrv_finish_meta(struct req *r, struct MHD_Connection *c);
enum MHD_Result psrv_finish_range(struct req *r, struct MHD_Connection *c);
int psrv_manifest_enter(struct mtc_peer_server *s);
void psrv_manifest_leave(struct mtc_peer_server *s);
enum MHD_Result psrv_open_session(struct req *r, struct MHD_Connection *c);
/* Drops the sessions idle past the session timeout: no staging outlives it without a request. */
void psrv_reap_sessions(struct mtc_peer_server *s);
enum MHD_Result psrv_receive(struct req *r, const char *data, size_t len);
void psrv_remove_staging(struct req *r);
struct mtc_wire_limits psrv_server_limits(const struct mtc_peer_server *s);
void psrv_session_free(struct mtc_peer_server *s, struct session *x);
enum MHD_Result psrv_session_request(struct req *r, struct MHD_Connection *c, const char *rest,
				     const char *method);
unsigned psrv_tree_outcome(struct req *r, int rc, const char *xwhy, char *err, size_t errlen);

#endif
