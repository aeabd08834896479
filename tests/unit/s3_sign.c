/*
 * SigV4 (lib/store/s3_sign.c) against the vectors AWS publishes: the four
 * S3 examples of "Signature Calculations for the Authorization Header:
 * Transferring Payload in a Single Chunk" and the signing key and IAM
 * ListUsers request of the SigV4 reference; the target resolution of
 * s3_endpoint.c. Without arguments: the TAP suite. "s3_sign sign" reads a
 * request as JSON on stdin and prints what mtc signs and sends, as JSON;
 * "s3_sign target BUCKET [ENDPOINT [path|virtual]]" prints where it goes:
 * tests/s3_oracle.py compares both with botocore's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "store/s3_auth.h"
#include "store/s3_endpoint.h"
#include "store/s3_sign.h"
#include "store/s3_xml.h"
#include "tap.h"
#include "xalloc.h"

#define DOC_KEY "AKIAIOSFODNN7EXAMPLE"
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DOC_HOST "examplebucket.s3.amazonaws.com"
#define DOC_WHEN 1369353600 /* 20130524T000000Z */

static struct mtc_s3_creds doc = { DOC_KEY, DOC_SECRET, NULL, 0 };

static void sign_or_fail(const struct mtc_s3_request *r, const struct mtc_s3_creds *c,
			 struct mtc_s3_signed *s)
{
	char err[256];

	if (mtc_s3_sign(r, c, s, err, sizeof err) < 0) {
		printf("Bail out! %s\n", err);
		exit(1);
	}
}

static const char *signature(const struct mtc_s3_signed *s)
{
	const char *p = strstr(s->authorization, "Signature=");
	return p ? p + 10 : "";
}

static const char *hash_line(const struct mtc_s3_signed *s)
{
	const char *p = strrchr(s->string_to_sign, '\n');
	return p ? p + 1 : "";
}

static int has_header(const struct mtc_s3_signed *s, const char *line)
{
	for (struct curl_slist *l = s->headers; l; l = l->next)
		if (!strcmp(l->data, line))
			return 1;
	return 0;
}

