#ifndef MTC_CPU_COUNT_H
#define MTC_CPU_COUNT_H

/* Online CPUs, at least 1 and at most 1024: the default number of hashing threads. */
int mtc_cpu_count(void);

#endif
