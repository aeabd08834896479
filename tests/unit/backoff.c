/*
 * The retry policy (backoff.h): full jitter under the cap, and the short
 * waits after a refused connection, which do not grow the backoff and end
 * MTC_RETRY_REFUSED_S after the first; no wait ends past the deadline.
 */
#include "backoff.h"
#include "clock.h"
#include "tap.h"

int main(void)
{
	unsigned seed = 7;
	int under = 1;
	for (int a = 0; a < 30; a++)
		for (int i = 0; i < 50; i++) {
			double w = mtc_backoff(a, 0.2, 3.2, &seed);
			under &= w >= 0 && w < (a < 4 ? 0.2 * (1 << a) : 3.2);
		}
	ok(under, "every wait is in [0, min(cap, base * 2^attempt))");

	struct mtc_retry r;
	mtc_retry_init(&r, MTC_BACKOFF_COORD, mtc_now() + 60);
	int waited = 0;
	for (int i = 0; i < 3; i++)
		waited += mtc_retry_wait_refused(&r) == 0;
	ok(waited == 3 && r.attempt == 0, "refused: three short waits, the backoff not grown (%d)",
	   r.attempt);
	ok(r.refused > 0, "the first refusal's time is kept");
	r.refused = mtc_now() - MTC_RETRY_REFUSED_S - 1;
	is_int(mtc_retry_wait_refused(&r), 0, "refused for longer than %.0f s:", MTC_RETRY_REFUSED_S);
	is_int(r.attempt, 1, "the policy's wait, which grows it");
	is_int(mtc_retry_wait(&r), 0, "another failure waits as before");
	is_int(r.attempt, 2, "and grows it");

	mtc_retry_init(&r, MTC_BACKOFF_COORD, mtc_now() - 1);
	is_int(mtc_retry_wait_refused(&r), -1, "past the deadline, no wait after a refusal");
	is_int(mtc_retry_wait(&r), -1, "nor after another failure");
	return done();
}
