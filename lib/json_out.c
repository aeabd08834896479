#include "json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int mtc_json_print(json_t *o)
{
	/* 15 significant digits print a millisecond-rounded time without float noise */
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(o);
	if (!text)
		return -1;
	int rc = puts(text) < 0 || fflush(stdout) != 0 ? -1 : 0;
	free(text);
	return rc;
}

json_t *mtc_json_seconds(double s) { return json_real(round(s * 1000.0) / 1000.0); }
