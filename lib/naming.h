#ifndef MTC_NAMING_H
#define MTC_NAMING_H

#include <time.h>

/*
 * The one grammar of names on the local volume and in backups (mtc(7) §3.4):
 *   <job>-s<step>-n<rank>-w<worker>.<ext>   ext: save meta restore tmp
 *   <hash>.data                             hash: 64 hex, or D + 64 hex
 *   YYYY-MM-DD_HH-MM                        a backup, UTC
 *   <digits>                                a saved step directory
 * Numbers are canonical decimal (no sign, no leading zero). The job name is
 * whatever precedes the last -s<n>-n<n>-w<n>, so it may contain such text.
 */

#define MTC_JOB_MAX 200
#define MTC_HASH_MAX 65 /* "D" + 64 hex */

enum mtc_ext { MTC_EXT_SAVE, MTC_EXT_META, MTC_EXT_RESTORE, MTC_EXT_TMP, MTC_EXT_COUNT };

struct mtc_ckpt_name {
	char job[MTC_JOB_MAX + 1];
	long long step;
	int rank;
	int worker;
	enum mtc_ext ext;
};

const char *mtc_ext_name(enum mtc_ext ext);
int mtc_parse_ckpt_name(const char *name, struct mtc_ckpt_name *out);
char *mtc_ckpt_name(const char *job, long long step, int rank, int worker, enum mtc_ext ext);

int mtc_valid_job_name(const char *job);

int mtc_is_hash(const char *s);
int mtc_is_dir_hash(const char *s);
/* "<hash>.data": copies the hash into out (MTC_HASH_MAX + 1 bytes). */
int mtc_parse_data_name(const char *name, char *out);
/* "<hash>.manifest": the paths, sizes and file digests of <hash>.data (digest.h). */
int mtc_parse_manifest_name(const char *name, char *out);

int mtc_parse_backup_name(const char *name, time_t *when);
/* Writes YYYY-MM-DD_HH-MM (17 bytes with the NUL) for a UTC time. */
void mtc_backup_name(time_t when, char out[17]);

int mtc_parse_step_dir(const char *name, long long *step);

#endif
