#include <errno.h>
#include <stdio.h>

#include "store_impl.h"

int mtc_store_gcs_open(struct mtc_store *s, const char *bucket, const char *prefix, char *err,
		       size_t errlen)
{
	snprintf(err, errlen, "gs:// is not built yet");
	errno = ENOTSUP;
	return -1;
}
