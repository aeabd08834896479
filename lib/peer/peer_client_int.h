#ifndef MTC_PEER_CLIENT_INT_H
#define MTC_PEER_CLIENT_INT_H

/*
 * The peer client's parts, shared by its files and by no one else:
 * peer_client_call.c makes one HTTP exchange (struct call) through libcurl
 * or the raw socket of peer_http.h; peer_client_pieces.c runs calls side
 * by side, as a tree's pieces or a file's byte ranges, and retries them
 * (pcli_run); peer_client_put.c sends objects, in upload sessions when in
 * pieces; peer_client_get.c fetches objects, checks and publishes them;
 * peer_client.c pushes a step to its peers.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "backoff.h"
#include "blake3/blake3.h"
#include "clock.h"
#include "object.h"
#include "result.h"
#include "fsutil.h"
#include "http.h"
#include "inventory.h"
#include "json_out.h"
#include "log.h"
#include "naming.h"
#include "peer_http.h"
#include "peer_manifest.h"
#include "peer_ring.h"
#include "tls.h"
#include "tmpname.h"
#include "walk.h"
#include "xalloc.h"

#include "peer_client.h"

/* How one attempt went beyond enum mtc_result; never returned from the client. */
enum attempt {
	RETRY = MTC_INTEGRITY + 1,
	NEEDS_MANIFEST, /* the peer lost the tree's manifest (428) */
	WHOLE_ONLY,	/* the peer takes a one-file object only whole */
};
#define RING_BATCH (1 << 20)

/* One HTTP exchange: what to send, where the body goes, what came back. */
struct call {
	const char *method;
	char *url;
	const char *up_path; /* a file, or a tree when up_tree */
	int up_tree;
	const struct mtc_wire_part *up_list; /* with up_tree: only these parts of the tree */
	size_t up_n;
	const char *up_mem;
	size_t up_len;
	const char *down_path; /* a file to create, or an empty dir to extract into */
	int down_tree;
	const struct mtc_manifest *expected; /* what the tree must hold */
	int pieces;	 /* a tree's GET: over this many connections at once (with expected) */
	int file_ranges; /* a file's GET: as this many byte ranges at once, of file_size bytes */
	long long file_size;
	struct mtc_wire_entry *range; /* a GET of this range of a file into its place in down_path */
	int down_shared; /* a piece: down_path is prepared, other pieces extract into it too */
	int raw;  /* a PUT or a tree's GET over a plain socket (peer_http.h), not through libcurl */
	int once; /* not idempotent: a POST that opens or commits an upload session */
	const volatile sig_atomic_t *cancel; /* the client's (peer_client.h) */

	long code;
	long long x_size;    /* a HEAD's X-Mtc-Size, -1 when none */
	int accept_ranges;   /* the answer said Accept-Ranges: bytes */
	struct mtc_buf body; /* small bodies (meta, inventory, errors), cut at MTC_HTTP_ANSWER_MAX */
	long long bytes;

	/* per attempt */
	int up_fd, down_fd;
	size_t up_off;
	const struct mtc_wire_limits *limits;
	pthread_t thread;
	int thread_rc;
	char thread_why[512];
	struct mtc_ring ring; /* the body to the extractor thread */
	int extracting;
	const char *tree_root;
	struct mtc_blake3 file_hash;
	char got[66];
	struct mtc_wire_list got_list;
	struct mtc_wire_reader *reader;
	long long up_total;
};

struct piece {
	const struct mtc_peer_client *pc;
	struct call c;
	double deadline;
	int rc;
	char err[1024];
};

/* A tree's manifest dealt into pieces (mtc_manifest_split), one call each. */
struct piece_set {
	int k, n;
	struct mtc_wire_part **bins;
	size_t *counts;
	struct piece *p;
};

/* peer_client_call.c */
int pcli_attempt(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		 size_t errlen);
void pcli_free_call(struct call *c);
char *pcli_object_url(const char *base, const char *name);
char *pcli_uploads_url(const char *base, const char *rest);

/* peer_client_pieces.c */
size_t pcli_files_in(const struct mtc_manifest *m);
void pcli_pieces_free(struct piece_set *ps);
void pcli_pieces_init(struct piece_set *ps, int k, const struct mtc_peer_client *pc, double deadline);
int pcli_pieces_run(struct piece_set *ps, char *err, size_t errlen);
void pcli_pieces_split(struct piece_set *ps, const struct mtc_manifest *m, int k, int ranges,
		       const struct mtc_peer_client *pc, double deadline);
int pcli_range_count(const struct mtc_peer_client *pc, long long size);
int pcli_run(const struct mtc_peer_client *pc, struct call *c,
	     int (*check)(const struct mtc_peer_client *, struct call *, void *, char *, size_t),
	     void *arg, char *err, size_t errlen);
void pcli_split_ranges(struct mtc_wire_list *l, long long size, int k);

#endif
