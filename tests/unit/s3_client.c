/*
 * A small S3 client for tests/s3_auth.bats, before the S3 backend exists:
 * the credential chain (s3_auth.c), the target (s3_endpoint.c) and the
 * signer (s3_sign.c) together against a real server. Without arguments it
 * has nothing to run on (TAP skip).
 *   s3_client creds [N [T]]        asks for credentials N times (default 1), printing
 *                                  "source access-key session-token|- expires" each; on
 *                                  T threads at once when T is given
 *   s3_client put BUCKET KEY TEXT  a signed PutObject (UNSIGNED-PAYLOAD when
 *                                  TEST_UNSIGNED is set), printing the status
 *   s3_client get BUCKET KEY       a signed GetObject, printing the body
 * The endpoint is $TEST_S3_ENDPOINT (else as the AWS CLI finds it); an answer
 * other than 2xx exits 1 with "HTTP <status>: <S3 error code>".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "http.h"
#include "store/s3_auth.h"
#include "store/s3_endpoint.h"
#include "store/s3_sign.h"
#include "store/s3_xml.h"

static struct mtc_s3_auth *auth_or_die(void)
{
	struct mtc_s3_auth *a;
	char err[1024];

	if (mtc_s3_auth_new(NULL, &a, err, sizeof err) < 0) {
		fprintf(stderr, "s3_client: %s\n", err);
		exit(1);
	}
	return a;
}

struct asker {
	struct mtc_s3_auth *a;
	int n, rc;
};

static void *ask(void *arg)
{
	struct asker *k = arg;
	struct mtc_s3_creds c;
	char err[1024];

	for (int i = 0; i < k->n; i++) {
		if (mtc_s3_auth_get(k->a, 0, &c, err, sizeof err) < 0) {
			fprintf(stderr, "s3_client: %s\n", err);
			k->rc = 1;
			return NULL;
		}
		flockfile(stdout);
		printf("%s %s %s %.0f\n", mtc_s3_auth_source(k->a), c.access_key,
		       c.session_token ? c.session_token : "-", c.expires);
		fflush(stdout);
		funlockfile(stdout);
		mtc_s3_creds_free(&c);
	}
	return NULL;
}

static int creds_threads(int n, int threads)
{
	struct mtc_s3_auth *a = auth_or_die();
	struct asker k[64];
	pthread_t t[64];
	int rc = 0;

	if (threads > 64)
		threads = 64;
	for (int i = 0; i < threads; i++) {
		k[i] = (struct asker){ .a = a, .n = n };
		pthread_create(&t[i], NULL, ask, &k[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		rc |= k[i].rc;
	}
	mtc_s3_auth_free(a);
	return rc;
}

static int creds_cmd(int n)
{
	struct mtc_s3_auth *a = auth_or_die();
	struct mtc_s3_creds c;
	char err[1024];

	for (int i = 0; i < n; i++) {
		if (mtc_s3_auth_get(a, 0, &c, err, sizeof err) < 0) {
			fprintf(stderr, "s3_client: %s\n", err);
			mtc_s3_auth_free(a);
			return 1;
		}
		printf("%s %s %s %.0f\n", mtc_s3_auth_source(a), c.access_key,
		       c.session_token ? c.session_token : "-", c.expires);
		fflush(stdout);
		mtc_s3_creds_free(&c);
	}
	mtc_s3_auth_free(a);
	return 0;
}

static int object_cmd(const char *method, const char *bucket, const char *key, const char *text)
{
	struct mtc_s3_auth *a = auth_or_die();
	struct mtc_s3_target t;
	struct mtc_s3_creds c;
	struct mtc_s3_signed s;
	struct mtc_buf body = MTC_BUF_INIT(1 << 20);
	char err[1024], hash[65], *path, *url;
	long status;
	CURLcode cc;
	int rc = 1;

	if (mtc_s3_target_resolve(bucket, getenv("TEST_S3_ENDPOINT"), NULL, MTC_S3_STYLE_AUTO, &t, err,
				  sizeof err) < 0 ||
	    mtc_s3_auth_get(a, 0, &c, err, sizeof err) < 0) {
		fprintf(stderr, "s3_client: %s\n", err);
		mtc_s3_auth_free(a);
		return 1;
	}
	if (text)
		mtc_s3_sha256_hex(text, strlen(text), hash);
	path = malloc(strlen(t.path_prefix) + strlen(key) + 2);
	sprintf(path, "%s/%s", t.path_prefix, key);
	struct mtc_s3_pair type = { "Content-Type", "application/octet-stream" };
	struct mtc_s3_request r = { .method = method,
				    .host = t.host,
				    .path = path,
				    .headers = &type,
				    .n_headers = text ? 1 : 0,
				    .payload_hash = !text		      ? NULL
						    : getenv("TEST_UNSIGNED") ? MTC_S3_UNSIGNED_PAYLOAD
									      : hash,
				    .region = t.region,
				    .service = "s3",
				    .when = time(NULL) };
	if (mtc_s3_sign(&r, &c, &s, err, sizeof err) < 0) {
		fprintf(stderr, "s3_client: %s\n", err);
		goto done;
	}
	url = malloc(strlen(t.base) + strlen(s.path) + strlen(s.query) + 2);
	sprintf(url, "%s%s%s%s", t.base, s.path, *s.query ? "?" : "", s.query);
	struct mtc_http_opts o = { .url = url, .idempotent = 1, .timeout_s = 30, .connect_s = 5 };
	status = mtc_http_fetch(&o, method, text, s.headers, &body, &cc, err, sizeof err);
	free(url);
	mtc_s3_signed_free(&s);
	if (!status) {
		fprintf(stderr, "s3_client: %s\n", err);
	} else if (status / 100 != 2) {
		char *code = mtc_s3_xml_text(body.p, body.len, "Code");
		fprintf(stderr, "s3_client: HTTP %ld: %s\n", status, code ? code : mtc_buf_str(&body));
		free(code);
	} else {
		if (text)
			printf("%ld\n", status);
		else
			fwrite(body.p ? body.p : "", 1, body.len, stdout);
		rc = 0;
	}
done:
	free(path);
	mtc_buf_free(&body);
	mtc_s3_creds_free(&c);
	mtc_s3_target_free(&t);
	mtc_s3_auth_free(a);
	return rc;
}

int main(int argc, char **argv)
{
	mtc_http_init();
	if (argc > 3 && !strcmp(argv[1], "creds"))
		return creds_threads(atoi(argv[2]), atoi(argv[3]));
	if (argc > 1 && !strcmp(argv[1], "creds"))
		return creds_cmd(argc > 2 ? atoi(argv[2]) : 1);
	if (argc > 4 && !strcmp(argv[1], "put"))
		return object_cmd("PUT", argv[2], argv[3], argv[4]);
	if (argc > 3 && !strcmp(argv[1], "get"))
		return object_cmd("GET", argv[2], argv[3], NULL);
	if (argc > 1) {
		fprintf(stderr, "usage: s3_client creds [N] | put BUCKET KEY TEXT | get BUCKET KEY\n");
		return 2;
	}
	printf("1..0 # SKIP needs a server: tests/s3_auth.bats runs it\n");
	return 0;
}
