#include <stdio.h>

#include "lkg.h"

json_t *mtc_lkg_plan(json_t *inventory, char *err, size_t errlen)
{
	(void)inventory;
	snprintf(err, errlen, "not implemented yet");
	return NULL;
}

json_t *mtc_lkg_rank_view(json_t *plan, int rank)
{
	(void)plan;
	(void)rank;
	return NULL;
}