static void published_s3_examples(void)
{
	struct mtc_s3_pair range[] = { { "Range", "bytes=0-9" } };
	struct mtc_s3_request r = { .method = "GET",
				    .host = DOC_HOST,
				    .path = "/test.txt",
				    .headers = range,
				    .n_headers = 1,
				    .region = "us-east-1",
				    .service = "s3",
				    .when = DOC_WHEN };
	struct mtc_s3_signed s;
	char body_hash[65];

	sign_or_fail(&r, &doc, &s);
	is_str(s.canonical_request,
	       "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
	       "x-amz-content-sha256:" MTC_S3_EMPTY_SHA256 "\nx-amz-date:20130524T000000Z\n\n"
	       "host;range;x-amz-content-sha256;x-amz-date\n" MTC_S3_EMPTY_SHA256,
	       "GET Object: the canonical request");
	is_str(hash_line(&s), "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
	       "GET Object: the canonical request's hash in the string to sign");
	is_str(s.authorization,
	       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
	       "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
	       "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	       "GET Object: the published Authorization header");
	ok(has_header(&s, "x-amz-content-sha256: " MTC_S3_EMPTY_SHA256) &&
		   has_header(&s, "x-amz-date: 20130524T000000Z") && has_header(&s, "Range: bytes=0-9"),
	   "GET Object: the headers sent are the ones signed");
	mtc_s3_signed_free(&s);

	struct mtc_s3_pair put_h[] = { { "Date", "Fri, 24 May 2013 00:00:00 GMT" },
				       { "x-amz-storage-class", "REDUCED_REDUNDANCY" } };
	mtc_s3_sha256_hex("Welcome to Amazon S3.", 21, body_hash);
	is_str(body_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
	       "PUT Object: the payload's hash");
	r = (struct mtc_s3_request){ .method = "PUT",
				     .host = DOC_HOST,
				     .path = "/test$file.text",
				     .headers = put_h,
				     .n_headers = 2,
				     .payload_hash = body_hash,
				     .region = "us-east-1",
				     .service = "s3",
				     .when = DOC_WHEN };
	sign_or_fail(&r, &doc, &s);
	is_str(s.path, "/test%24file.text", "PUT Object: '$' encoded in the path");
	is_str(hash_line(&s), "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
	       "PUT Object: the canonical request's hash");
	is_str(signature(&s), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
	       "PUT Object: the published signature");
	ok(strstr(s.authorization,
		  "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class") != NULL,
	   "PUT Object: the signed headers sorted");
	mtc_s3_signed_free(&s);

	struct mtc_s3_pair lifecycle[] = { { "lifecycle", NULL } };
	r = (struct mtc_s3_request){ .method = "GET",
				     .host = DOC_HOST,
				     .path = "/",
				     .params = lifecycle,
				     .n_params = 1,
				     .region = "us-east-1",
				     .service = "s3",
				     .when = DOC_WHEN };
	sign_or_fail(&r, &doc, &s);
	is_str(s.query, "lifecycle=", "GET Bucket Lifecycle: a bare name signs as 'name='");
	is_str(hash_line(&s), "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
	       "GET Bucket Lifecycle: the canonical request's hash");
	is_str(signature(&s), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
	       "GET Bucket Lifecycle: the published signature");
	mtc_s3_signed_free(&s);

	struct mtc_s3_pair list[] = { { "prefix", "J" }, { "max-keys", "2" } };
	r.params = list;
	r.n_params = 2;
	sign_or_fail(&r, &doc, &s);
	is_str(s.query, "max-keys=2&prefix=J", "List Objects: the query sorted");
	is_str(hash_line(&s), "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
	       "List Objects: the canonical request's hash");
	is_str(signature(&s), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	       "List Objects: the published signature");
	mtc_s3_signed_free(&s);
}

static void published_sigv4_reference(void)
{
	struct mtc_s3_creds iam = { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL, 0 };
	struct mtc_s3_pair h[] = { { "Content-Type",
				     "application/x-www-form-urlencoded; charset=utf-8" } };
	struct mtc_s3_pair q[] = { { "Version", "2010-05-08" }, { "Action", "ListUsers" } };
	struct tm tm = { .tm_year = 115, .tm_mon = 7, .tm_mday = 30, .tm_hour = 12, .tm_min = 36 };
	struct mtc_s3_request r = { .method = "GET",
				    .host = "iam.amazonaws.com",
				    .path = "/",
				    .params = q,
				    .n_params = 2,
				    .headers = h,
				    .n_headers = 1,
				    .no_content_sha256 = 1,
				    .region = "us-east-1",
				    .service = "iam",
				    .when = timegm(&tm) };
	struct mtc_s3_signed s;
	unsigned char key[32];
	char hex[65];

	mtc_s3_signing_key(iam.secret_key, "20150830", "us-east-1", "iam", key);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", key[i]);
	is_str(hex, "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9",
	       "the published signing key");
	mtc_s3_signing_key(DOC_SECRET, "20130524", "us-east-1", "s3", key);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", key[i]);
	is_str(hex, "dbb893acc010964918f1fd433add87c70e8b0db6be30c1fbeafefa5ec6ba8378",
	       "the S3 examples' signing key");
	sign_or_fail(&r, &iam, &s);
	is_str(hash_line(&s), "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59",
	       "IAM ListUsers: the canonical request's hash (no x-amz-content-sha256)");
	is_str(signature(&s), "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
	       "IAM ListUsers: the published signature");
	mtc_s3_signed_free(&s);
}

static void encoding_and_headers(void)
{
	struct mtc_s3_creds temp = { DOC_KEY, DOC_SECRET, "FQoG/token+x==", 0 };
	struct mtc_s3_pair h[] = { { "X-Amz-Meta-A", "  two   words \t " },
				   { "x-amz-meta-a", "second" } };
	struct mtc_s3_request r = { .method = "PUT",
				    .host = "h",
				    .path = "/a b/c+d/é~/%41",
				    .headers = h,
				    .n_headers = 2,
				    .payload_hash = MTC_S3_UNSIGNED_PAYLOAD,
				    .region = "eu-west-1",
				    .service = "s3",
				    .when = DOC_WHEN };
	struct mtc_s3_signed s;
	char *e, err[128];

	e = mtc_s3_uri_encode("a/b c+d=é~*", 0);
	is_str(e, "a%2Fb%20c%2Bd%3D%C3%A9~%2A", "a query value: every byte but the unreserved");
	free(e);
	sign_or_fail(&r, &temp, &s);
	is_str(s.path, "/a%20b/c%2Bd/%C3%A9~/%2541", "a path: encoded once, '/' kept, '%%' encoded");
	ok(strstr(s.canonical_request, "\nx-amz-meta-a:two words,second\n") != NULL,
	   "header values trimmed, blanks made one, one name's values joined in order");
	ok(strstr(s.canonical_request, "\nx-amz-security-token:FQoG/token+x==\n") != NULL &&
		   has_header(&s, "x-amz-security-token: FQoG/token+x=="),
	   "a session token is sent and signed");
	ok(strstr(s.canonical_request, "\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n") &&
		   !strcmp(strrchr(s.canonical_request, '\n') + 1, "UNSIGNED-PAYLOAD"),
	   "a streamed body signs UNSIGNED-PAYLOAD");
	ok(strstr(s.authorization, "/20130524/eu-west-1/s3/aws4_request,") != NULL,
	   "the scope names the region");
	mtc_s3_signed_free(&s);
	r.path = "no-slash";
	is_int(mtc_s3_sign(&r, &temp, &s, err, sizeof err), -1, "a path without '/' is refused");
	r.path = "/";
	h[0].value = "a\r\nInjected: 1";
	is_int(mtc_s3_sign(&r, &temp, &s, err, sizeof err), -1, "a header spanning lines is refused");
}

static void times_and_xml(void)
{
	const char *x = "<R><Credentials><AccessKeyId>ASIA1</AccessKeyId><SessionToken>a&amp;b&lt;"
			"&#x41;&#66;</SessionToken></Credentials></R>";
	char *t;

	is_int((long long)mtc_s3_parse_time("2013-05-24T00:00:00Z"), DOC_WHEN, "a UTC time");
	is_int((long long)mtc_s3_parse_time("2013-05-24T00:00:00.123Z"), DOC_WHEN, "a fraction");
	is_int((long long)mtc_s3_parse_time("2013-05-24T00:00:00+00:00"), DOC_WHEN, "+00:00");
	is_int((long long)mtc_s3_parse_time("2013-05-24"), -1, "a date alone is not a time");
	is_int((long long)mtc_s3_parse_time("2013-05-24T00:00:00+02:00"), -1, "another zone");
	t = mtc_s3_xml_text(x, strlen(x), "SessionToken");
	is_str(t, "a&b<AB", "an element's text, entities undone");
	free(t);
	ok(!mtc_s3_xml_text(x, strlen(x), "Expiration"), "no element: NULL");
}

static void buckets(void)
{
	ok(mtc_s3_dns_bucket("my-bucket-1", 0), "a DNS bucket");
	ok(!mtc_s3_dns_bucket("My_Bucket", 0), "upper case and '_' are not");
	ok(!mtc_s3_dns_bucket("a.b.c", 0) && mtc_s3_dns_bucket("a.b.c", 1), "dots when allowed");
	ok(!mtc_s3_dns_bucket("192.168.1.1", 1), "an IP address is not");
	ok(!mtc_s3_dns_bucket("ab", 0) && !mtc_s3_dns_bucket("-ab", 0), "too short, leading '-'");
}

static void targets(void)
{
	struct mtc_s3_target t;
	char err[256];

	setenv("HOME", "/nonexistent", 1);
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("AWS_CONFIG_FILE");
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_REGION");
	ok(mtc_s3_target_resolve("bkt", NULL, NULL, MTC_S3_STYLE_AUTO, &t, err, sizeof err) == 0 &&
		   !strcmp(t.region, "us-east-1") && !strcmp(t.base, "https://bkt.s3.amazonaws.com") &&
		   !strcmp(t.path_prefix, ""),
	   "no region: us-east-1, virtual-hosted on s3.amazonaws.com");
	mtc_s3_target_free(&t);
	setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
	setenv("AWS_REGION", "eu-central-1", 1);
	ok(mtc_s3_target_resolve("a.b", NULL, NULL, MTC_S3_STYLE_AUTO, &t, err, sizeof err) == 0 &&
		   !strcmp(t.region, "eu-central-1") &&
		   !strcmp(t.base, "https://s3.eu-central-1.amazonaws.com") &&
		   !strcmp(t.path_prefix, "/a.b"),
	   "AWS_REGION before AWS_DEFAULT_REGION; a dotted bucket over https is path-style");
	mtc_s3_target_free(&t);
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
	setenv("AWS_ENDPOINT_URL_S3", "https://minio.example:443", 1);
	ok(mtc_s3_target_resolve("bkt", NULL, NULL, MTC_S3_STYLE_AUTO, &t, err, sizeof err) == 0 &&
		   !strcmp(t.base, "https://minio.example") && !strcmp(t.host, "minio.example") &&
		   !strcmp(t.path_prefix, "/bkt") && t.custom,
	   "AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL; a named endpoint is path-style, "
	   "its default port dropped");
	mtc_s3_target_free(&t);
	ok(mtc_s3_target_resolve("bkt", "http://[::1]:8080/base/", NULL, MTC_S3_STYLE_AUTO, &t, err,
				 sizeof err) == 0 &&
		   !strcmp(t.base, "http://[::1]:8080") && !strcmp(t.path_prefix, "/base/bkt"),
	   "the option before the environment; an endpoint's own path kept");
	mtc_s3_target_free(&t);
	ok(mtc_s3_target_resolve("bkt", "https://r2.example", NULL, MTC_S3_STYLE_VIRTUAL, &t, err,
				 sizeof err) == 0 &&
		   !strcmp(t.base, "https://bkt.r2.example") && !strcmp(t.path_prefix, ""),
	   "virtual-hosted on a named endpoint when asked");
	mtc_s3_target_free(&t);
	is_int(mtc_s3_target_resolve("bkt", "127.0.0.1:9000", NULL, MTC_S3_STYLE_AUTO, &t, err,
				     sizeof err),
	       -1, "an endpoint without a scheme is refused");
	is_str(err, "endpoint '127.0.0.1:9000' is not an http:// or https:// URL", "and says so");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
}

/* "sign": {method, host, path, params: [[n, v|null]], headers: [[n, v]], payload_hash,
 * region, service, when, access_key, secret_key, session_token} -> what mtc sends. */
static int sign_cmd(void)
{
	json_error_t je;
	json_t *j = json_loadf(stdin, 0, &je), *params, *headers, *o;
	struct mtc_s3_pair *p, *h;
	struct mtc_s3_creds c = { 0 };
	struct mtc_s3_signed s;
	size_t np, nh, i;
	char err[256];

	if (!j) {
		fprintf(stderr, "s3_sign: %s\n", je.text);
		return 2;
	}
	params = json_object_get(j, "params");
	headers = json_object_get(j, "headers");
	np = json_array_size(params);
	nh = json_array_size(headers);
	p = xcalloc(np + 1, sizeof *p);
	h = xcalloc(nh + 1, sizeof *h);
	for (i = 0; i < np; i++)
		p[i] = (struct mtc_s3_pair){
			json_string_value(json_array_get(json_array_get(params, i), 0)),
			json_string_value(json_array_get(json_array_get(params, i), 1))
		};
	for (i = 0; i < nh; i++)
		h[i] = (struct mtc_s3_pair){
			json_string_value(json_array_get(json_array_get(headers, i), 0)),
			json_string_value(json_array_get(json_array_get(headers, i), 1))
		};
	struct mtc_s3_request r = {
		.method = json_string_value(json_object_get(j, "method")),
		.host = json_string_value(json_object_get(j, "host")),
		.path = json_string_value(json_object_get(j, "path")),
		.params = p,
		.n_params = np,
		.headers = h,
		.n_headers = nh,
		.payload_hash = json_string_value(json_object_get(j, "payload_hash")),
		.region = json_string_value(json_object_get(j, "region")),
		.service = json_string_value(json_object_get(j, "service")),
		.when = (time_t)json_integer_value(json_object_get(j, "when")),
	};
	c.access_key = (char *)json_string_value(json_object_get(j, "access_key"));
	c.secret_key = (char *)json_string_value(json_object_get(j, "secret_key"));
	c.session_token = (char *)json_string_value(json_object_get(j, "session_token"));
	if (mtc_s3_sign(&r, &c, &s, err, sizeof err) < 0) {
		fprintf(stderr, "s3_sign: %s\n", err);
		return 1;
	}
	o = json_pack("{s:s, s:s, s:s, s:s}", "authorization", s.authorization, "path", s.path, "query",
		      s.query, "canonical_request", s.canonical_request);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	mtc_s3_signed_free(&s);
	free(p);
	free(h);
	json_decref(j);
	return 0;
}

static int target_cmd(int argc, char **argv)
{
	struct mtc_s3_target t;
	char err[256];
	enum mtc_s3_style style = argc > 4 && !strcmp(argv[4], "path")	    ? MTC_S3_STYLE_PATH
				  : argc > 4 && !strcmp(argv[4], "virtual") ? MTC_S3_STYLE_VIRTUAL
									    : MTC_S3_STYLE_AUTO;

	if (mtc_s3_target_resolve(argv[2], argc > 3 && *argv[3] ? argv[3] : NULL, NULL, style, &t, err,
				  sizeof err) < 0) {
		fprintf(stderr, "s3_sign: %s\n", err);
		return 1;
	}
	printf("%s %s %s %s\n", t.region, t.base, t.host, *t.path_prefix ? t.path_prefix : "-");
	mtc_s3_target_free(&t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sign"))
		return sign_cmd();
	if (argc > 2 && !strcmp(argv[1], "target"))
		return target_cmd(argc, argv);
	published_s3_examples();
	published_sigv4_reference();
	encoding_and_headers();
	times_and_xml();
	buckets();
	targets();
	return done();
}
