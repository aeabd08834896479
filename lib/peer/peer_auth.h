#ifndef MTC_PEER_AUTH_H
#define MTC_PEER_AUTH_H

#include <stddef.h>

#include "naming.h"

/*
 * Who a peer or coordinator request speaks for (mtc(7) §4.2). The token file
 * holds the job's shared secret; each node derives its own credential from it:
 *   mtc-r<RANK>.<MAC>.<JOB>   MAC = hex HMAC-SHA256(secret, "mtc-rank:<JOB>:<RANK>")
 * sent as "Authorization: Bearer <credential>" (http.h). A verifier holding the secret
 * recomputes the MAC for the rank and job claimed and compares in constant
 * time. The plain secret is still accepted (a tool that reads, an older node),
 * and refused for writes that name a rank when strict.
 */
enum mtc_cred_kind {
	MTC_CRED_OPEN,	 /* the daemon has no token: anyone may do anything */
	MTC_CRED_SECRET, /* the job's shared secret itself */
	MTC_CRED_RANK	 /* one rank's credential */
};

struct mtc_peer_cred {
	enum mtc_cred_kind kind;
	int rank; /* MTC_CRED_RANK */
	char job[MTC_JOB_MAX + 1];
};

/* Rank's credential in job (malloc'd), derived from secret. */
char *mtc_rank_credential(const char *secret, const char *job, int rank);

/*
 * The token a node sends: its rank's credential when it knows its job and rank
 * (job non-NULL, rank >= 0), else the secret itself (a copy); NULL for NULL.
 */
char *mtc_peer_token_for(const char *secret, const char *job, int rank);

struct mtc_peer_auth;

/* Reads the secret from a token file (token_file.h rules); NULL and err when refused. */
struct mtc_peer_auth *mtc_peer_auth_load(const char *path, char *err, size_t errlen);
/* Wipes the secret and frees a. */
void mtc_peer_auth_free(struct mtc_peer_auth *a);

/*
 * Checks an Authorization header value (NULL: none): 0 with *who filled in,
 * or -1 when it carries neither the secret nor a valid rank credential (401).
 */
int mtc_peer_auth_check(const struct mtc_peer_auth *a, const char *header, struct mtc_peer_cred *who);

/*
 * May who write something that speaks for rank of job (rank -1: for no rank
 * in particular, e.g. content-addressed data; job NULL: any job)? 0 when it
 * may, else 403 with a one-line reason: a rank credential speaks only for its
 * own rank and job; the plain secret speaks for any rank unless strict.
 */
int mtc_cred_may_write(const struct mtc_peer_cred *who, int strict, const char *job, int rank, char *err,
		       size_t errlen);

/*
 * 1 the first time rank is refused (so that a refusal is logged once per rank;
 * -1: the plain secret's writes of data), else 0.
 */
int mtc_peer_auth_first_refusal(struct mtc_peer_auth *a, int rank);

#endif
