#include "cred_hold.h"

#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

int mtc_cred_hold_refresh(struct mtc_cred_hold *h, int (*refresh)(void *arg, char *err, size_t errlen),
			  void *arg, char *err, size_t errlen)
{
	int rc;

	if (h->failure && mtc_now() < h->until)
		return mtc_fail(err, errlen, "%s", h->failure);
	mtc_cred_hold_free(h);
	rc = refresh(arg, err, errlen);
	if (rc < 0) {
		h->failure = xstrdup(err);
		h->until = mtc_now() + MTC_CRED_HOLD_S;
	}
	return rc;
}

void mtc_cred_hold_free(struct mtc_cred_hold *h)
{
	free(h->failure);
	h->failure = NULL;
}

const char *mtc_cred_one_line(char *buf)
{
	for (char *p = buf; p && *p; p++)
		if ((unsigned char)*p < ' ')
			*p = ' ';
	return buf ? buf : "";
}
