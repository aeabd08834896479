#include "s3_endpoint.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "aws_config.h"
#include "log.h"
#include "xalloc.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int mtc_s3_region(const char *given, char **region, char *err, size_t errlen)
{
	const char *r = given && *given ? given : env("AWS_REGION");
	struct mtc_aws_profile p;

	if (!r)
		r = env("AWS_DEFAULT_REGION");
	if (r) {
		*region = xstrdup(r);
		return 0;
	}
	if (mtc_aws_profile_load(NULL, &p, err, errlen) < 0)
		return -1;
	r = mtc_aws_profile_get(&p, "region");
	*region = xstrdup(r && *r ? r : "us-east-1");
	mtc_aws_profile_free(&p);
	return 0;
}

int mtc_s3_dns_bucket(const char *bucket, int dots)
{
	size_t n = strlen(bucket);
	struct in_addr a;

	if (n < 3 || n > 63 || inet_pton(AF_INET, bucket, &a) == 1)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = bucket[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if ((i == 0 || i == n - 1) && !alnum)
			return 0;
		if (c == '.' &&
		    (!dots || bucket[i - 1] == '.' || bucket[i - 1] == '-' || bucket[i + 1] == '-'))
			return 0;
		if (!alnum && c != '-' && c != '.')
			return 0;
	}
	return 1;
}

/* 1 when host (no port; an IPv6 address in brackets) is an IP address. */
static int is_ip(const char *host)
{
	unsigned char a[16];

	return host[0] == '[' || inet_pton(AF_INET, host, a) == 1;
}

/* Splits scheme://authority/path; -1 with err when it is not a URL mtc can use. */
static int split_endpoint(const char *url, char **scheme, char **host, char **port, char **path,
			  char *err, size_t errlen)
{
	const char *p = strstr(url, "://"), *auth, *end, *colon, *at;

	if (!p || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return mtc_fail(err, errlen, "endpoint '%s' is not an http:// or https:// URL", url);
	*scheme = xasprintf("%.*s", (int)(p - url), url);
	auth = p + 3;
	end = auth + strcspn(auth, "/?#");
	if ((at = memchr(auth, '@', (size_t)(end - auth))))
		return mtc_fail(err, errlen, "endpoint '%s' holds credentials: give them as keys", url);
	if (end == auth)
		return mtc_fail(err, errlen, "endpoint '%s' names no host", url);
	if (*end == '?' || *end == '#')
		return mtc_fail(err, errlen, "endpoint '%s' has a query or a fragment", url);
	if (*auth == '[') {
		const char *close = memchr(auth, ']', (size_t)(end - auth));
		if (!close)
			return mtc_fail(err, errlen, "endpoint '%s': unclosed '['", url);
		colon = close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(auth, ':', (size_t)(end - auth));
	}
	*host = xasprintf("%.*s", (int)((colon ? colon : end) - auth), auth);
	*port = colon ? xasprintf("%.*s", (int)(end - colon - 1), colon + 1) : xstrdup("");
	*path = xstrdup(end);
	while (**path && (*path)[strlen(*path) - 1] == '/')
		(*path)[strlen(*path) - 1] = '\0';
	return 0;
}

static const char *configured_endpoint(const char *given, const struct mtc_aws_profile *p)
{
	const char *e = given && *given ? given : env("AWS_ENDPOINT_URL_S3");

	if (!e)
		e = env("AWS_ENDPOINT_URL");
	if (!e && p)
		e = mtc_aws_profile_get(p, "endpoint_url");
	return e && *e ? e : NULL;
}

int mtc_s3_target_resolve(const char *bucket, const char *endpoint, const char *region,
			  enum mtc_s3_style style, struct mtc_s3_target *out, char *err, size_t errlen)
{
	struct mtc_aws_profile p;
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *aws_host = NULL;
	const char *e, *s;
	int virt, rc = -1;

	*out = (struct mtc_s3_target){ 0 };
	if (mtc_aws_profile_load(NULL, &p, err, errlen) < 0)
		return -1;
	if (mtc_s3_region(region, &out->region, err, errlen) < 0)
		goto done;
	if (style == MTC_S3_STYLE_AUTO && (s = mtc_aws_profile_get(&p, "s3.addressing_style")))
		style = !strcmp(s, "path")	? MTC_S3_STYLE_PATH
			: !strcmp(s, "virtual") ? MTC_S3_STYLE_VIRTUAL
						: MTC_S3_STYLE_AUTO;
	e = configured_endpoint(endpoint, &p);
	out->custom = e != NULL;
	if (!e) {
		int cn = !strncmp(out->region, "cn-", 3);
		aws_host = !strcmp(out->region, "us-east-1")
				   ? xstrdup("s3.amazonaws.com")
				   : xasprintf("s3.%s.amazonaws.com%s", out->region, cn ? ".cn" : "");
		e = aws_host;
		scheme = xstrdup("https");
		host = xstrdup(aws_host);
		port = xstrdup("");
		path = xstrdup("");
	} else if (split_endpoint(e, &scheme, &host, &port, &path, err, errlen) < 0) {
		goto done;
	}
	if (!strcmp(port, scheme[4] == 's' ? "443" : "80"))
		port[0] = '\0';
	virt = style == MTC_S3_STYLE_VIRTUAL ||
	       (style == MTC_S3_STYLE_AUTO && !out->custom &&
		mtc_s3_dns_bucket(bucket, strcmp(scheme, "https") != 0));
	if (style == MTC_S3_STYLE_VIRTUAL && (is_ip(host) || !mtc_s3_dns_bucket(bucket, 1))) {
		mtc_fail(err, errlen, "bucket '%s' cannot be addressed virtual-hosted on '%s'", bucket,
			 e);
		goto done;
	}
	out->path_style = !virt;
	out->host = xasprintf("%s%s%s%s%s", virt ? bucket : "", virt ? "." : "", host, *port ? ":" : "",
			      port);
	out->base = xasprintf("%s://%s", scheme, out->host);
	out->path_prefix = virt ? xstrdup(path) : xasprintf("%s/%s", path, bucket);
	rc = 0;
done:
	if (rc < 0)
		mtc_s3_target_free(out);
	mtc_aws_profile_free(&p);
	free(scheme);
	free(host);
	free(port);
	free(path);
	free(aws_host);
	return rc;
}

void mtc_s3_target_free(struct mtc_s3_target *t)
{
	free(t->region);
	free(t->base);
	free(t->host);
	free(t->path_prefix);
	*t = (struct mtc_s3_target){ 0 };
}
