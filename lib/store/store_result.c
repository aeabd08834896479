#include "store.h"

#include <errno.h>

enum mtc_result mtc_store_result(int e)
{
	switch (e) {
	case 0: return MTC_OK;
	case ENOENT: return MTC_NOTFOUND;
	case EIO:
	case EBADMSG: return MTC_INTEGRITY;
	case ETIMEDOUT: return MTC_TIMEOUT;
	case EINVAL: return MTC_USAGE;
	default: return MTC_FAILURE;
	}
}
