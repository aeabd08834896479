#ifndef MTC_CLOCK_H
#define MTC_CLOCK_H

#include <time.h>

/* Monotonic clock in seconds: for deadlines and durations. */
double mtc_now(void);
/* Seconds since the epoch (CLOCK_REALTIME), to compare with file times. */
double mtc_wall_now(void);
/* CLOCK_REALTIME s seconds from now, as pthread_cond_timedwait takes it by default. */
struct timespec mtc_wall_after(double s);

#endif
