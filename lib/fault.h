#ifndef MTC_FAULT_H
#define MTC_FAULT_H

/*
 * Fault injection for the tests: with MTC_FAULT_STALL=POINT[=GLOB]:FILE the
 * process that reaches POINT (with a subject GLOB matches, by fnmatch)
 * writes its pid to FILE and hangs there (up to an hour),
 * to be killed at a known place. Once: a process that reaches POINT while
 * FILE exists goes on. (FILE is not written whole at once: wait for its
 * newline.)
 */
void mtc_fault_stall(const char *point, const char *subject);

#endif
