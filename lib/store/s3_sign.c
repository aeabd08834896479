#include "s3_sign.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "buf.h"
#include "log.h"
#include "xalloc.h"

#define ALGORITHM "AWS4-HMAC-SHA256"
#define SIGNED_MAX (1u << 24)

void mtc_s3_creds_free(struct mtc_s3_creds *c)
{
	if (!c)
		return;
	if (c->secret_key)
		OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
	free(c->access_key);
	free(c->secret_key);
	free(c->session_token);
	*c = (struct mtc_s3_creds){ 0 };
}

void mtc_s3_creds_copy(struct mtc_s3_creds *to, const struct mtc_s3_creds *from)
{
	to->access_key = from->access_key ? xstrdup(from->access_key) : NULL;
	to->secret_key = from->secret_key ? xstrdup(from->secret_key) : NULL;
	to->session_token = from->session_token ? xstrdup(from->session_token) : NULL;
	to->expires = from->expires;
}

static void hex(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void mtc_s3_sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL);
	hex(md, 32, out);
}

static void hmac(const void *key, size_t keylen, const char *msg, unsigned char out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), out, &n);
}

void mtc_s3_signing_key(const char *secret, const char *date, const char *region, const char *service,
			unsigned char key[32])
{
	char *k = xasprintf("AWS4%s", secret);

	hmac(k, strlen(k), date, key);
	OPENSSL_cleanse(k, strlen(k));
	free(k);
	hmac(key, 32, region, key);
	hmac(key, 32, service, key);
	hmac(key, 32, "aws4_request", key);
}

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '_' || c == '.' || c == '~';
}

static void encode_into(struct mtc_buf *b, const char *s, int keep_slash)
{
	static const char digits[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (unreserved(*p) || (keep_slash && *p == '/')) {
			mtc_buf_append(b, p, 1);
		} else {
			char e[3] = { '%', digits[*p >> 4], digits[*p & 15] };
			mtc_buf_append(b, e, 3);
		}
	}
}

char *mtc_s3_uri_encode(const char *s, int keep_slash)
{
	struct mtc_buf b = MTC_BUF_INIT(SIZE_MAX);
	char *out;

	encode_into(&b, s, keep_slash);
	out = mtc_buf_take(&b);
	return out ? out : xstrdup("");
}

/* A name and a value, both already in their canonical form. */
struct entry {
	char *name, *value;
	size_t order;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

/* Headers by name; one name given twice keeps the order given. */
static int header_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

static void entries_free(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].name);
		free(e[i].value);
	}
	free(e);
}

static char *canonical_query(const struct mtc_s3_request *r)
{
	struct entry *e = xcalloc(r->n_params + 1, sizeof *e);
	struct mtc_buf b = MTC_BUF_INIT(SIGNED_MAX);
	char *out;

	for (size_t i = 0; i < r->n_params; i++) {
		e[i].name = mtc_s3_uri_encode(r->params[i].name, 0);
		e[i].value = mtc_s3_uri_encode(r->params[i].value ? r->params[i].value : "", 0);
	}
	qsort(e, r->n_params, sizeof *e, entry_cmp);
	for (size_t i = 0; i < r->n_params; i++)
		mtc_buf_appendf(&b, "%s%s=%s", i ? "&" : "", e[i].name, e[i].value);
	entries_free(e, r->n_params);
	out = mtc_buf_take(&b);
	return out ? out : xstrdup("");
}

/* A header value trimmed, each inner run of blanks made one space. */
static char *canonical_value(const char *v)
{
	char *out = xmalloc(strlen(v) + 1), *o = out;

	while (*v == ' ' || *v == '\t')
		v++;
	while (*v) {
		if (*v == ' ' || *v == '\t') {
			while (*v == ' ' || *v == '\t')
				v++;
			if (*v)
				*o++ = ' ';
		} else {
			*o++ = *v++;
		}
	}
	*o = '\0';
	return out;
}

static char *lower(const char *s)
{
	char *out = xstrdup(s);

	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return out;
}

static int has_blank_line(const char *s) { return strchr(s, '\n') || strchr(s, '\r'); }

