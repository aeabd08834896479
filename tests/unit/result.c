/*
 * The one result type: its numbers are the exit codes of mtc(7) §9.4, and a
 * store's errno becomes one in one place (mtc_store_result).
 */
#include <errno.h>

#include "exitcode.h"
#include "store/store.h"
#include "tap.h"

int main(void)
{
	is_int(MTC_OK, 0, "ok is exit 0");
	is_int(MTC_FAILURE, MTC_EXIT_FAILURE, "failure is exit 1");
	is_int(MTC_USAGE, MTC_EXIT_USAGE, "usage is exit 2");
	is_int(MTC_TIMEOUT, MTC_EXIT_TIMEOUT, "timeout is exit 3");
	is_int(MTC_NOTFOUND, MTC_EXIT_NOTFOUND, "not found is exit 4");
	is_int(MTC_INTEGRITY, MTC_EXIT_INTEGRITY, "integrity is exit 5");
	is_int(mtc_store_result(0), MTC_OK, "no errno: ok");
	is_int(mtc_store_result(ENOENT), MTC_NOTFOUND, "ENOENT: no such object");
	is_int(mtc_store_result(EIO), MTC_INTEGRITY, "EIO: checksum or size mismatch");
	is_int(mtc_store_result(ETIMEDOUT), MTC_TIMEOUT, "ETIMEDOUT: the deadline passed");
	is_int(mtc_store_result(EINVAL), MTC_USAGE, "EINVAL: a bad key or URL");
	is_int(mtc_store_result(EACCES), MTC_FAILURE, "EACCES: a failure");
	is_int(mtc_store_result(EEXIST), MTC_FAILURE, "EEXIST: a failure");
	return done();
}
