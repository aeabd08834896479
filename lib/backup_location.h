#ifndef MTC_BACKUP_LOCATION_H
#define MTC_BACKUP_LOCATION_H

#include <stddef.h>

#include "store/store.h"

/*
 * The one location rule (mtc(7) §6.1): a backup LOCATION is the bucket
 * root everywhere, and the job comes from --job or the config, so a job's
 * backups are at LOCATION/JOB. The one exception is backup-warden's -p PATH,
 * which names the directory of backups itself (MTC_LOCATION_JOB_ROOT).
 *
 * mtc_job_store_open opens a job's backup root for reading and returns an
 * enum mtc_result (result.h), with the one-line reason in err:
 *   usage (2)      no job given, or a job's root given as LOCATION: both
 *                  explained with the command that would work;
 *   not found (4)  the location does not exist or holds no backup of the
 *                  job; the jobs it does hold are named;
 *   failure (1)    storage failed.
 * Names under the job root that are not backup names are logged as a
 * warning (how many, and the first few): a wrong level or a typo shows.
 */
enum { MTC_LOCATION_JOB_ROOT = 1 };

enum mtc_result mtc_job_store_open(const char *location, const char *job, int flags,
				   const struct mtc_store_options *opt, struct mtc_store **out,
				   char *err, size_t errlen);

/* The parent of a location and its last component ("gs://b/p/job" -> "gs://b/p", "job"); malloc'd. */
void mtc_location_split(const char *location, char **parent, char **base);

#endif
