#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "peer/peer_auth.h"
#include "tap.h"

#define SECRET "the-shared-secret-of-the-job-0123"
/* printf 'mtc-rank:job-a:3' | openssl dgst -sha256 -hmac "$SECRET" */
#define MAC3 "6960fc2bbbfce3ccba61ab0f559c9e2590f5f8c4c6ccf3d84672805eb755dcc3"

static struct mtc_peer_auth *auth;

static void accepted(const char *bearer, enum mtc_cred_kind kind, int rank, const char *job)
{
	struct mtc_peer_cred who;
	char *h = bearer ? malloc(strlen(bearer) + 8) : NULL;
	if (h)
		sprintf(h, "Bearer %s", bearer);
	ok(mtc_peer_auth_check(auth, h, &who) == 0 && who.kind == kind && who.rank == rank &&
		   !strcmp(who.job, job),
	   "accepted '%.40s'", bearer);
	free(h);
}

static void refused(const char *header)
{
	struct mtc_peer_cred who;
	ok(mtc_peer_auth_check(auth, header, &who) < 0, "401 for '%.50s'", header ? header : "(none)");
}

static void may_write(enum mtc_cred_kind kind, int cred_rank, const char *cred_job, int strict,
		      const char *job, int rank, int want)
{
	struct mtc_peer_cred who = { .kind = kind, .rank = cred_rank };
	char why[256] = "";
	snprintf(who.job, sizeof who.job, "%s", cred_job);
	is_int(mtc_cred_may_write(&who, strict, job, rank, why, sizeof why), want,
	       "kind %d rank %d of '%s'%s writing for rank %d of '%s': %s", kind, cred_rank, cred_job,
	       strict ? " (strict)" : "", rank, job ? job : "any", why);
}

int main(void)
{
	char path[] = "/tmp/mtc-unit-token.XXXXXX", err[256], *cred, *forged;
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, SECRET "\n", strlen(SECRET) + 1) < 0)
		return 1;
	close(fd);
	auth = mtc_peer_auth_load(path, err, sizeof err);
	unlink(path);
	ok(auth != NULL, "the token file loads: %s", auth ? "" : err);

	cred = mtc_rank_credential(SECRET, "job-a", 3);
	is_str(cred, "mtc-r3." MAC3 ".job-a", "rank 3's credential is mtc-r<rank>.<HMAC>.<job>");
	accepted(cred, MTC_CRED_RANK, 3, "job-a");
	accepted(SECRET, MTC_CRED_SECRET, -1, "");
	free(cred);
	cred = mtc_peer_token_for(SECRET, NULL, -1);
	is_str(cred, SECRET, "without a rank a node sends the secret");
	free(cred);
	cred = mtc_rank_credential(SECRET, "a.b:c-s1-n2", 0);
	accepted(cred, MTC_CRED_RANK, 0, "a.b:c-s1-n2");
	free(cred);
	cred = mtc_rank_credential("another-secret-of-the-job-99", "job-a", 3);
	refused(forged = strcat(strcpy(malloc(strlen(cred) + 8), "Bearer "), cred));
	free(forged);
	free(cred);

	refused(NULL);
	refused("Basic " SECRET);
	refused("Bearer " SECRET "x");
	refused("Bearer mtc-r4." MAC3 ".job-a");  /* another rank */
	refused("Bearer mtc-r3." MAC3 ".job-b");  /* another job */
	refused("Bearer mtc-r03." MAC3 ".job-a"); /* not canonical */
	refused("Bearer mtc-r3." MAC3 ".");	  /* no job */
	refused("Bearer mtc-r3." MAC3 ".a/b");	  /* not a job name */
	refused("Bearer mtc-r3.6960FC2BBBFCE3CCBA61AB0F559C9E2590F5F8C4C6CCF3D84672805EB755DCC3.job-a");
	refused("Bearer mtc-r3.6960fc.job-a");
	refused("Bearer mtc-r9999999999." MAC3 ".job-a");
	refused("Bearer mtc-r-3." MAC3 ".job-a");
	refused("Bearer ");

	may_write(MTC_CRED_OPEN, -1, "", 1, "job", 2, 0);
	may_write(MTC_CRED_SECRET, -1, "", 0, "job", 2, 0);
	may_write(MTC_CRED_SECRET, -1, "", 1, "job", 2, 403);
	may_write(MTC_CRED_SECRET, -1, "", 1, NULL, -1, 403);
	may_write(MTC_CRED_RANK, 2, "job", 1, "job", 2, 0);
	may_write(MTC_CRED_RANK, 2, "job", 0, "job", 3, 403);
	may_write(MTC_CRED_RANK, 2, "job", 0, "other", 2, 403);
	may_write(MTC_CRED_RANK, 2, "job", 1, NULL, -1, 0);
	may_write(MTC_CRED_RANK, 2, "job", 1, NULL, 2, 0);

	ok(mtc_peer_auth_first_refusal(auth, 7) == 1, "the first refusal of rank 7 is logged");
	ok(mtc_peer_auth_first_refusal(auth, 7) == 0, "the second is not");
	ok(mtc_peer_auth_first_refusal(auth, -1) == 1,
	   "the first refusal of the secret's data is logged");
	ok(mtc_peer_auth_first_refusal(auth, -1) == 0, "the second is not");
	ok(mtc_peer_auth_first_refusal(auth, 0) == 1, "rank 0 is counted apart");
	mtc_peer_auth_free(auth);
	return done();
}
