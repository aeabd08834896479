#include "gcs_auth.h"

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
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

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "cred_hold.h"
#include "fsutil.h"
#include "http.h"
#include "log.h"
#include "xalloc.h"

#define REFRESH_MARGIN 60
#define SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
#define TOKEN_URI "https://oauth2.googleapis.com/token"
#define METADATA_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define ADC_FILE "application_default_credentials.json"
#define WORKSTATION_HINT                                                       \
	"on a workstation run 'gcloud auth application-default login' or set " \
	"MTC_GCS_TOKEN=$(gcloud auth print-access-token)"

struct mtc_gcs_auth {
	enum mtc_gcs_auth_kind kind;
	char *token_file;   /* TOKEN from a file */
	char *cred_file;    /* SERVICE_ACCOUNT, AUTHORIZED_USER */
	char *metadata_url; /* METADATA */
	double metadata_wait;
	char *passed_over; /* METADATA: the sources that were not there, for the error */
	pthread_mutex_t lock;
	char *token;
	double expires;		   /* mtc_now() clock; 0: never */
	struct mtc_cred_hold hold; /* a failed refresh, answered again a while */
};

/* gcloud's application-default file: $CLOUDSDK_CONFIG/, else ~/.config/gcloud/. */
static char *well_known_file(void)
{
	const char *dir = getenv("CLOUDSDK_CONFIG"), *home = getenv("HOME");
	struct passwd *pw;

	if (dir && *dir)
		return xasprintf("%s/%s", dir, ADC_FILE);
	if ((!home || !*home) && (pw = getpwuid(getuid())))
		home = pw->pw_dir;
	if (!home || !*home)
		return NULL;
	return xasprintf("%s/.config/gcloud/%s", home, ADC_FILE);
}

/* The kind a credentials file's "type" names; -1 for a type mtc cannot use. */
static int credentials_kind(json_t *j, const char *path, enum mtc_gcs_auth_kind *kind, char *err,
			    size_t errlen)
{
	const char *type = json_string_value(json_object_get(j, "type"));

	if (type && !strcmp(type, "service_account"))
		*kind = MTC_GCS_AUTH_SERVICE_ACCOUNT;
	else if (type && !strcmp(type, "authorized_user"))
		*kind = MTC_GCS_AUTH_AUTHORIZED_USER;
	else if (!type)
		return mtc_fail(err, errlen, "credentials '%s' have no \"type\"", path);
	else
		return mtc_fail(err, errlen,
				"credentials '%s' are of type '%s': mtc takes service_account or "
				"authorized_user",
				path, type);
	return 0;
}

/*
 * A credentials file is read again at every refresh (a rotated key), which
 * reports a type mtc cannot use; here its type only names the kind.
 */
static void use_credentials_file(struct mtc_gcs_auth *a, const char *path)
{
	json_t *j = json_load_file(path, 0, NULL);
	const char *type = json_string_value(json_object_get(j, "type"));

	a->cred_file = xstrdup(path);
	a->kind = type && !strcmp(type, "authorized_user") ? MTC_GCS_AUTH_AUTHORIZED_USER
							   : MTC_GCS_AUTH_SERVICE_ACCOUNT;
	json_decref(j);
}

int mtc_gcs_auth_new(const char *token_file, struct mtc_gcs_auth **out, char *err, size_t errlen)
{
	struct mtc_gcs_auth *a = xcalloc(1, sizeof *a);
	const char *env, *host;
	char *adc = NULL;

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
		use_credentials_file(a, env);
	} else if ((adc = well_known_file()) && access(adc, F_OK) == 0) {
		use_credentials_file(a, adc);
	} else {
		a->kind = MTC_GCS_AUTH_METADATA;
		a->passed_over = xasprintf("no --gcs-token-file, $MTC_GCS_TOKEN unset, "
					   "$GOOGLE_APPLICATION_CREDENTIALS unset, %s%s",
					   adc ? "no gcloud login at " : "$HOME unset", adc ? adc : "");
		host = getenv("GCE_METADATA_HOST");
		a->metadata_wait = host && *host ? 30 : 3;
		if (!host || !*host)
			host = "metadata.google.internal";
		a->metadata_url = xasprintf("%s%s%s", strstr(host, "://") ? "" : "http://", host,
					    METADATA_PATH);
		if ((env = getenv("MTC_GCS_METADATA_WAIT")) && *env)
			a->metadata_wait = atof(env);
	}
	free(adc);
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
	free(a->cred_file);
	free(a->metadata_url);
	free(a->passed_over);
	free(a->token);
	mtc_cred_hold_free(&a->hold);
	free(a);
}

