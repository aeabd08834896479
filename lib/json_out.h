#ifndef MTC_JSON_OUT_H
#define MTC_JSON_OUT_H

#include <jansson.h>

/*
 * The one shape of --json output (mtc(7) §9.2): stdout holds only
 * JSON, one compact object per result line, keys in kebab-case in the order
 * they were set, times and durations in seconds rounded to the millisecond.
 */

/* Prints o as one line on stdout and flushes; steals the reference. -1 on a write error. */
int mtc_json_print(json_t *o);

/* Seconds rounded to the millisecond, as a JSON number. */
json_t *mtc_json_seconds(double s);

#endif
