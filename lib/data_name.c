#include "data_name.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "naming.h"
#include "ocdbt/orbax_digest.h"

int mtc_data_name_check(const char *path, const char *name, const char *merkle, int threads, char *err,
			size_t errlen)
{
	char logical[MTC_DIGEST_LEN], store_err[512];
	int rc;

	if (!strcmp(name, merkle))
		return 0;
	if (!mtc_is_dir_hash(name) || !mtc_is_dir_hash(merkle)) {
		snprintf(err, errlen, "its digest is %s", merkle);
		return 1;
	}
	rc = mtc_orbax_digest(path, threads, logical, store_err, sizeof store_err);
	if (rc < 0)
		snprintf(err, errlen, "its digest is %s, and its OCDBT store cannot be read: %s", merkle,
			 store_err);
	else if (rc == 0)
		snprintf(err, errlen, "its digest is %s (it holds no OCDBT store)", merkle);
	else if (strcmp(logical, name))
		snprintf(err, errlen, "its digest is %s, its logical digest %s", merkle, logical);
	else
		return 0;
	return 1;
}
