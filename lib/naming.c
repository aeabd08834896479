#include "naming.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"
#include "xalloc.h"

static const char *ext_names[MTC_EXT_COUNT] = { "save", "meta", "restore", "tmp" };

const char *mtc_ext_name(enum mtc_ext ext) { return ext_names[ext]; }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Canonical decimal in [s, e): no leading zero, fits in max. */
static int parse_number(const char *s, const char *e, long long max, long long *out)
{
	long long v = 0;
	if (s == e || (e - s > 1 && *s == '0'))
		return -1;
	for (; s < e; s++) {
		if (!is_digit(*s) || v > (max - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

/* Scans digits backwards from end (exclusive); returns the first digit. */
static const char *digits_before(const char *start, const char *end)
{
	const char *p = end;
	while (p > start && is_digit(p[-1]))
		p--;
	return p;
}

int mtc_parse_ckpt_name(const char *name, struct mtc_ckpt_name *out)
{
	const char *dot = strrchr(name, '.');
	const char *p, *d;
	long long step, rank, worker;
	int ext;

	if (!dot)
		return -1;
	for (ext = 0; ext < MTC_EXT_COUNT; ext++)
		if (!strcmp(dot + 1, ext_names[ext]))
			break;
	if (ext == MTC_EXT_COUNT)
		return -1;

	p = dot;
	d = digits_before(name, p);
	if (parse_number(d, p, INT_MAX, &worker) || d - name < 2 || d[-1] != 'w' || d[-2] != '-')
		return -1;
	p = d - 2;
	d = digits_before(name, p);
	if (parse_number(d, p, INT_MAX, &rank) || d - name < 2 || d[-1] != 'n' || d[-2] != '-')
		return -1;
	p = d - 2;
	d = digits_before(name, p);
	if (parse_number(d, p, LLONG_MAX, &step) || d - name < 2 || d[-1] != 's' || d[-2] != '-')
		return -1;
	p = d - 2;
	if (p == name || p - name > MTC_JOB_MAX)
		return -1;

	memcpy(out->job, name, (size_t)(p - name));
	out->job[p - name] = '\0';
	if (!mtc_valid_job_name(out->job))
		return -1;
	out->step = step;
	out->rank = (int)rank;
	out->worker = (int)worker;
	out->ext = (enum mtc_ext)ext;
	return 0;
}

char *mtc_ckpt_name(const char *job, long long step, int rank, int worker, enum mtc_ext ext)
{
	return xasprintf("%s-s%lld-n%d-w%d.%s", job, step, rank, worker, ext_names[ext]);
}

/*
 * UTF-8 text (every listing is JSON), no '/', no control or blank byte, and
 * no leading '.': dot names in the local dir belong to the programs
 * themselves (.mtc-upload-*, .mtc-status.json), never to a job.
 */
int mtc_valid_job_name(const char *job)
{
	size_t n = strlen(job), k;
	if (n == 0 || n > MTC_JOB_MAX || job[0] == '.')
		return 0;
	for (const unsigned char *p = (const unsigned char *)job; *p; p += k)
		if (*p == '/' || *p < 0x21 || *p == 0x7f ||
		    !(k = mtc_utf8_len(p, (const unsigned char *)job + n)))
			return 0;
	return 1;
}

static int is_hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!is_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return 0;
	return s[64] == '\0' || s[64] == '.';
}

static int hash_len(const char *s)
{
	if (s[0] == 'D')
		return is_hex64(s + 1) ? 65 : 0;
	return is_hex64(s) ? 64 : 0;
}

int mtc_is_hash(const char *s)
{
	int n = hash_len(s);
	return n && s[n] == '\0';
}

int mtc_is_dir_hash(const char *s) { return s[0] == 'D' && mtc_is_hash(s); }

static int parse_hash_name(const char *name, const char *ext, char *out)
{
	int n = hash_len(name);
	if (!n || strcmp(name + n, ext))
		return -1;
	memcpy(out, name, (size_t)n);
	out[n] = '\0';
	return 0;
}

int mtc_parse_data_name(const char *name, char *out) { return parse_hash_name(name, ".data", out); }

int mtc_parse_manifest_name(const char *name, char *out)
{
	return parse_hash_name(name, ".manifest", out);
}

static int days_in_month(int y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : days[m - 1];
}

int mtc_parse_backup_name(const char *name, time_t *when)
{
	static const char shape[] = "dddd-dd-dd_dd-dd";
	int y, mo, d, h, mi;
	struct tm tm = { 0 };

	if (strlen(name) != sizeof shape - 1)
		return -1;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !is_digit(name[i]) : name[i] != shape[i])
			return -1;
	sscanf(name, "%4d-%2d-%2d_%2d-%2d", &y, &mo, &d, &h, &mi);
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	if (when)
		*when = timegm(&tm);
	return 0;
}

void mtc_backup_name(time_t when, char out[17])
{
	struct tm tm;
	gmtime_r(&when, &tm);
	strftime(out, 17, "%Y-%m-%d_%H-%M", &tm);
}

int mtc_parse_step_dir(const char *name, long long *step)
{
	long long v;
	if (parse_number(name, name + strlen(name), LLONG_MAX, &v))
		return -1;
	if (step)
		*step = v;
	return 0;
}
