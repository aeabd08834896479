#ifndef MTC_PROGRESS_H
#define MTC_PROGRESS_H

/*
 * A progress line for long transfers (mtc(7) §9.2): one line on stderr,
 * redrawn in place, with bytes, total, rate and ETA. It is drawn only when
 * wanted and stderr is a terminal, first after about a second (a short
 * transfer shows nothing), then at most four times a second. Calls must not
 * overlap (the store serialises its progress calls).
 */
struct mtc_progress;

/* total: bytes the whole transfer holds (0: unknown); already: of those, held before it began. */
struct mtc_progress *mtc_progress_new(long long total, long long already, int wanted);
/* done: bytes moved by this run so far. */
void mtc_progress_update(struct mtc_progress *p, long long done);
/* An mtc_store_progress_fn over mtc_progress_update; the store's total serves when none was given. */
void mtc_progress_store(void *arg, long long done, long long total);
/* Draws the last state and ends the line if one was drawn; frees p (NULL is fine). */
void mtc_progress_end(struct mtc_progress *p);

#endif
