#ifndef MTC_WARDEN_INI_H
#define MTC_WARDEN_INI_H

#include <stddef.h>

#include "retention.h"

/*
 * backup-warden's INI config, read for mtc-prune -c FILE (mtc-prune(1), CONFIG FILE).
 *
 *   [main]                 optional; path = ROOT: search below ROOT, and the
 *                          section names may hold globs
 *   [/backups/job]         one section per directory of backups, with its policy:
 *   hourly = 24 + 4        minutely ... yearly: a count, a sum or product, or
 *                          always; a frequency not named keeps nothing
 *   prefer_recent = yes    relaxed, utc: booleans (yes/no, true/false, on/off, 1/0)
 *   timestamp_pattern =    include_list, exclude_list: comma-separated globs
 *
 * Keys are case-insensitive, '=' or ':' separates key and value, lines that
 * start with '#' or ';' are comments. A key this reader does not know, a
 * [main] option that would change where backups are read (source other than
 * local, bucket, ssh_host, filestat), or a section whose counts are all 0 is
 * refused: a typo must not turn into a policy that deletes more.
 *
 * A backup belongs to the first section, in reverse order of names, whose
 * name followed by '*' matches its path (fnmatch, '*' matching '/' too), so
 * /backups/job/db wins over /backups/job for what is below it.
 */

struct mtc_warden_section {
	char *path;
	struct mtc_retention_policy policy;
	char *timestamp_pattern; /* NULL: the default */
	char *include_list;	 /* comma-separated globs, NULL when none */
	char *exclude_list;
};

struct mtc_warden_config {
	char *main_path; /* [main] path, NULL when the sections are the directories */
	struct mtc_warden_section *sections; /* in matching order */
	size_t n;
	char **ignored; /* [main] keys read and ignored (environment, slack_webhook, ...) */
	size_t n_ignored;
};

/* 1 when the file's first non-blank byte is '{' (a JSON config), 0 when not, -1 if unreadable. */
int mtc_warden_ini_is_json(const char *file);

/* 0, or -1 with the reason ("line 12: ...") in err. */
int mtc_warden_ini_load(const char *file, struct mtc_warden_config *out, char *err, size_t errlen);
void mtc_warden_ini_free(struct mtc_warden_config *c);

/* The section a path belongs to, or NULL. */
const struct mtc_warden_section *mtc_warden_section_for(const struct mtc_warden_config *c,
							const char *path);

#endif
