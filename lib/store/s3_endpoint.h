#ifndef MTC_S3_ENDPOINT_H
#define MTC_S3_ENDPOINT_H

#include <stddef.h>

/*
 * Where an S3 bucket's requests go, read as the AWS CLI reads it:
 *   region    $AWS_REGION, $AWS_DEFAULT_REGION, the profile's region
 *             (aws_config.h), else us-east-1
 *   endpoint  the option (--s3-endpoint), $AWS_ENDPOINT_URL_S3,
 *             $AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS's:
 *             s3.amazonaws.com in us-east-1, s3.REGION.amazonaws.com
 *             (.amazonaws.com.cn in cn-*) elsewhere
 *   style     virtual-hosted (https://bucket.host/key) on AWS's endpoints
 *             for a bucket that can be a DNS label (no dots over https);
 *             path-style (https://host/bucket/key) otherwise, on every
 *             other endpoint (MinIO, Ceph RGW and most others serve it
 *             without wildcard DNS), or when the profile's
 *             s3.addressing_style says path; "virtual" there forces it.
 */

struct mtc_s3_target {
	char *region;
	char *base;	   /* scheme://host[:port]: the URL before the path */
	char *host;	   /* the Host header */
	char *path_prefix; /* not encoded: "" virtual-hosted, "/bucket" path-style, after any
			      path of the endpoint's own */
	int path_style;
	int custom; /* the endpoint was named, not AWS's */
};

enum mtc_s3_style { MTC_S3_STYLE_AUTO, MTC_S3_STYLE_PATH, MTC_S3_STYLE_VIRTUAL };

/*
 * Resolves bucket's target; endpoint and region are the options (NULL: from
 * the environment and the profile). 0, or -1 with err (a malformed endpoint,
 * an unreadable config file).
 */
int mtc_s3_target_resolve(const char *bucket, const char *endpoint, const char *region,
			  enum mtc_s3_style style, struct mtc_s3_target *out, char *err, size_t errlen);
void mtc_s3_target_free(struct mtc_s3_target *t);

/* The region alone, as above (malloc'd). 0, or -1 with err. */
int mtc_s3_region(const char *given, char **region, char *err, size_t errlen);

/* 1 when bucket can be the first label of a host name (dots allowed when dots). */
int mtc_s3_dns_bucket(const char *bucket, int dots);

#endif
