#ifndef MTC_EXITCODE_H
#define MTC_EXITCODE_H

#include "result.h"

/* One table for every program (mtc(7) §9.4), written in every man page: a result's number. */
enum mtc_exit {
	MTC_EXIT_OK = MTC_OK,
	MTC_EXIT_FAILURE = MTC_FAILURE,
	MTC_EXIT_USAGE = MTC_USAGE,
	MTC_EXIT_TIMEOUT = MTC_TIMEOUT,
	MTC_EXIT_NOTFOUND = MTC_NOTFOUND,
	MTC_EXIT_INTEGRITY = MTC_INTEGRITY,
};

#endif
