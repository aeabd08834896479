#ifndef MTC_GCS_AUTH_H
#define MTC_GCS_AUTH_H

#include <stddef.h>

/*
 * Credentials for the GCS JSON API, first match wins (mtc(7) §6.1, mtc-backup(1)):
 *   STORAGE_EMULATOR_HOST set          no auth
 *   token_file, or MTC_GCS_TOKEN       a bearer token (the file is re-read on refresh)
 *   GOOGLE_APPLICATION_CREDENTIALS     a credentials file, by its "type":
 *                                      service_account: an RS256 JWT signed with its
 *                                      private key, exchanged at its token_uri;
 *                                      authorized_user: its refresh token, exchanged at
 *                                      its token_uri (default oauth2.googleapis.com)
 *   gcloud's application-default file  the same, from $CLOUDSDK_CONFIG/ or
 *                                      ~/.config/gcloud/application_default_credentials.json
 *                                      (gcloud auth application-default login)
 *   the metadata server                GCE_METADATA_HOST (default metadata.google.internal),
 *                                      Metadata-Flavor: Google, retried while a pod starts;
 *                                      a name that does not resolve off Google Cloud is not
 *                                      retried, and the error names every source tried
 * Tokens are cached and refreshed a minute before they expire; a failed
 * refresh is answered again for 30 s without a new attempt.
 */

enum mtc_gcs_auth_kind {
	MTC_GCS_AUTH_NONE,
	MTC_GCS_AUTH_TOKEN,
	MTC_GCS_AUTH_SERVICE_ACCOUNT,
	MTC_GCS_AUTH_AUTHORIZED_USER,
	MTC_GCS_AUTH_METADATA
};

struct mtc_gcs_auth;

int mtc_gcs_auth_new(const char *token_file, struct mtc_gcs_auth **out, char *err, size_t errlen);
void mtc_gcs_auth_free(struct mtc_gcs_auth *a);
enum mtc_gcs_auth_kind mtc_gcs_auth_kind(const struct mtc_gcs_auth *a);

/*
 * The bearer token (malloc'd) for the request's Authorization header
 * (http.h adds it), or NULL in *token without auth. force refreshes a
 * cached token (after a 401). Thread-safe. -1 with a reason in err.
 */
int mtc_gcs_auth_token(struct mtc_gcs_auth *a, int force, char **token, char *err, size_t errlen);

/* base64url without padding, as a JWT uses; malloc'd. */
char *mtc_base64url(const void *buf, size_t len);

#endif
