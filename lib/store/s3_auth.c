#include "s3_auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "aws_config.h"
#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "cred_hold.h"
#include "fsutil.h"
#include "http.h"
#include "log.h"
#include "s3_endpoint.h"
#include "s3_xml.h"
#include "xalloc.h"

#define ANSWER_MAX (1u << 20)
#define TOKEN_MAX (64u * 1024)
#define ECS_HOST "http://169.254.170.2"
#define IMDS_HOST "http://169.254.169.254"
#define IMDS_CREDS "/latest/meta-data/iam/security-credentials/"
#define HINT "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run 'aws configure'"

struct mtc_s3_auth {
	enum mtc_s3_auth_kind kind;
	char *source;
	char *token_file, *role_arn, *session_name, *sts_url; /* WEB_IDENTITY */
	char *container_url, *auth_token_file, *auth_token;   /* CONTAINER */
	char *imds_url;					      /* INSTANCE */
	char *passed_over; /* INSTANCE: the sources that were not there, for the error */
	pthread_mutex_t lock;
	struct mtc_s3_creds creds; /* access_key NULL until the first refresh */
	struct mtc_cred_hold hold; /* a failed refresh, answered again a while */
};

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

double mtc_s3_parse_time(const char *s)
{
	struct tm tm = { 0 };
	const char *p;
	time_t t;

	if (!s || !(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return -1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (strcmp(p, "Z") && strcmp(p, "+00:00") && strcmp(p, "+0000") && *p)
		return -1;
	t = timegm(&tm);
	return t == (time_t)-1 ? -1 : (double)t;
}

static void set_static(struct mtc_s3_auth *a, const char *key, const char *secret, const char *token)
{
	a->creds.access_key = xstrdup(key);
	a->creds.secret_key = xstrdup(secret);
	a->creds.session_token = token && *token ? xstrdup(token) : NULL;
}

static char *sts_url(const char *region, char *err, size_t errlen)
{
	const char *e = env("AWS_ENDPOINT_URL_STS");
	char *r, *url;

	if (!e)
		e = env("AWS_ENDPOINT_URL");
	if (e)
		return xstrdup(e);
	if (mtc_s3_region(region, &r, err, errlen) < 0)
		return NULL;
	url = xasprintf("https://sts.%s.amazonaws.com%s", r, strncmp(r, "cn-", 3) ? "" : ".cn");
	free(r);
	return url;
}

static int use_web_identity(struct mtc_s3_auth *a, const char *region, const char *file,
			    const char *role, const char *session, const char *from, char *err,
			    size_t errlen)
{
	a->kind = MTC_S3_AUTH_WEB_IDENTITY;
	a->token_file = xstrdup(file);
	a->role_arn = xstrdup(role);
	a->session_name = session ? xstrdup(session) : xasprintf("mtc-%lld", (long long)time(NULL));
	a->source = xasprintf("web identity (%s, role '%s')", from, role);
	return (a->sts_url = sts_url(region, err, errlen)) ? 0 : -1;
}

/* 1 when url may carry the container's token: https, or http to loopback or the agents. */
static int container_host_ok(const char *url)
{
	static const char *const ok[] = { "http://127.",
					  "http://localhost:",
					  "http://localhost/",
					  "http://[::1]",
					  "http://169.254.170.2:",
					  "http://169.254.170.2/",
					  "http://169.254.170.23:",
					  "http://169.254.170.23/",
					  "http://[fd00:ec2::23]" };

	if (!strncmp(url, "https://", 8))
		return 1;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (!strncmp(url, ok[i], strlen(ok[i])))
			return 1;
	return !strcmp(url, "http://localhost") || !strcmp(url, "http://169.254.170.2") ||
	       !strcmp(url, "http://169.254.170.23");
}

/* The profile's part of the chain: 1 when it gave a source, 0 when it has none, -1 on error. */
static int from_profile(struct mtc_s3_auth *a, const char *region, char *err, size_t errlen)
{
	struct mtc_aws_profile p;
	const char *key, *secret, *file, *role, *v;
	static const char *const unrun[] = { "credential_process", "source_profile", "credential_source",
					     "sso_session", "sso_start_url" };
	char *from;
	int rc = 0;

	if (mtc_aws_profile_load(NULL, &p, err, errlen) < 0)
		return -1;
	key = mtc_aws_profile_get(&p, "aws_access_key_id");
	secret = mtc_aws_profile_get(&p, "aws_secret_access_key");
	file = mtc_aws_profile_get(&p, "web_identity_token_file");
	role = mtc_aws_profile_get(&p, "role_arn");
	if (!p.found && env("AWS_PROFILE")) {
		char *c = mtc_aws_credentials_file(), *f = mtc_aws_config_file();
		rc = mtc_fail(err, errlen, "profile '%s' ($AWS_PROFILE) is in neither '%s' nor '%s'",
			      p.name, c ? c : "~/.aws/credentials", f ? f : "~/.aws/config");
		free(c);
		free(f);
	} else if (key && *key && secret && *secret) {
		a->kind = MTC_S3_AUTH_PROFILE;
		a->source = xasprintf("profile '%s'", p.name);
		set_static(a, key, secret, mtc_aws_profile_get(&p, "aws_session_token"));
		rc = 1;
	} else if ((key && *key) || (secret && *secret)) {
		rc = mtc_fail(err, errlen, "profile '%s' has %s but not %s", p.name,
			      key && *key ? "aws_access_key_id" : "aws_secret_access_key",
			      key && *key ? "aws_secret_access_key" : "aws_access_key_id");
	} else if (file && *file && role && *role) {
		from = xasprintf("profile '%s'", p.name);
		rc = use_web_identity(a, region, file, role,
				      mtc_aws_profile_get(&p, "role_session_name"), from, err,
				      errlen) < 0
			     ? -1
			     : 1;
		free(from);
	} else {
		for (size_t i = 0; i < sizeof unrun / sizeof unrun[0] && !rc; i++)
			if ((v = mtc_aws_profile_get(&p, unrun[i])))
				rc = mtc_fail(err, errlen,
					      "profile '%s' uses %s, which mtc does not run: %s", p.name,
					      unrun[i], HINT);
		if (!rc && role)
			rc = mtc_fail(err, errlen,
				      "profile '%s' has role_arn without web_identity_token_file: %s",
				      p.name, HINT);
	}
	mtc_aws_profile_free(&p);
	return rc;
}

int mtc_s3_auth_new(const char *region, struct mtc_s3_auth **out, char *err, size_t errlen)
{
	struct mtc_s3_auth *a = xcalloc(1, sizeof *a);
	const char *key = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY"), *v;
	char *creds_file = NULL;
	int rc = 0;

	pthread_mutex_init(&a->lock, NULL);
	*out = NULL;
	if (key && secret) {
		a->kind = MTC_S3_AUTH_ENV;
		a->source = xstrdup("environment");
		set_static(a, key, secret, env("AWS_SESSION_TOKEN"));
	} else if (key || secret) {
		rc = mtc_fail(err, errlen, "$%s is set but $%s is not",
			      key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			      key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
	} else if ((v = env("AWS_WEB_IDENTITY_TOKEN_FILE"))) {
		if (!env("AWS_ROLE_ARN"))
			rc = mtc_fail(err, errlen,
				      "$AWS_WEB_IDENTITY_TOKEN_FILE is set but $AWS_ROLE_ARN is not");
		else
			rc = use_web_identity(a, region, v, env("AWS_ROLE_ARN"),
					      env("AWS_ROLE_SESSION_NAME"),
					      "$AWS_WEB_IDENTITY_TOKEN_FILE", err, errlen);
	} else if ((rc = from_profile(a, region, err, errlen)) != 0) {
		rc = rc < 0 ? -1 : 0;
	} else if ((v = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) ||
		   (v = env("AWS_CONTAINER_CREDENTIALS_FULL_URI"))) {
		a->kind = MTC_S3_AUTH_CONTAINER;
		a->container_url = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
					   ? xasprintf(ECS_HOST "%s%s", *v == '/' ? "" : "/", v)
					   : xstrdup(v);
		a->source = xasprintf("container endpoint '%s'", a->container_url);
		if ((v = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")))
			a->auth_token_file = xstrdup(v);
		else if ((v = env("AWS_CONTAINER_AUTHORIZATION_TOKEN")))
			a->auth_token = xstrdup(v);
		if (!container_host_ok(a->container_url))
			rc = mtc_fail(err, errlen,
				      "container endpoint '%s' is plain http to a host that is neither "
				      "loopback nor the ECS or EKS agent: refused",
				      a->container_url);
	} else {
		a->kind = MTC_S3_AUTH_INSTANCE;
		creds_file = mtc_aws_credentials_file();
		a->passed_over = xasprintf(
			"$AWS_ACCESS_KEY_ID unset, $AWS_WEB_IDENTITY_TOKEN_FILE unset, no keys for "
			"profile '%s' in %s or its config file, $AWS_CONTAINER_CREDENTIALS_FULL_URI "
			"and _RELATIVE_URI unset",
			mtc_aws_profile_name(), creds_file ? creds_file : "($HOME unset)");
		v = env("AWS_EC2_METADATA_DISABLED");
		if (v && !strcasecmp(v, "true")) {
			rc = mtc_fail(err, errlen,
				      "no s3:// credentials: %s, instance metadata disabled "
				      "($AWS_EC2_METADATA_DISABLED); %s",
				      a->passed_over, HINT);
		} else {
			v = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
			a->imds_url = xstrdup(v ? v : IMDS_HOST);
			while (strlen(a->imds_url) > 1 && a->imds_url[strlen(a->imds_url) - 1] == '/')
				a->imds_url[strlen(a->imds_url) - 1] = '\0';
			a->source = xasprintf("instance metadata '%s'", a->imds_url);
		}
	}
	free(creds_file);
	if (rc < 0) {
		mtc_s3_auth_free(a);
		return -1;
	}
	*out = a;
	return 0;
}

void mtc_s3_auth_free(struct mtc_s3_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a->source);
	free(a->token_file);
	free(a->role_arn);
	free(a->session_name);
	free(a->sts_url);
	free(a->container_url);
	free(a->auth_token_file);
	free(a->auth_token);
	free(a->imds_url);
	free(a->passed_over);
	mtc_cred_hold_free(&a->hold);
	mtc_s3_creds_free(&a->creds);
	free(a);
}

enum mtc_s3_auth_kind mtc_s3_auth_kind(const struct mtc_s3_auth *a) { return a->kind; }

const char *mtc_s3_auth_source(const struct mtc_s3_auth *a) { return a->source ? a->source : "none"; }

/* A file's first line, trailing blanks dropped (malloc'd), or NULL with err. */
static char *read_token(const char *path, const char *what, char *err, size_t errlen)
{
	char *buf;
	size_t len;

	if (mtc_read_file(path, TOKEN_MAX, &buf, &len) < 0) {
		mtc_fail(err, errlen, "cannot read %s '%s': %s", what, path, strerror(errno));
		return NULL;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	len = strlen(buf);
	while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		buf[--len] = '\0';
	if (!len) {
		free(buf);
		mtc_fail(err, errlen, "%s '%s' is empty", what, path);
		return NULL;
	}
	return buf;
}

static void take(struct mtc_s3_auth *a, char *key, char *secret, char *token, double expires)
{
	mtc_s3_creds_free(&a->creds);
	a->creds.access_key = key;
	a->creds.secret_key = secret;
	a->creds.session_token = token;
	a->creds.expires = expires;
}

/* Form-encodes s (malloc'd). */
static char *form_value(const char *s)
{
	CURL *c = curl_easy_init();
	char *e = curl_easy_escape(c, s, 0), *out = xstrdup(e);

	curl_free(e);
	curl_easy_cleanup(c);
	return out;
}

/*
 * STS AssumeRoleWithWebIdentity (an unsigned POST) with the token read again;
 * retried on transport errors, 408, 429 and 5xx. A refusal reads as
 * "web identity: AssumeRoleWithWebIdentity at 'URL' for role 'ARN': HTTP 400:
 * InvalidIdentityToken: why".
 */
static int web_identity(struct mtc_s3_auth *a, char *err, size_t errlen)
{
	struct mtc_http_opts o = { .url = a->sts_url, .idempotent = 1, .timeout_s = 30, .connect_s = 5 };
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/xml");
	char *token, *t, *r, *s, *form;
	struct mtc_retry retry;
	struct mtc_buf b;
	CURLcode cc;
	int rc = -1;

	if (!(token = read_token(a->token_file, "web identity token file", err, errlen))) {
		curl_slist_free_all(h);
		return -1;
	}
	t = form_value(token);
	r = form_value(a->role_arn);
	s = form_value(a->session_name);
	form = xasprintf("Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=%s"
			 "&RoleSessionName=%s&WebIdentityToken=%s",
			 r, s, t);
	free(t);
	free(r);
	free(s);
	free(token);
	mtc_retry_init(&retry, MTC_BACKOFF_TOKEN, mtc_now() + 60);
	for (;;) {
		char why[256];
		long status;

		mtc_buf_init(&b, ANSWER_MAX);
		status = mtc_http_fetch(&o, NULL, form, h, &b, &cc, why, sizeof why);
		if (status == 200) {
			char *key = mtc_s3_xml_text(b.p, b.len, "AccessKeyId");
			char *secret = mtc_s3_xml_text(b.p, b.len, "SecretAccessKey");
			char *session = mtc_s3_xml_text(b.p, b.len, "SessionToken");
			char *exp = mtc_s3_xml_text(b.p, b.len, "Expiration");
			double e = mtc_s3_parse_time(exp);
			if (key && secret && session && e > 0) {
				take(a, key, secret, session, e);
				rc = 0;
			} else {
				mtc_fail(err, errlen,
					 "web identity: no credentials in the answer from '%s'",
					 a->sts_url);
				free(key);
				free(secret);
				free(session);
			}
			free(exp);
			mtc_buf_free(&b);
			break;
		}
		if (status) {
			char *code = mtc_s3_xml_text(b.p, b.len, "Code");
			char *msg = mtc_s3_xml_text(b.p, b.len, "Message");
			if (code)
				mtc_fail(err, errlen,
					 "web identity: AssumeRoleWithWebIdentity at '%s' for role '%s': "
					 "HTTP %ld: %s%s%.200s",
					 a->sts_url, a->role_arn, status, code, msg ? ": " : "",
					 msg ? mtc_cred_one_line(msg) : "");
			else
				mtc_fail(err, errlen,
					 "web identity: AssumeRoleWithWebIdentity at '%s' for role '%s': "
					 "HTTP %ld: %.200s",
					 a->sts_url, a->role_arn, status, mtc_cred_one_line(b.p));
			free(code);
			free(msg);
		} else {
			mtc_fail(err, errlen,
				 "web identity: AssumeRoleWithWebIdentity at '%s' for role '%s': %s",
				 a->sts_url, a->role_arn, why);
		}
		mtc_buf_free(&b);
		if ((status && !mtc_http_transient(status)) || retry.attempt == 3 ||
		    mtc_retry_wait(&retry) < 0)
			break;
	}
	free(form);
	curl_slist_free_all(h);
	return rc;
}

/* Credentials as the container endpoint and IMDS answer them, in JSON. */
static int take_json(struct mtc_s3_auth *a, const struct mtc_buf *b, const char *from, char *err,
		     size_t errlen)
{
	json_t *j = json_loadb(mtc_buf_str(b), b->len, 0, NULL);
	const char *key = json_string_value(json_object_get(j, "AccessKeyId"));
	const char *secret = json_string_value(json_object_get(j, "SecretAccessKey"));
	const char *token = json_string_value(json_object_get(j, "Token"));
	const char *exp = json_string_value(json_object_get(j, "Expiration"));
	const char *code = json_string_value(json_object_get(j, "Code"));
	double e = exp ? mtc_s3_parse_time(exp) : 0;

	if (code && strcmp(code, "Success")) {
		mtc_fail(err, errlen, "'%s' answered Code '%s'", from, code);
	} else if (!key || !*key || !secret || !*secret || e < 0) {
		mtc_fail(err, errlen, "no credentials in the answer from '%s'", from);
	} else {
		take(a, xstrdup(key), xstrdup(secret), token && *token ? xstrdup(token) : NULL, e);
		json_decref(j);
		return 0;
	}
	json_decref(j);
	return -1;
}

/* The container endpoint, its Authorization token read again from its file. */
static int container(struct mtc_s3_auth *a, char *err, size_t errlen)
{
	struct mtc_http_opts o = {
		.url = a->container_url, .idempotent = 1, .timeout_s = 10, .connect_s = 2
	};
	struct curl_slist *h = NULL;
	struct mtc_retry retry;
	struct mtc_buf b;
	char why[256], *token = NULL, *line;
	long status;
	CURLcode cc;
	int rc = -1;

	if (a->auth_token_file &&
	    !(token = read_token(a->auth_token_file, "container authorization token file", err, errlen)))
		return -1;
	if (token || a->auth_token) {
		line = xasprintf("Authorization: %s", token ? token : a->auth_token);
		h = curl_slist_append(h, line);
		free(line);
	}
	free(token);
	mtc_retry_init(&retry, MTC_BACKOFF_CONTAINER, mtc_now() + 10);
	for (;;) {
		mtc_buf_init(&b, ANSWER_MAX);
		status = mtc_http_fetch(&o, NULL, NULL, h, &b, &cc, why, sizeof why);
		if (status == 200) {
			rc = take_json(a, &b, a->container_url, err, errlen);
			break;
		}
		if (status)
			mtc_fail(err, errlen, "container endpoint '%s': HTTP %ld: %.200s",
				 a->container_url, status, mtc_cred_one_line(b.p));
		else
			mtc_fail(err, errlen, "container endpoint '%s': %s", a->container_url, why);
		if ((status && !mtc_http_transient(status)) || retry.attempt == 2 ||
		    mtc_retry_wait(&retry) < 0)
			break;
		mtc_buf_free(&b);
	}
	mtc_buf_free(&b);
	curl_slist_free_all(h);
	return rc;
}

/* One IMDS exchange; the status, or 0 with why. */
static long imds(struct mtc_s3_auth *a, const char *method, const char *path, const char *header,
		 struct mtc_buf *b, char *why, size_t whylen)
{
	char *url = xasprintf("%s%s", a->imds_url, path);
	struct mtc_http_opts o = { .url = url, .idempotent = 1, .timeout_s = 2, .connect_s = 1 };
	struct curl_slist *h = curl_slist_append(NULL, header);
	CURLcode cc;
	long status;

	mtc_buf_init(b, ANSWER_MAX);
	status = mtc_http_fetch(&o, method, method ? "" : NULL, h, b, &cc, why, whylen);
	curl_slist_free_all(h);
	free(url);
	return status;
}

/* IMDSv2: a session token, the role's name, then its credentials. */
static int instance(struct mtc_s3_auth *a, char *err, size_t errlen)
{
	struct mtc_buf b;
	char why[256], *token, *line, *role, *path;
	long status;
	int rc;

	status = imds(a, "PUT", "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 21600", &b,
		      why, sizeof why);
	if (!status) {
		mtc_buf_free(&b);
		return mtc_fail(err, errlen,
				"no s3:// credentials: %s, instance metadata '%s' unreachable (%s); %s",
				a->passed_over, a->imds_url, why, HINT);
	}
	if (status != 200) {
		mtc_fail(err, errlen, "instance metadata '%s': session token: HTTP %ld: %.200s",
			 a->imds_url, status, mtc_cred_one_line(b.p));
		mtc_buf_free(&b);
		return -1;
	}
	token = mtc_buf_take(&b);
	line = xasprintf("X-aws-ec2-metadata-token: %s", token ? mtc_cred_one_line(token) : "");
	free(token);
	status = imds(a, NULL, IMDS_CREDS, line, &b, why, sizeof why);
	if (status != 200) {
		if (status == 404)
			mtc_fail(err, errlen, "instance metadata '%s': the instance has no IAM role",
				 a->imds_url);
		else if (status)
			mtc_fail(err, errlen, "instance metadata '%s': role: HTTP %ld", a->imds_url,
				 status);
		else
			mtc_fail(err, errlen, "instance metadata '%s': %s", a->imds_url, why);
		mtc_buf_free(&b);
		free(line);
		return -1;
	}
	role = mtc_buf_take(&b);
	if (role)
		role[strcspn(role, "\r\n")] = '\0';
	if (!role || !*role || strchr(role, '/')) {
		free(role);
		free(line);
		return mtc_fail(err, errlen, "instance metadata '%s': no role name", a->imds_url);
	}
	path = xasprintf(IMDS_CREDS "%s", role);
	status = imds(a, NULL, path, line, &b, why, sizeof why);
	if (status == 200) {
		char *from = xasprintf("%s%s", a->imds_url, path);
		rc = take_json(a, &b, from, err, errlen);
		free(from);
	} else if (status) {
		rc = mtc_fail(err, errlen, "instance metadata '%s': role '%s': HTTP %ld", a->imds_url,
			      role, status);
	} else {
		rc = mtc_fail(err, errlen, "instance metadata '%s': %s", a->imds_url, why);
	}
	mtc_buf_free(&b);
	free(path);
	free(role);
	free(line);
	return rc;
}

static int refresh(void *arg, char *err, size_t errlen)
{
	struct mtc_s3_auth *a = arg;

	switch (a->kind) {
	case MTC_S3_AUTH_WEB_IDENTITY: return web_identity(a, err, errlen);
	case MTC_S3_AUTH_CONTAINER: return container(a, err, errlen);
	case MTC_S3_AUTH_INSTANCE: return instance(a, err, errlen);
	case MTC_S3_AUTH_ENV:
	case MTC_S3_AUTH_PROFILE: break;
	}
	return 0;
}

int mtc_s3_auth_get(struct mtc_s3_auth *a, int force, struct mtc_s3_creds *out, char *err, size_t errlen)
{
	int rc = 0, fixed = a->kind == MTC_S3_AUTH_ENV || a->kind == MTC_S3_AUTH_PROFILE;
	double now;

	*out = (struct mtc_s3_creds){ 0 };
	pthread_mutex_lock(&a->lock);
	now = mtc_wall_now();
	if (!fixed && (force || !a->creds.access_key ||
		       (a->creds.expires && now > a->creds.expires - MTC_S3_REFRESH_MARGIN))) {
		rc = mtc_cred_hold_refresh(&a->hold, refresh, a, err, errlen);
		if (rc < 0 && !force && a->creds.access_key && a->creds.expires &&
		    now < a->creds.expires)
			rc = 0;
	}
	if (rc == 0 && !a->creds.access_key)
		rc = mtc_fail(err, errlen, "no s3:// credentials from %s", mtc_s3_auth_source(a));
	if (rc == 0)
		mtc_s3_creds_copy(out, &a->creds);
	pthread_mutex_unlock(&a->lock);
	return rc;
}
