#include "peer_auth.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "token_file.h"
#include "xalloc.h"

#define PREFIX "mtc-r"
#define MAC_HEX 64
#define RANK_MAX 999999999
#define REFUSALS_TRACKED 65536

struct mtc_peer_auth {
	char *secret;
	unsigned char secret_sha[32];
	atomic_uint refused[REFUSALS_TRACKED / 32];
};

static void mac_hex(const char *secret, const char *job, int rank, char out[MAC_HEX + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *msg = xasprintf("mtc-rank:%s:%d", job, rank);

	HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg, strlen(msg), md, &n);
	free(msg);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

char *mtc_rank_credential(const char *secret, const char *job, int rank)
{
	char mac[MAC_HEX + 1];
	mac_hex(secret, job, rank, mac);
	return xasprintf(PREFIX "%d.%s.%s", rank, mac, job);
}

char *mtc_peer_token_for(const char *secret, const char *job, int rank)
{
	if (!secret)
		return NULL;
	return job && rank >= 0 ? mtc_rank_credential(secret, job, rank) : xstrdup(secret);
}

static void sha256(const char *s, size_t len, unsigned char out[32])
{
	unsigned int n = 32;
	EVP_Digest(s, len, out, &n, EVP_sha256(), NULL);
}

struct mtc_peer_auth *mtc_peer_auth_load(const char *path, char *err, size_t errlen)
{
	struct mtc_peer_auth *a;
	char *secret = mtc_read_token_file(path, err, errlen);

	if (!secret)
		return NULL;
	a = xcalloc(1, sizeof *a);
	a->secret = secret;
	sha256(secret, strlen(secret), a->secret_sha);
	return a;
}

void mtc_peer_auth_free(struct mtc_peer_auth *a)
{
	if (!a)
		return;
	OPENSSL_cleanse(a->secret, strlen(a->secret));
	free(a->secret);
	free(a);
}

/* Splits "mtc-r<RANK>.<MAC>.<JOB>": 0 with rank, mac and job, or -1. */
static int parse_credential(const char *s, int *rank, const char **mac, const char **job)
{
	long long r = 0;
	const char *p = s + strlen(PREFIX);

	if (strncmp(s, PREFIX, strlen(PREFIX)) || *p < '0' || *p > '9' || (*p == '0' && p[1] != '.'))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((r = r * 10 + (*p - '0')) > RANK_MAX)
			return -1;
	if (*p != '.' || strlen(p + 1) < MAC_HEX + 2 || p[1 + MAC_HEX] != '.')
		return -1;
	for (int i = 1; i <= MAC_HEX; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return -1;
	*rank = (int)r;
	*mac = p + 1;
	*job = p + 2 + MAC_HEX;
	return mtc_valid_job_name(*job) ? 0 : -1;
}

int mtc_peer_auth_check(const struct mtc_peer_auth *a, const char *header, struct mtc_peer_cred *who)
{
	unsigned char got[32];
	const char *tok, *mac, *job;
	char want[MAC_HEX + 1];
	int rank;

	memset(who, 0, sizeof *who);
	who->rank = -1;
	if (!a) {
		who->kind = MTC_CRED_OPEN;
		return 0;
	}
	if (!header || strncasecmp(header, "Bearer ", 7))
		return -1;
	tok = header + 7;
	sha256(tok, strlen(tok), got);
	if (CRYPTO_memcmp(got, a->secret_sha, 32) == 0) {
		who->kind = MTC_CRED_SECRET;
		return 0;
	}
	if (parse_credential(tok, &rank, &mac, &job) < 0)
		return -1;
	mac_hex(a->secret, job, rank, want);
	if (CRYPTO_memcmp(want, mac, MAC_HEX) != 0)
		return -1;
	who->kind = MTC_CRED_RANK;
	who->rank = rank;
	snprintf(who->job, sizeof who->job, "%s", job);
	return 0;
}

int mtc_cred_may_write(const struct mtc_peer_cred *who, int strict, const char *job, int rank, char *err,
		       size_t errlen)
{
	if (!who || who->kind == MTC_CRED_OPEN)
		return 0;
	if (who->kind == MTC_CRED_SECRET) {
		if (!strict)
			return 0;
		if (rank >= 0)
			snprintf(err, errlen,
				 "the job's shared secret cannot speak for rank %d here "
				 "(--strict-ranks): send rank %d's credential",
				 rank, rank);
		else
			snprintf(err, errlen,
				 "the job's shared secret cannot write here "
				 "(--strict-ranks): send a rank's credential");
		return 403;
	}
	if (rank >= 0 && who->rank != rank) {
		snprintf(err, errlen, "the credential of rank %d cannot speak for rank %d", who->rank,
			 rank);
		return 403;
	}
	if (job && strcmp(who->job, job)) {
		snprintf(err, errlen, "the credential of rank %d of job '%s' cannot speak for job '%s'",
			 who->rank, who->job, job);
		return 403;
	}
	return 0;
}

int mtc_peer_auth_first_refusal(struct mtc_peer_auth *a, int rank)
{
	unsigned bit, i = (unsigned)rank + 1;
	if (!a || rank < -1 || i >= REFUSALS_TRACKED)
		return 1;
	bit = 1u << (i % 32);
	return !(atomic_fetch_or(&a->refused[i / 32], bit) & bit);
}
