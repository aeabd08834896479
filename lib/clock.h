#ifndef MTC_CLOCK_H
#define MTC_CLOCK_H

/* Monotonic clock in seconds: for deadlines and durations. */
double mtc_now(void);
/* Seconds since the epoch (CLOCK_REALTIME), to compare with file times. */
double mtc_wall_now(void);

#endif
