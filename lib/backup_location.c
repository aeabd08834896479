#include "backup_location.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "result.h"
#include "log.h"
#include "naming.h"
#include "xalloc.h"

enum { NAMES_SHOWN = 3 };

/* What one level of a location holds. */
struct survey {
	int exists;	/* a directory location exists (gs:// always counts as existing) */
	size_t backups; /* prefixes named like backups */
	size_t other;	/* other names, restore.version aside */
	int restore_version;
	char jobs[160];	  /* the first prefixes that could be jobs, comma separated */
	char others[160]; /* the first other names */
};

static void append_name(char *buf, size_t len, size_t count, const char *name)
{
	size_t used = strlen(buf);
	if (count < NAMES_SHOWN)
		snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
	else if (count == NAMES_SHOWN)
		snprintf(buf + used, len - used, ", ...");
}

static int location_exists(const char *url)
{
	struct stat st;
	if (!strncmp(url, "gs://", 5) || !strncmp(url, "s3://", 5))
		return 1;
	if (!strncmp(url, "file://", 7))
		url += 7;
	return stat(url, &st) == 0 && S_ISDIR(st.st_mode);
}

static int survey(struct mtc_store *s, struct survey *out)
{
	struct mtc_store_list l = { 0 };
	size_t jobs = 0;

	memset(out, 0, sizeof *out);
	out->exists = location_exists(mtc_store_url(s));
	if (!out->exists)
		return 0;
	if (mtc_store_list(s, "", "/", &l) < 0) {
		mtc_store_list_free(&l);
		return -1;
	}
	for (size_t i = 0; i < l.n_prefixes; i++) {
		char *name = xasprintf("%.*s", (int)strlen(l.prefixes[i]) - 1, l.prefixes[i]);
		time_t when;
		if (mtc_parse_backup_name(name, &when) == 0) {
			out->backups++;
		} else {
			if (mtc_valid_job_name(name))
				append_name(out->jobs, sizeof out->jobs, jobs++, name);
			append_name(out->others, sizeof out->others, out->other++, name);
		}
		free(name);
	}
	for (size_t i = 0; i < l.n_objects; i++) {
		if (!strcmp(l.objects[i].name, "restore.version"))
			out->restore_version = 1;
		else
			append_name(out->others, sizeof out->others, out->other++, l.objects[i].name);
	}
	mtc_store_list_free(&l);
	return 0;
}

void mtc_location_split(const char *location, char **parent, char **base)
{
	const char *scheme = strstr(location, "://");
	const char *start = scheme ? scheme + 3 : location;
	size_t len = strlen(location);
	while (location + len > start + 1 && location[len - 1] == '/')
		len--;
	const char *end = location + len, *slash = end;
	while (slash > start && slash[-1] != '/')
		slash--;
	*base = xasprintf("%.*s", (int)(end - slash), slash);
	if (slash == start)
		*parent = xstrdup(scheme ? location : ".");
	else if (slash - 1 == location)
		*parent = xstrdup("/");
	else
		*parent = xasprintf("%.*s", (int)(slash - 1 - location), location);
}

/* LOCATION holds backups itself: explain that it is a job's root. */
static int job_root_given(const char *location, char *err, size_t errlen)
{
	char *parent, *base;
	mtc_location_split(location, &parent, &base);
	mtc_fail(err, errlen,
		 "'%s' holds backups itself: it is the backup root of job '%s'; give the bucket "
		 "root and the job: %s --job %s",
		 location, base, parent, base);
	free(parent);
	free(base);
	return MTC_USAGE;
}

static int open_store(const char *url, const struct mtc_store_options *opt, struct mtc_store **s,
		      char *err, size_t errlen)
{
	char why[512];
	if (mtc_store_open(url, opt, s, why, sizeof why) < 0) {
		int e = errno;
		mtc_fail(err, errlen, "cannot open '%s': %s", url, why);
		return mtc_store_result(e);
	}
	return MTC_OK;
}

static int survey_or_fail(struct mtc_store *s, struct survey *sv, char *err, size_t errlen)
{
	if (survey(s, sv) == 0)
		return MTC_OK;
	mtc_fail(err, errlen, "cannot list '%s': %s", mtc_store_url(s), mtc_store_error(s));
	return mtc_store_result(errno);
}

