#ifndef MTC_FAULT_H
#define MTC_FAULT_H

/*
 * Fault injection for the tests, the one mechanism: a point of the code is
 * named, and the environment arms it as POINT[=GLOB][:FILE] (several
 * separated by ','):
 *     MTC_FAULT_STALL  the process hangs there (up to an hour), to be killed
 *                      at a known place;
 *     MTC_FAULT_KILL   the process kills itself there with SIGKILL;
 *     MTC_FAULT_PAUSE  the process stops itself there (SIGSTOP), so that a
 *                      test acts at a known moment and then lets it go on.
 * With GLOB, only when the point's subject (a key, a path) matches it
 * (fnmatch). With FILE, once: the process creates FILE and writes its pid
 * there ("<pid>\n", in one write); a process that reaches POINT while FILE
 * exists goes on. Without FILE, every time.
 */
void mtc_fault_stall(const char *point, const char *subject);
void mtc_fault_kill(const char *point, const char *subject);
void mtc_fault_pause(const char *point, const char *subject);

#endif
