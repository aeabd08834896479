#ifndef MTC_AWS_CONFIG_H
#define MTC_AWS_CONFIG_H

#include <stddef.h>

/*
 * The AWS CLI's shared files, read as the SDKs read them: ~/.aws/config
 * ($AWS_CONFIG_FILE), whose sections are [default] and [profile NAME], and
 * ~/.aws/credentials ($AWS_SHARED_CREDENTIALS_FILE), whose sections are
 * [NAME]. The profile is $AWS_PROFILE, else $AWS_DEFAULT_PROFILE, else
 * "default". Keys are "key = value", '#' and ';' start comments, and an
 * indented "key = value" under "s3 =" is read as "s3.key".
 */

struct mtc_aws_profile {
	char *name;
	int found; /* the section is in one of the files */
	char **keys, **values;
	size_t n;
};

/* The profile's name: AWS_PROFILE, AWS_DEFAULT_PROFILE or "default" (not malloc'd). */
const char *mtc_aws_profile_name(void);

/* The files' paths (malloc'd; NULL when neither the variable nor $HOME names one). */
char *mtc_aws_config_file(void);
char *mtc_aws_credentials_file(void);

/*
 * Loads profile name (NULL: mtc_aws_profile_name()) from both files; a key
 * in the credentials file wins over the config file's. A missing file is
 * no profile; an unreadable one is -1 with err.
 */
int mtc_aws_profile_load(const char *name, struct mtc_aws_profile *p, char *err, size_t errlen);
void mtc_aws_profile_free(struct mtc_aws_profile *p);

/* A key's value, or NULL. */
const char *mtc_aws_profile_get(const struct mtc_aws_profile *p, const char *key);

#endif
