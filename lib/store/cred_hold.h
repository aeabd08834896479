#ifndef MTC_STORE_CRED_HOLD_H
#define MTC_STORE_CRED_HOLD_H

/*
 * A credential's failed refresh, answered again for MTC_CRED_HOLD_S seconds
 * without a new attempt, so that a thousand requests do not each wait out a
 * metadata server; shared by gcs_auth.c and s3_auth.c, under their lock.
 */

#include <stddef.h>

#define MTC_CRED_HOLD_S 30

struct mtc_cred_hold {
	char *failure; /* the last refresh's error */
	double until;  /* mtc_now() clock */
};

/* Runs refresh(arg) unless a failure is held: then fails again with its reason. */
int mtc_cred_hold_refresh(struct mtc_cred_hold *h, int (*refresh)(void *arg, char *err, size_t errlen),
			  void *arg, char *err, size_t errlen);
void mtc_cred_hold_free(struct mtc_cred_hold *h);
/* buf (may be NULL) with its control characters made spaces, for a one-line error. */
const char *mtc_cred_one_line(char *buf);

#endif
