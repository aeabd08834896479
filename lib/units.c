#include "units.h"

#include <math.h>
#include <stdio.h>

void mtc_size_text(char *out, size_t len, double bytes)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while ((bytes >= 1024 || bytes <= -1024) && u < 5) {
		bytes /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

double mtc_mib_per_s(double bytes, double seconds)
{
	return round(bytes / 1048576.0 / (seconds > 1e-6 ? seconds : 1e-6) * 10) / 10;
}