enum mtc_gcs_auth_kind mtc_gcs_auth_kind(const struct mtc_gcs_auth *a) { return a->kind; }

char *mtc_base64url(const void *buf, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
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

#define ANSWER_MAX (1u << 20)

struct body {
	struct mtc_buf buf;
	CURLcode cc;
};

/*
 * One HTTP exchange; returns the status (0 on a transport error, with the
 * reason in err and the curl code in b->cc) with the body in b.
 */
static long http(const char *url, const char *post, const char *header, struct body *b, char *err,
		 size_t errlen)
{
	struct curl_slist *h = NULL;
	struct mtc_http_opts o = { .url = url, .idempotent = 1, .timeout_s = 30, .connect_s = 5 };
	long status;

	mtc_buf_init(&b->buf, ANSWER_MAX);
	if (header)
		h = curl_slist_append(h, header);
	if (post)
		h = curl_slist_append(h, "Content-Type: application/x-www-form-urlencoded");
	status = mtc_http_fetch(&o, NULL, post, h, &b->buf, &b->cc, err, errlen);
	curl_slist_free_all(h);
	return status;
}

/* Reads access_token and expires_in from a token endpoint's answer. */
static int take_token(struct mtc_gcs_auth *a, const struct body *b, const char *from, char *err,
		      size_t errlen)
{
	json_error_t je;
	json_t *j = json_loadb(mtc_buf_str(&b->buf), b->buf.len, 0, &je);
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

/*
 * POSTs a form to a token endpoint and takes the token it answers; retried
 * on transport errors, 408, 429 and 5xx. A refusal reads as
 * "WHAT: token request at 'URI': HTTP 400: invalid_grant: why".
 */
static int exchange(struct mtc_gcs_auth *a, const char *what, const char *uri, const char *form,
		    char *err, size_t errlen)
{
	struct mtc_retry retry;
	struct body b;

	mtc_retry_init(&retry, MTC_BACKOFF_TOKEN, mtc_now() + 60);
	for (;;) {
		char why[256];
		long status = http(uri, form, NULL, &b, why, sizeof why);
		if (status == 200) {
			int rc = take_token(a, &b, uri, err, errlen);
			mtc_buf_free(&b.buf);
			return rc;
		}
		if (status) {
			json_t *j = json_loadb(mtc_buf_str(&b.buf), b.buf.len, 0, NULL);
			const char *code = json_string_value(json_object_get(j, "error"));
			const char *desc = json_string_value(json_object_get(j, "error_description"));
			if (code)
				mtc_fail(err, errlen, "%s: token request at '%s': HTTP %ld: %s%s%.200s",
					 what, uri, status, code, desc ? ": " : "", desc ? desc : "");
			else
				mtc_fail(err, errlen, "%s: token request at '%s': HTTP %ld: %.200s",
					 what, uri, status, mtc_cred_one_line(b.buf.p));
			json_decref(j);
		} else {
			mtc_fail(err, errlen, "%s: token request at '%s': %s", what, uri, why);
		}
		mtc_buf_free(&b.buf);
		if ((status && !mtc_http_transient(status)) || retry.attempt == 3 ||
		    mtc_retry_wait(&retry) < 0)
			return -1;
	}
}

/* Form-encodes s into a malloc'd string. */
static char *form_value(const char *s)
{
	CURL *c = curl_easy_init();
	char *e = curl_easy_escape(c, s, 0), *out = xstrdup(e);
	curl_free(e);
	curl_easy_cleanup(c);
	return out;
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

/* An RS256 JWT signed with the key's private key, exchanged at its token_uri. */
static int service_account_token(struct mtc_gcs_auth *a, json_t *key, char *err, size_t errlen)
{
	json_t *hdr, *claims;
	const char *email, *pem, *uri, *kid;
	char *h64, *c64, *input, *sig, *what, *s;
	int rc = -1;
	time_t now = time(NULL);

	email = json_string_value(json_object_get(key, "client_email"));
	pem = json_string_value(json_object_get(key, "private_key"));
	uri = json_string_value(json_object_get(key, "token_uri"));
	kid = json_string_value(json_object_get(key, "private_key_id"));
	if (!email || !pem)
		return mtc_fail(err, errlen,
				"service-account key '%s' lacks client_email or private_key",
				a->cred_file);
	if (!uri)
		uri = TOKEN_URI;
	hdr = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	if (kid)
		json_object_set_new(hdr, "kid", json_string(kid));
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", SCOPE, "aud", uri, "iat",
			   (json_int_t)now, "exp", (json_int_t)now + 3600);
	s = json_dumps(hdr, JSON_COMPACT);
	h64 = mtc_base64url(s, strlen(s));
	free(s);
	s = json_dumps(claims, JSON_COMPACT);
	c64 = mtc_base64url(s, strlen(s));
	free(s);
	input = xasprintf("%s.%s", h64, c64);
	sig = rs256(pem, input, err, errlen);
	if (sig) {
		char *jwt = xasprintf("%s.%s", input, sig);
		char *assertion = form_value(jwt);
		char *form = xasprintf("grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3A"
				       "jwt-bearer&assertion=%s",
				       assertion);
		what = xasprintf("service-account key '%s'", a->cred_file);
		rc = exchange(a, what, uri, form, err, errlen);
		free(what);
		free(form);
		free(assertion);
		free(jwt);
	}
	free(sig);
	free(input);
	free(h64);
	free(c64);
	json_decref(hdr);
	json_decref(claims);
	return rc;
}

/* A user's refresh token (gcloud auth application-default login) exchanged at token_uri. */
static int authorized_user_token(struct mtc_gcs_auth *a, json_t *cred, char *err, size_t errlen)
{
	const char *id = json_string_value(json_object_get(cred, "client_id"));
	const char *secret = json_string_value(json_object_get(cred, "client_secret"));
	const char *refresh = json_string_value(json_object_get(cred, "refresh_token"));
	const char *uri = json_string_value(json_object_get(cred, "token_uri"));
	char *id_f, *secret_f, *refresh_f, *form, *what;
	int rc;

	if (!id || !secret || !refresh)
		return mtc_fail(err, errlen,
				"user credentials '%s' lack client_id, client_secret or refresh_token",
				a->cred_file);
	if (!uri)
		uri = TOKEN_URI;
	id_f = form_value(id);
	secret_f = form_value(secret);
	refresh_f = form_value(refresh);
	form = xasprintf("grant_type=refresh_token&client_id=%s&client_secret=%s&refresh_token=%s", id_f,
			 secret_f, refresh_f);
	what = xasprintf("user credentials '%s'", a->cred_file);
	rc = exchange(a, what, uri, form, err, errlen);
	if (rc < 0 && (strstr(err, ": invalid_grant") || strstr(err, ": invalid_client"))) {
		size_t n = strlen(err);
		snprintf(err + n, errlen - n, " (log in again: gcloud auth application-default login)");
	}
	free(what);
	free(form);
	free(refresh_f);
	free(secret_f);
	free(id_f);
	return rc;
}

/* Reads the credentials file again and refreshes by the kind its "type" names. */
static int credentials_token(struct mtc_gcs_auth *a, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = json_load_file(a->cred_file, 0, &je);
	int rc;

	if (!j)
		return mtc_fail(err, errlen, "cannot read credentials '%s': %s", a->cred_file, je.text);
	rc = credentials_kind(j, a->cred_file, &a->kind, err, errlen);
	if (rc == 0 && a->kind == MTC_GCS_AUTH_SERVICE_ACCOUNT)
		rc = service_account_token(a, j, err, errlen);
	else if (rc == 0)
		rc = authorized_user_token(a, j, err, errlen);
	json_decref(j);
	return rc;
}

/* True on a Google Cloud machine (its DMI product name), where the metadata server is. */
static int on_google_cloud(void)
{
	char name[64] = "";
	FILE *f = fopen("/sys/class/dmi/id/product_name", "r");

	if (!f)
		return 0;
	if (!fgets(name, sizeof name, f))
		name[0] = '\0';
	fclose(f);
	return !strncmp(name, "Google", 6);
}

/*
 * The metadata server, retried for metadata_wait seconds while a pod starts.
 * A host name that does not resolve off Google Cloud is a workstation: that
 * ends the wait at once. Unreachable, the error names every source passed over.
 */
static int metadata_token(struct mtc_gcs_auth *a, char *err, size_t errlen)
{
	struct mtc_retry retry;
	char why[256];
	struct body b;
	long status;

	mtc_retry_init(&retry, MTC_BACKOFF_METADATA, mtc_now() + a->metadata_wait);
	for (;;) {
		status = http(a->metadata_url, NULL, "Metadata-Flavor: Google", &b, why, sizeof why);
		if (status == 200) {
			int rc = take_token(a, &b, a->metadata_url, err, errlen);
			mtc_buf_free(&b.buf);
			return rc;
		}
		mtc_buf_free(&b.buf);
		if (!status && b.cc == CURLE_COULDNT_RESOLVE_HOST && !on_google_cloud())
			break;
		if (mtc_retry_wait(&retry) < 0)
			break;
	}
	if (status)
		return mtc_fail(err, errlen, "metadata server '%s': HTTP %ld", a->metadata_url, status);
	return mtc_fail(err, errlen, "no gs:// credentials: %s, metadata server unreachable (%s); %s",
			a->passed_over, why, WORKSTATION_HINT);
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

static int refresh(void *arg, char *err, size_t errlen)
{
	struct mtc_gcs_auth *a = arg;

	switch (a->kind) {
	case MTC_GCS_AUTH_TOKEN: return a->token_file ? token_from_file(a, err, errlen) : 0;
	case MTC_GCS_AUTH_SERVICE_ACCOUNT:
	case MTC_GCS_AUTH_AUTHORIZED_USER: return credentials_token(a, err, errlen);
	case MTC_GCS_AUTH_METADATA: return metadata_token(a, err, errlen);
	case MTC_GCS_AUTH_NONE: break;
	}
	return 0;
}

/*
 * A failed refresh is answered again for MTC_CRED_HOLD_S seconds without a new
 * attempt, so that a thousand requests do not each wait out the metadata
 * server; a token not yet expired is still used when its early refresh fails.
 */
int mtc_gcs_auth_token(struct mtc_gcs_auth *a, int force, char **token, char *err, size_t errlen)
{
	int rc = 0;
	double now;

	*token = NULL;
	if (a->kind == MTC_GCS_AUTH_NONE)
		return 0;
	pthread_mutex_lock(&a->lock);
	now = mtc_now();
	if (force || !a->token || (a->expires && now > a->expires - REFRESH_MARGIN)) {
		rc = mtc_cred_hold_refresh(&a->hold, refresh, a, err, errlen);
		if (rc < 0 && !force && a->token && a->expires && now < a->expires)
			rc = 0;
	}
	if (rc == 0 && a->token)
		*token = xstrdup(a->token);
	pthread_mutex_unlock(&a->lock);
	return rc;
}
