#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "buf.h"
#include "http.h"
#include "tap.h"

/* Draws of one attempt's wait across n nodes (seeds): all within the bound, and spread out. */
static void full_jitter(int attempt, double base, double cap, double bound)
{
	double lo = 1e9, hi = -1;
	int inside = 1;

	for (unsigned seed = 1; seed <= 200; seed++) {
		unsigned s = seed * 2654435761u;
		double w = mtc_backoff(attempt, base, cap, &s);
		inside &= w >= 0 && w < bound;
		lo = w < lo ? w : lo;
		hi = w > hi ? w : hi;
	}
	ok(inside, "attempt %d: every wait in [0, %g)", attempt, bound);
	ok(lo < bound / 4 && hi > bound * 3 / 4,
	   "attempt %d: 200 nodes spread their waits over the range (%.3f..%.3f)", attempt, lo, hi);
}

int main(void)
{
	struct mtc_buf b = MTC_BUF_INIT(4);
	char *h;

	full_jitter(0, 0.2, 3.2, 0.2);
	full_jitter(2, 0.2, 3.2, 0.8);
	full_jitter(10, 0.2, 3.2, 3.2);
	full_jitter(60, 0.1, 10, 10);

	for (long s = 100; s < 600; s++) {
		int want = s == 408 || s == 429 || s >= 500;
		if (mtc_http_transient(s) != want)
			ok(0, "HTTP %ld transient: %d", s, mtc_http_transient(s));
	}
	ok(1, "408, 429 and 5xx are transient, nothing else");

	h = mtc_http_bearer("tok");
	is_str(h, "Authorization: Bearer tok", "the bearer header");
	free(h);

	is_int(mtc_http_to_buf("abc", 1, 3, &b), 3, "a body within the cap is taken");
	is_int(mtc_http_to_buf("de", 1, 2, &b), 0, "a body past the cap ends the transfer");
	mtc_buf_free(&b);
	is_int(mtc_http_end_of(CURLE_OK), MTC_HTTP_ANSWERED, "curl's OK: answered");
	is_int(mtc_http_end_of(CURLE_OPERATION_TIMEDOUT), MTC_HTTP_DEADLINE, "a timeout: deadline");
	is_int(mtc_http_end_of(CURLE_COULDNT_CONNECT), MTC_HTTP_UNREACHED, "no connection: unreached");
	return done();
}
