#ifndef MTC_TIMESTAMP_H
#define MTC_TIMESTAMP_H

#include <stddef.h>
#include <time.h>

/*
 * Timestamps in backup names, the way backup-warden and rotate-backups find
 * them: a regular expression searched in the name, whose named groups year,
 * month and day (required) and hour, minute, second (optional, 0 when they
 * do not take part) are read as decimal numbers; or one group unixtime
 * (seconds, or milliseconds when seconds would pass year 9999). Always UTC.
 *
 * Patterns are written in Python's syntax as backup-warden takes them,
 * compiled in verbose mode (unescaped whitespace and # comments ignored):
 * (?P<name>...) and (?<name>...) name a group, (?:...) groups, \d \D \s \S
 * \w \W work inside and outside brackets. They run as POSIX extended regular
 * expressions, so of two matches at the same place the longest wins where
 * Python would take the first; lazy quantifiers, lookaround and
 * backreferences are refused.
 *
 * The default pattern is backup-warden's: year, month and day required, hour,
 * minute and second optional, at most one non-digit between fields. A name
 * whose match is not a real date (2025-02-30) holds no timestamp.
 */

struct mtc_ts_pattern;

/* pattern NULL or "" is the default. On error returns -1 with a reason in err. */
int mtc_ts_compile(const char *pattern, struct mtc_ts_pattern **out, char *err, size_t errlen);
void mtc_ts_free(struct mtc_ts_pattern *p);

/* 0 and the time when name holds a valid timestamp, -1 otherwise. */
int mtc_ts_parse(const struct mtc_ts_pattern *p, const char *name, time_t *when);

/* Seconds since the epoch of a UTC civil time; -1 when a field is out of range. */
int mtc_ts_from_civil(long long y, long long mo, long long d, long long h, long long mi, long long s,
		      time_t *when);

#endif
