#include "gcs_auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

#define REFRESH_MARGIN 60
#define SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
#define METADATA_PATH "/computeMetadata/v1/instance/service-accounts/default/token"

struct mtc_gcs_auth {
	enum mtc_gcs_auth_kind kind;
	char *token_file;   /* TOKEN from a file */
	char *key_file;     /* SERVICE_ACCOUNT */
	char *metadata_url; /* METADATA */
	double metadata_wait;
	pthread_mutex_t lock;
	char *token;
	double expires; /* mtc_now() clock; 0: never */
};

int mtc_gcs_auth_new(const char *token_file, struct mtc_gcs_auth **out, char *err, size_t errlen)
{
	struct mtc_gcs_auth *a = xcalloc(1, sizeof *a);
	const char *env;

	pthread_mutex_init(&a->lock, NULL);
	if ((env = getenv("STORAGE_EMULATOR_HOST")) && *env) {
		a->kind = MTC_GCS_AUTH_NONE;
	} else if (token_file && *token_file) {
		a->kind = MTC_GCS_AUTH_TOKEN;
		a->token_file = xstrdup(token_file);
	} else if ((env = getenv("MTC_GCS_TOKEN")) && *env) {
		a->kind = MTC_GCS_AUTH_TOKEN;
		a->token = xstrdup(env);
	} else if ((env = getenv("GOOGLE_APPLICATION_CREDENTIALS")) && *env) {
		a->kind = MTC_GCS_AUTH_SERVICE_ACCOUNT;
		a->key_file = xstrdup(env);
	} else {
		const char *host = getenv("GCE_METADATA_HOST");
		a->kind = MTC_GCS_AUTH_METADATA;
		a->metadata_wait = host && *host ? 30 : 3;
		if (!host || !*host)
			host = "metadata.google.internal";
		a->metadata_url = xasprintf("%s%s%s", strstr(host, "://") ? "" : "http://", host,
					    METADATA_PATH);
		if ((env = getenv("MTC_GCS_METADATA_WAIT")) && *env)
			a->metadata_wait = atof(env);
	}
	(void)err;
	(void)errlen;
	*out = a;
	return 0;
}

void mtc_gcs_auth_free(struct mtc_gcs_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a->token_file);
	free(a->key_file);
	free(a->metadata_url);
	free(a->token);
	free(a);
}

enum mtc_gcs_auth_kind mtc_gcs_auth_kind(const struct mtc_gcs_auth *a) { return a->kind; }

char *mtc_base64url(const void *buf, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const unsigned char *p = buf;
	char *out = xmalloc(len * 4 / 3 + 4), *o = out;
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0);
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		if (i + 1 < len)
			*o++ = tab[(v >> 6) & 63];
	}
	*o = '\0';
	return out;
}

struct body {
	char *buf;
	size_t len;
};

static size_t collect(char *ptr, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;
	if (b->len + add > 1 << 20)
		return 0;
	b->buf = xrealloc(b->buf, b->len + add + 1);
	memcpy(b->buf + b->len, ptr, add);
	b->len += add;
	b->buf[b->len] = '\0';
	return add;
}

/* One HTTP exchange; returns the status (0 on a transport error) with the body in b. */
static long http(const char *url, const char *post, const char *header, struct body *b,
		 char *err, size_t errlen)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char ebuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode cc;

	b->buf = NULL;
	b->len = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (header)
		h = curl_slist_append(h, header);
	if (post) {
		h = curl_slist_append(h, "Content-Type: application/x-www-form-urlencoded");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK)
		mtc_fail(err, errlen, "%s", ebuf[0] ? ebuf : curl_easy_strerror(cc));
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/* Reads access_token and expires_in from a token endpoint's answer. */
static int take_token(struct mtc_gcs_auth *a, const struct body *b, const char *from, char *err,
		      size_t errlen)
{
	json_error_t je;
	json_t *j = json_loadb(b->buf ? b->buf : "", b->len, 0, &je);
	const char *tok = json_string_value(json_object_get(j, "access_token"));
	json_t *exp = json_object_get(j, "expires_in");

	if (!tok || !*tok) {
		json_decref(j);
		return mtc_fail(err, errlen, "no access_token in the answer from '%s'", from);
	}
	free(a->token);
	a->token = xstrdup(tok);
	a->expires = mtc_now() + (json_is_integer(exp) ? (double)json_integer_value(exp) : 3600);
	json_decref(j);
	return 0;
}

static char *rs256(const char *pem, const char *input, char *err, size_t errlen)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t siglen = 0;
	char *out = NULL;

	if (!key) {
		mtc_fail(err, errlen, "cannot read the private key");
		goto done;
	}
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)input, strlen(input)) != 1) {
		mtc_fail(err, errlen, "cannot sign the token request");
		goto done;
	}
	sig = xmalloc(siglen);
	if (EVP_DigestSign(md, sig, &siglen, (const unsigned char *)input, strlen(input)) != 1) {
		mtc_fail(err, errlen, "cannot sign the token request");
		goto done;
	}
	out = mtc_base64url(sig, siglen);
done:
	free(sig);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	BIO_free(bio);
	return out;
}

