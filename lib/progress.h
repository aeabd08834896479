#ifndef MTC_PROGRESS_H
#define MTC_PROGRESS_H

/*
 * A progress line for long transfers (mtc(7) §9.2): one line on stderr,
 * redrawn in place, with bytes, total, rate and ETA. It is drawn only when
 * wanted and stderr is a terminal, first after about a second (a short
 * transfer shows nothing), then at most four times a second; one that took
 * longer than that first second ends with its last state even when no update
 * came after it. Calls must not overlap (the store serialises its progress
 * calls).
 */
#include <stdatomic.h>

struct mtc_progress;

/* total: bytes the whole transfer holds (0: unknown); already: of those, held before it began. */
struct mtc_progress *mtc_progress_new(long long total, long long already, int wanted);
/* done: bytes moved by this run so far. */
void mtc_progress_update(struct mtc_progress *p, long long done);
/* An mtc_store_progress_fn over mtc_progress_update; the store's total serves when none was given. */
void mtc_progress_store(void *arg, long long done, long long total);
/*
 * A progress line for work that counts its bytes into *bytes from any
 * thread (a digest: digest.h's mtc_digest_meter), led by label ("verifying"):
 * a thread of its own reads the count and draws, until mtc_progress_end.
 */
struct mtc_progress *mtc_progress_follow(const char *label, long long total, atomic_llong *bytes,
					 int wanted);
/* Draws the last state and ends the line if one was drawn; frees p (NULL is fine). */
void mtc_progress_end(struct mtc_progress *p);

#endif
