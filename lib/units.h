#ifndef MTC_UNITS_H
#define MTC_UNITS_H

#include <stddef.h>

/*
 * The one unit style of every program's output: binary units (B, KiB, MiB,
 * GiB, TiB, PiB; 1 KiB = 1024 B), in progress lines, tables and summaries alike.
 */

/* "512 B", "1.5 KiB", "2.0 GiB": one decimal from KiB up. */
void mtc_size_text(char *out, size_t len, double bytes);

/* The rate in MiB/s to a tenth, as the JSON summaries give it ("mib-per-s"). */
double mtc_mib_per_s(double bytes, double seconds);

#endif
