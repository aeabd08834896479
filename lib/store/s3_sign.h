#ifndef MTC_S3_SIGN_H
#define MTC_S3_SIGN_H

#include <stddef.h>
#include <time.h>

#include <curl/curl.h>

/*
 * AWS Signature Version 4 for S3 and STS requests, on OpenSSL's HMAC and
 * SHA-256 (lib/README.md, store). The canonical request is built as S3
 * checks it: the path encoded once, every byte but A-Z a-z 0-9 - _ . ~ and
 * '/' as %XX (upper-case hex), never normalised; the query's names and
 * values encoded the same way with '/' too, sorted by name then value; the
 * header names lower-case, their values trimmed and inner runs of blanks
 * made one space, sorted. x-amz-date, x-amz-content-sha256 (unless the
 * request says not to) and, with session credentials, x-amz-security-token
 * are added and signed with the caller's headers.
 */

#define MTC_S3_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define MTC_S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct mtc_s3_creds {
	char *access_key;
	char *secret_key;
	char *session_token; /* NULL for long-term keys */
	double expires;	     /* seconds since the epoch; 0: they do not expire */
};

void mtc_s3_creds_free(struct mtc_s3_creds *c);
void mtc_s3_creds_copy(struct mtc_s3_creds *to, const struct mtc_s3_creds *from);

/* A query parameter or a header, neither encoded; a parameter's NULL value signs as "name=". */
struct mtc_s3_pair {
	const char *name, *value;
};

struct mtc_s3_request {
	const char *method;
	const char *host; /* the Host header as sent: host, or host:port when not the default */
	const char *path; /* not encoded, from '/': "/key" or "/bucket/key" */
	const struct mtc_s3_pair *params;
	size_t n_params;
	const struct mtc_s3_pair *headers; /* sent and signed */
	size_t n_headers;
	const char *payload_hash; /* lower-case hex SHA-256 of the body, or UNSIGNED-PAYLOAD;
				     NULL: the empty body's */
	int no_content_sha256;	  /* no x-amz-content-sha256 header (services other than S3) */
	const char *region;
	const char *service; /* "s3", "sts" */
	time_t when;
};

struct mtc_s3_signed {
	char *path;		    /* the path as the URL must carry it */
	char *query;		    /* the canonical query, as the URL must carry it ("" when none) */
	struct curl_slist *headers; /* every header to send: the caller's, x-amz-*, Authorization */
	char *canonical_request;
	char *string_to_sign;
	char *authorization; /* the Authorization header's value */
};

/* Signs r with c; fills out (free it with mtc_s3_signed_free). 0, or -1 with err. */
int mtc_s3_sign(const struct mtc_s3_request *r, const struct mtc_s3_creds *c, struct mtc_s3_signed *out,
		char *err, size_t errlen);
void mtc_s3_signed_free(struct mtc_s3_signed *s);

/* s URI-encoded as SigV4 asks (malloc'd); '/' kept when keep_slash. */
char *mtc_s3_uri_encode(const char *s, int keep_slash);

/* The signing key: HMAC chain of "AWS4" secret, date (YYYYMMDD), region, service, "aws4_request". */
void mtc_s3_signing_key(const char *secret, const char *date, const char *region, const char *service,
			unsigned char key[32]);

/* The lower-case hex SHA-256 of buf (65 bytes with the NUL). */
void mtc_s3_sha256_hex(const void *buf, size_t len, char hex[65]);

#endif
