#ifndef MTC_EXITCODE_H
#define MTC_EXITCODE_H

/* One table for every program (mtc(7) §9.4), written in every man page. */
enum mtc_exit {
	MTC_EXIT_OK = 0,
	MTC_EXIT_FAILURE = 1,
	MTC_EXIT_USAGE = 2,
	MTC_EXIT_TIMEOUT = 3,
	MTC_EXIT_NOTFOUND = 4,
	MTC_EXIT_INTEGRITY = 5,
};

#endif
