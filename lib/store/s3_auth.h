#ifndef MTC_S3_AUTH_H
#define MTC_S3_AUTH_H

#include <stddef.h>

#include "s3_sign.h"

/*
 * Credentials for S3, in the AWS SDKs' order, first match wins (mtc(7) §6.1):
 *   environment     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY [, AWS_SESSION_TOKEN]
 *   web identity    AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN [+ AWS_ROLE_SESSION_NAME]:
 *                   the token (re-read at each refresh) exchanged through STS
 *                   AssumeRoleWithWebIdentity (EKS IRSA) at AWS_ENDPOINT_URL_STS,
 *                   AWS_ENDPOINT_URL, else sts.REGION.amazonaws.com
 *   shared files    the profile (aws_config.h): aws_access_key_id,
 *                   aws_secret_access_key [, aws_session_token], or
 *                   web_identity_token_file + role_arn [+ role_session_name];
 *                   a profile that needs what mtc does not run (source_profile,
 *                   credential_process, SSO) is an error, as is an AWS_PROFILE
 *                   that neither file has
 *   container       AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (ECS, on 169.254.170.2) or
 *                   AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity; over http
 *                   only to loopback or the ECS and EKS agents' addresses), with
 *                   AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (re-read at each
 *                   refresh) or AWS_CONTAINER_AUTHORIZATION_TOKEN as Authorization
 *   instance        IMDSv2 at AWS_EC2_METADATA_SERVICE_ENDPOINT (default
 *                   http://169.254.169.254): a session token PUT, the role's name,
 *                   its credentials; none when AWS_EC2_METADATA_DISABLED=true. When
 *                   it fails too, the error names every source passed over.
 * Temporary credentials are refreshed when they are within 5 minutes of their
 * Expiration; a failed refresh is answered again for 30 s without a new attempt,
 * and credentials not yet expired are still used while their refresh fails.
 */

enum mtc_s3_auth_kind {
	MTC_S3_AUTH_ENV,
	MTC_S3_AUTH_WEB_IDENTITY,
	MTC_S3_AUTH_PROFILE,
	MTC_S3_AUTH_CONTAINER,
	MTC_S3_AUTH_INSTANCE
};

#define MTC_S3_REFRESH_MARGIN 300

struct mtc_s3_auth;

/* region: for STS's endpoint (NULL: as s3_endpoint.h resolves it). 0, or -1 with err. */
int mtc_s3_auth_new(const char *region, struct mtc_s3_auth **out, char *err, size_t errlen);
void mtc_s3_auth_free(struct mtc_s3_auth *a);
enum mtc_s3_auth_kind mtc_s3_auth_kind(const struct mtc_s3_auth *a);
/* Which source was chosen, for messages: "environment", "profile 'dev'", ... */
const char *mtc_s3_auth_source(const struct mtc_s3_auth *a);

/*
 * The current credentials, copied into out (mtc_s3_creds_free), refreshed
 * first when they expire within MTC_S3_REFRESH_MARGIN or when force (after a
 * 403 ExpiredToken). Thread-safe. 0, or -1 with err.
 */
int mtc_s3_auth_get(struct mtc_s3_auth *a, int force, struct mtc_s3_creds *out, char *err,
		    size_t errlen);

/* An ISO 8601 UTC time ("2025-06-30T14:30:00Z", a fraction or "+00:00" allowed) as epoch
 * seconds; -1 when it is not one. */
double mtc_s3_parse_time(const char *s);

#endif