int mtc_s3_sign(const struct mtc_s3_request *r, const struct mtc_s3_creds *c, struct mtc_s3_signed *out,
		char *err, size_t errlen)
{
	size_t n = 0;
	struct entry *h;
	struct mtc_buf cr = MTC_BUF_INIT(SIGNED_MAX), names = MTC_BUF_INIT(SIGNED_MAX);
	const char *payload = r->payload_hash ? r->payload_hash : MTC_S3_EMPTY_SHA256;
	char amz_date[17], date[9], cr_hash[65], sig[65], *line;
	unsigned char key[32], mac[32];
	struct tm tm;

	*out = (struct mtc_s3_signed){ 0 };
	if (!c || !c->access_key || !c->secret_key)
		return mtc_fail(err, errlen, "no credentials to sign with");
	if (!r->path || r->path[0] != '/')
		return mtc_fail(err, errlen, "path '%s' does not start with '/'",
				r->path ? r->path : "");
	for (size_t i = 0; i < r->n_headers; i++)
		if (has_blank_line(r->headers[i].name) || has_blank_line(r->headers[i].value))
			return mtc_fail(err, errlen, "header '%s' spans lines", r->headers[i].name);
	h = xcalloc(r->n_headers + 4, sizeof *h);
	gmtime_r(&r->when, &tm);
	strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
	memcpy(date, amz_date, 8);
	date[8] = '\0';

	h[n++] = (struct entry){ .name = xstrdup("host"), .value = canonical_value(r->host) };
	h[n++] = (struct entry){ .name = xstrdup("x-amz-date"), .value = xstrdup(amz_date) };
	if (!r->no_content_sha256)
		h[n++] = (struct entry){ .name = xstrdup("x-amz-content-sha256"),
					 .value = xstrdup(payload) };
	if (c->session_token && *c->session_token)
		h[n++] = (struct entry){ .name = xstrdup("x-amz-security-token"),
					 .value = canonical_value(c->session_token) };
	for (size_t i = 0; i < r->n_headers; i++)
		h[n++] = (struct entry){ .name = lower(r->headers[i].name),
					 .value = canonical_value(r->headers[i].value) };
	for (size_t i = 0; i < n; i++)
		h[i].order = i;
	qsort(h, n, sizeof *h, header_cmp);

	out->path = mtc_s3_uri_encode(r->path, 1);
	out->query = canonical_query(r);
	mtc_buf_appendf(&cr, "%s\n%s\n%s\n", r->method, out->path, out->query);
	for (size_t i = 0; i < n; i++) {
		/* one name signed twice: its values joined with ',' in the order given */
		if (i && !strcmp(h[i].name, h[i - 1].name)) {
			cr.len--;
			mtc_buf_appendf(&cr, ",%s\n", h[i].value);
			continue;
		}
		mtc_buf_appendf(&cr, "%s:%s\n", h[i].name, h[i].value);
		mtc_buf_appendf(&names, "%s%s", names.len ? ";" : "", h[i].name);
	}
	mtc_buf_appendf(&cr, "\n%s\n%s", mtc_buf_str(&names), payload);
	out->canonical_request = mtc_buf_take(&cr);

	mtc_s3_sha256_hex(out->canonical_request, strlen(out->canonical_request), cr_hash);
	out->string_to_sign = xasprintf(ALGORITHM "\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, date,
					r->region, r->service, cr_hash);
	mtc_s3_signing_key(c->secret_key, date, r->region, r->service, key);
	hmac(key, sizeof key, out->string_to_sign, mac);
	OPENSSL_cleanse(key, sizeof key);
	hex(mac, sizeof mac, sig);
	out->authorization = xasprintf(ALGORITHM
				       " Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
				       "Signature=%s",
				       c->access_key, date, r->region, r->service, mtc_buf_str(&names),
				       sig);

	for (size_t i = 0; i < r->n_headers; i++) {
		line = xasprintf("%s: %s", r->headers[i].name, r->headers[i].value);
		out->headers = curl_slist_append(out->headers, line);
		free(line);
	}
	line = xasprintf("x-amz-date: %s", amz_date);
	out->headers = curl_slist_append(out->headers, line);
	free(line);
	if (!r->no_content_sha256) {
		line = xasprintf("x-amz-content-sha256: %s", payload);
		out->headers = curl_slist_append(out->headers, line);
		free(line);
	}
	if (c->session_token && *c->session_token) {
		line = xasprintf("x-amz-security-token: %s", c->session_token);
		out->headers = curl_slist_append(out->headers, line);
		free(line);
	}
	line = xasprintf("Authorization: %s", out->authorization);
	out->headers = curl_slist_append(out->headers, line);
	free(line);
	mtc_buf_free(&names);
	entries_free(h, n);
	return 0;
}

void mtc_s3_signed_free(struct mtc_s3_signed *s)
{
	free(s->path);
	free(s->query);
	curl_slist_free_all(s->headers);
	free(s->canonical_request);
	free(s->string_to_sign);
	free(s->authorization);
	*s = (struct mtc_s3_signed){ 0 };
}
