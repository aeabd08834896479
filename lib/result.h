#ifndef MTC_RESULT_H
#define MTC_RESULT_H

/*
 * How a library call went when it can fail for more than one reason its
 * caller acts on: MTC_OK, or the kind of failure, with err saying why. The
 * numbers are the exit codes of mtc(7) §9.4 (exitcode.h), so a program ends
 * with the result it got. A store's errno becomes one through
 * mtc_store_result (store/store.h), the one such mapping.
 */
enum mtc_result {
	MTC_OK = 0,
	MTC_FAILURE = 1,   /* anything else: I/O, network, the peer's answer */
	MTC_USAGE = 2,	   /* the request itself is wrong (a bad URL, name or option) */
	MTC_TIMEOUT = 3,   /* a deadline passed */
	MTC_NOTFOUND = 4,  /* no such object, step, backup or location */
	MTC_INTEGRITY = 5, /* data is not what its name or manifest says */
};

#endif
