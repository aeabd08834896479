#ifndef MTC_PEER_CLIENT_H
#define MTC_PEER_CLIENT_H

#include <signal.h>
#include <stddef.h>

#include <jansson.h>

#include "peer_wire.h"

/*
 * The client side of the peer service (peer_server.h). Transfers are
 * retried on connection errors, 408, 429, 5xx and 422 (corrupted in
 * transit) with exponential backoff and jitter, within a total deadline.
 * Results are enum mtc_result (result.h): 0, FAILURE, TIMEOUT, NOTFOUND,
 * INTEGRITY, with a one-line reason in err. The caller ignores SIGPIPE.
 * A tree travels with its manifest (peer_manifest.h): sent before it,
 * fetched before it, and what arrives is checked against both the name
 * and the manifest.
 */
struct mtc_peer_client {
	const char *token; /* NULL: no Authorization header */
	double deadline_s; /* per object, all attempts together */
	int retries;
	int streams;			     /* connections one tree upload may use at once */
	struct mtc_wire_limits limits;	     /* what a fetched tree may hold */
	const volatile sig_atomic_t *cancel; /* when set: a transfer under way ends, no new try */
};

void mtc_peer_client_defaults(struct mtc_peer_client *pc);

/* 1 when the peer holds name, 0 when not, -1 on error. */
int mtc_peer_has(const struct mtc_peer_client *pc, const char *base, const char *name, char *err,
		 size_t errlen);
/* Sends dir/name (a <hash>.data file or tree, or a .meta) to the peer. *sent: body bytes. */
enum mtc_result mtc_peer_put(const struct mtc_peer_client *pc, const char *base, const char *dir,
			     const char *name, long long *sent, char *err, size_t errlen);
/*
 * Fetches name into dir: data is verified against its hash before it is
 * renamed into place; a .meta is written only once its data is present
 * (fetched first when missing).
 */
enum mtc_result mtc_peer_get(const struct mtc_peer_client *pc, const char *base, const char *dir,
			     const char *name, long long *received, char *err, size_t errlen);
/* GET /v1/inventory; NULL with err on failure. */
json_t *mtc_peer_inventory(const struct mtc_peer_client *pc, const char *base, char *err, size_t errlen);

/*
 * Pushes this node's .meta files of step (job, rank) found in dir, data
 * before meta, data skipped when the peer has it, to every peer in
 * parallel. Returns the summary {"step", "ok", "seconds", "peers": [{"peer",
 * "ok", "metas", "data-sent", "data-skipped", "bytes", "seconds", "error"}]};
 * *failed counts the peers that failed.
 */
json_t *mtc_peer_push_step(const struct mtc_peer_client *pc, const char *dir, const char *job,
			   long long step, int rank, char *const *peers, int n_peers, int *failed);

#endif