/* What the bucket root holds: 0, or a result with err (no such location: not found). */
static int survey_location(const char *location, const struct mtc_store_options *opt, struct survey *sv,
			   char *err, size_t errlen)
{
	struct mtc_store *s;
	int rc = open_store(location, opt, &s, err, errlen);
	if (rc)
		return rc;
	rc = survey_or_fail(s, sv, err, errlen);
	mtc_store_close(s);
	if (!rc && !sv->exists)
		return mtc_fail(err, errlen, "no such location: '%s'", location), MTC_NOTFOUND;
	return rc;
}

/* Checks the bucket root when the job's root is missing or empty, to say why. */
static int explain_missing(const char *location, const char *job, const struct mtc_store_options *opt,
			   char *err, size_t errlen)
{
	struct survey sv;
	int rc = survey_location(location, opt, &sv, err, errlen);
	if (rc)
		return rc;
	if (sv.backups)
		return job_root_given(location, err, errlen);
	mtc_fail(err, errlen, "no backups of job '%s' at '%s' (%s%s)", job, location,
		 *sv.jobs ? "jobs there: " : "it holds no job", sv.jobs);
	return MTC_NOTFOUND;
}

static int no_job_given(const char *location, const struct mtc_store_options *opt, char *err,
			size_t errlen)
{
	struct survey sv;
	int rc = survey_location(location, opt, &sv, err, errlen);
	if (rc)
		return rc;
	if (sv.backups || sv.restore_version)
		return job_root_given(location, err, errlen);
	if (!*sv.jobs)
		return mtc_fail(err, errlen, "no backups at '%s'", location), MTC_NOTFOUND;
	mtc_fail(err, errlen, "which job? give --job NAME or --config (jobs at '%s': %s)", location,
		 sv.jobs);
	return MTC_USAGE;
}

/* A misspelt URL, or a local location that is a file: MTC_USAGE with err, else MTC_OK. */
static int file_given(const char *location, char *err, size_t errlen)
{
	const char *path = !strncmp(location, "file://", 7) ? location + 7 : location;
	struct stat st;
	char why[128];

	if (mtc_store_misspelt_url(location, why, sizeof why))
		return mtc_fail(err, errlen, "'%s' is %s", location, why), MTC_USAGE;

	if (strstr(path, "://") || stat(path, &st) < 0 || S_ISDIR(st.st_mode))
		return MTC_OK;
	mtc_fail(err, errlen,
		 "'%s' is a file, not a backup location: give the directory that holds the backups",
		 location);
	return MTC_USAGE;
}

enum mtc_result mtc_job_store_open(const char *location, const char *job, int flags,
				   const struct mtc_store_options *opt, struct mtc_store **out,
				   char *err, size_t errlen)
{
	struct survey sv;
	char *root;
	int rc;

	*out = NULL;
	if ((rc = file_given(location, err, errlen)))
		return rc;
	if (flags & MTC_LOCATION_JOB_ROOT)
		root = xstrdup(location);
	else if (!job)
		return no_job_given(location, opt, err, errlen);
	else if (!mtc_valid_job_name(job))
		return mtc_fail(err, errlen, "'%s' is not a job name", job), MTC_USAGE;
	else
		root = xasprintf("%s%s%s", location, location[strlen(location) - 1] == '/' ? "" : "/",
				 job);

	rc = open_store(root, opt, out, err, errlen);
	if (!rc)
		rc = survey_or_fail(*out, &sv, err, errlen);
	if (!rc && !sv.backups && !sv.restore_version) {
		rc = (flags & MTC_LOCATION_JOB_ROOT)
			     ? (mtc_fail(err, errlen,
					 sv.exists ? "no backups at '%s'" : "no such location: '%s'",
					 root),
				MTC_NOTFOUND)
			     : explain_missing(location, job, opt, err, errlen);
	}
	if (!rc && sv.other)
		mtc_warn("%s: %zu name%s that %s not backups, ignored: %s", root, sv.other,
			 sv.other == 1 ? "" : "s", sv.other == 1 ? "is" : "are", sv.others);
	if (rc && *out) {
		mtc_store_close(*out);
		*out = NULL;
	}
	free(root);
	return rc;
}
