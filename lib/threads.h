#ifndef MTC_THREADS_H
#define MTC_THREADS_H

#include <pthread.h>
#include <stddef.h>

#define MTC_HASH_THREADS_MAX 256 /* the most threads a digest hashes on */

/*
 * Runs fn(arg) on n threads, the calling thread one of them, and returns
 * when every one has returned. A thread that cannot be started is left out:
 * fn must share its work through arg (a queue), so fewer threads only take
 * longer.
 */
void mtc_run_threads(size_t n, void *(*fn)(void *), void *arg);

/* Sets *flag to value under lock, then wakes every thread waiting on cond. */
void mtc_cond_set(pthread_mutex_t *lock, pthread_cond_t *cond, int *flag, int value);

/*
 * Ends thread t, which waits on wake under lock until *stop: sets *stop
 * (mtc_cond_set) and joins it. lock and wake are left for the caller to destroy.
 */
void mtc_thread_stop(pthread_t t, pthread_mutex_t *lock, pthread_cond_t *wake, int *stop);

/*
 * How mtc's background work (hashing while a step is written, pushes,
 * backups, the seed of the last backup) shares the CPU with the training
 * job (mtc(7) §5.5): IDLE runs it only on CPU time nothing else wants
 * (SCHED_IDLE), NICE at nice 19, NORMAL as the rest of mtc. A thread's class
 * is inherited by the threads and programs it starts; an unprivileged one
 * can never raise it again, so only threads that stay background enter it.
 */
enum mtc_background { MTC_BG_IDLE, MTC_BG_NICE, MTC_BG_NORMAL };

/* The name's class (idle, nice, normal) in *out: 0, or -1 for an unknown name. */
int mtc_background_parse(const char *name, enum mtc_background *out);

/* Puts the calling thread in class b: 0, or -1 with errno (it is left as it was). */
int mtc_background_enter(enum mtc_background b);

/*
 * For idle-class work that comes in pieces (hashing a step while the
 * framework writes it): the class alone does not keep it off a CPU another
 * thread wants, because to the load balancer a CPU that runs an idle-class
 * thread is busy, and runnable threads can queue on another CPU meanwhile
 * (four writers on two CPUs took 1.4x as long beside it). So before each
 * piece the worker waits here, asleep, until fewer threads than the machine
 * has CPUs are runnable besides it (/proc/loadavg), at most max_s, and no
 * longer than give_up(arg) (may be NULL) says 0. 1: go on; 0: it gave up or
 * the time passed. Where the count cannot be read, 1 at once.
 */
#define MTC_SPARE_CPU_POLL_S 0.005
int mtc_spare_cpu_wait(double max_s, int (*give_up)(void *), void *arg);

/* The rule on a /proc/loadavg text and the CPU count: 1 spare, 0 not, -1 unreadable. */
int mtc_spare_cpu(const char *loadavg, int cpus);

/*
 * Background work for threads that must stay at normal priority. A thread in
 * the idle class that holds what its process's other threads need (a lock,
 * its malloc arena, the address space while it maps or unmaps memory, as
 * every thread does when it ends) makes them wait for idle CPU time too. So
 * a daemon's connection threads stay normal and hand the heavy part of a
 * receive (hashing, writing into the RAM disk) to a pool's threads, which
 * enter class b once and live as long as the pool; its work takes no lock
 * but the pool's and those of the upload it serves, and maps nothing.
 */
struct mtc_bg_pool;

/* n threads in class b, started lazily; NULL for MTC_BG_NORMAL (the work runs on the caller). */
struct mtc_bg_pool *mtc_bg_pool_new(enum mtc_background b, int n);
void mtc_bg_pool_free(struct mtc_bg_pool *p); /* after the last mtc_bg_call has returned */

/* Runs fn(arg) on one of p's threads (with p NULL, on the caller's) and returns when it has returned. */
void mtc_bg_call(struct mtc_bg_pool *p, void (*fn)(void *), void *arg);

#endif