static int service_account_token(struct mtc_gcs_auth *a, char *err, size_t errlen)
{
	json_error_t je;
	json_t *key = json_load_file(a->key_file, 0, &je), *hdr, *claims;
	const char *email, *pem, *uri, *kid;
	char *h64, *c64, *input, *sig, *jwt_enc, *post, *s;
	struct body b;
	long status;
	int rc = -1;
	time_t now = time(NULL);

	if (!key)
		return mtc_fail(err, errlen, "cannot read the service-account key '%s': %s",
			       a->key_file, je.text);
	email = json_string_value(json_object_get(key, "client_email"));
	pem = json_string_value(json_object_get(key, "private_key"));
	uri = json_string_value(json_object_get(key, "token_uri"));
	kid = json_string_value(json_object_get(key, "private_key_id"));
	if (!email || !pem) {
		json_decref(key);
		return mtc_fail(err, errlen,
			       "service-account key '%s' lacks client_email or private_key",
			       a->key_file);
	}
	if (!uri)
		uri = "https://oauth2.googleapis.com/token";
	hdr = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	if (kid)
		json_object_set_new(hdr, "kid", json_string(kid));
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", SCOPE, "aud", uri,
			   "iat", (json_int_t)now, "exp", (json_int_t)now + 3600);
	s = json_dumps(hdr, JSON_COMPACT);
	h64 = mtc_base64url(s, strlen(s));
	free(s);
	s = json_dumps(claims, JSON_COMPACT);
	c64 = mtc_base64url(s, strlen(s));
	free(s);
	input = xasprintf("%s.%s", h64, c64);
	sig = rs256(pem, input, err, errlen);
	if (sig) {
		CURL *c = curl_easy_init();
		char *jwt = xasprintf("%s.%s", input, sig);
		jwt_enc = curl_easy_escape(c, jwt, 0);
		post = xasprintf("grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer"
				 "&assertion=%s",
				 jwt_enc);
		for (int attempt = 0; attempt < 4; attempt++) {
			status = http(uri, post, NULL, &b, err, errlen);
			if (status == 200) {
				rc = take_token(a, &b, uri, err, errlen);
				free(b.buf);
				break;
			}
			if (status)
				mtc_fail(err, errlen, "token exchange at '%s': HTTP %ld: %.200s", uri,
					status, b.buf ? b.buf : "");
			free(b.buf);
			if (status && status < 500 && status != 429 && status != 408)
				break;
			usleep((useconds_t)(200000u << attempt));
		}
		free(post);
		curl_free(jwt_enc);
		free(jwt);
		curl_easy_cleanup(c);
	}
	free(sig);
	free(input);
	free(h64);
	free(c64);
	json_decref(hdr);
	json_decref(claims);
	json_decref(key);
	return rc;
}

static int metadata_token(struct mtc_gcs_auth *a, char *err, size_t errlen)
{
	double until = mtc_now() + a->metadata_wait;
	unsigned delay = 100000;
	struct body b;

	for (;;) {
		long status = http(a->metadata_url, NULL, "Metadata-Flavor: Google", &b, err, errlen);
		if (status == 200) {
			int rc = take_token(a, &b, a->metadata_url, err, errlen);
			free(b.buf);
			return rc;
		}
		if (status)
			mtc_fail(err, errlen, "metadata server '%s': HTTP %ld", a->metadata_url,
				status);
		free(b.buf);
		if (mtc_now() + delay / 1e6 > until)
			return -1;
		usleep(delay);
		if (delay < 2000000)
			delay *= 2;
	}
}

static int token_from_file(struct mtc_gcs_auth *a, char *err, size_t errlen)
{
	char *buf;
	size_t len;

	if (mtc_read_file(a->token_file, 64 * 1024, &buf, &len) < 0)
		return mtc_fail(err, errlen, "cannot read token file '%s': %s", a->token_file,
			       strerror(errno));
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (!len) {
		free(buf);
		return mtc_fail(err, errlen, "token file '%s' is empty", a->token_file);
	}
	free(a->token);
	a->token = buf;
	a->expires = mtc_now() + 300; /* re-read every few minutes: a rotated Secret */
	return 0;
}

int mtc_gcs_auth_header(struct mtc_gcs_auth *a, int force, char **header, char *err,
			size_t errlen)
{
	int rc = 0;

	*header = NULL;
	if (a->kind == MTC_GCS_AUTH_NONE)
		return 0;
	pthread_mutex_lock(&a->lock);
	if (force || !a->token || (a->expires && mtc_now() > a->expires - REFRESH_MARGIN)) {
		switch (a->kind) {
		case MTC_GCS_AUTH_TOKEN:
			rc = a->token_file ? token_from_file(a, err, errlen) : 0;
			break;
		case MTC_GCS_AUTH_SERVICE_ACCOUNT:
			rc = service_account_token(a, err, errlen);
			break;
		case MTC_GCS_AUTH_METADATA:
			rc = metadata_token(a, err, errlen);
			break;
		case MTC_GCS_AUTH_NONE:
			break;
		}
	}
	if (rc == 0 && a->token)
		*header = xasprintf("Authorization: Bearer %s", a->token);
	pthread_mutex_unlock(&a->lock);
	return rc;
}
