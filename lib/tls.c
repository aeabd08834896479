#include "tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static pthread_mutex_t client_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mtc_tls_files client;
static int client_state; /* 0 not set up yet, 1 no TLS, 2 TLS, 3 a TLS dir that cannot be used */
static char client_err[512];

const char *mtc_tls_dir_path(const char *given)
{
	const char *env = getenv("MTC_TLS_DIR");
	return given && *given ? given : env && *env ? env : NULL;
}

static int present(const char *path, char *err, size_t errlen)
{
	if (access(path, R_OK) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	return mtc_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
}

int mtc_tls_files(const char *dir, int need_cert, struct mtc_tls_files *f, char *err,
		  size_t errlen)
{
	struct stat st;
	int cert, key;

	memset(f, 0, sizeof *f);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return mtc_fail(err, errlen, "TLS dir '%s' is not a directory", dir);
	snprintf(f->ca, sizeof f->ca, "%s/ca.crt", dir);
	snprintf(f->cert, sizeof f->cert, "%s/tls.crt", dir);
	snprintf(f->key, sizeof f->key, "%s/tls.key", dir);
	switch (present(f->ca, err, errlen)) {
	case -1:
		return -1;
	case 0:
		return mtc_fail(err, errlen, "TLS dir '%s' has no ca.crt", dir);
	}
	if ((cert = present(f->cert, err, errlen)) < 0 || (key = present(f->key, err, errlen)) < 0)
		return -1;
	if (cert != key)
		return mtc_fail(err, errlen, "TLS dir '%s' has %s but not %s", dir,
				cert ? "tls.crt" : "tls.key", cert ? "tls.key" : "tls.crt");
	if (need_cert && !cert)
		return mtc_fail(err, errlen, "TLS dir '%s' has no tls.crt and tls.key", dir);
	if (key && stat(f->key, &st) == 0 && (st.st_mode & 0077))
		mtc_warn("'%s' is readable by group or others (mode %04o): anyone who reads it can "
			 "pose as this node", f->key, (unsigned)(st.st_mode & 07777));
	f->has_cert = cert;
	return 0;
}

/* Under client_mu. */
static void setup_locked(const char *given)
{
	const char *dir = mtc_tls_dir_path(given);
	client_state = !dir ? 1
		       : mtc_tls_files(dir, 0, &client, client_err, sizeof client_err) == 0 ? 2
											    : 3;
}

int mtc_tls_client_setup(const char *given, char *err, size_t errlen)
{
	int state;

	pthread_mutex_lock(&client_mu);
	setup_locked(given);
	state = client_state;
	pthread_mutex_unlock(&client_mu);
	return state == 3 ? mtc_fail(err, errlen, "%s", client_err) : 0;
}

int mtc_tls_curl(CURL *h, const char *url, char *err, size_t errlen)
{
	int state;

	pthread_mutex_lock(&client_mu);
	if (!client_state)
		setup_locked(NULL);
	state = client_state;
	pthread_mutex_unlock(&client_mu);
	if (state == 3)
		return mtc_fail(err, errlen, "%s", client_err);
	if (state != 2)
		return 0;
	if (strncasecmp(url, "https://", 8))
		return mtc_fail(err, errlen,
				"TLS is set up (--tls-dir or $MTC_TLS_DIR), so '%s' must be https://: "
				"plain http would carry the token in clear", url);
	curl_easy_setopt(h, CURLOPT_CAINFO, client.ca);
	curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (client.has_cert) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, client.cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, client.key);
	}
	return 0;
}
