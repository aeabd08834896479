#include "retention.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "timestamp.h"
#include "xalloc.h"

static const char *freq_names[MTC_FREQ_COUNT] = { "minutely", "hourly",	 "daily",
						  "weekly",   "monthly", "yearly" };

const char *mtc_freq_name(enum mtc_freq f) { return freq_names[f]; }

void mtc_retention_defaults(struct mtc_retention_policy *p)
{
	static const long long counts[MTC_FREQ_COUNT] = { 0, 72, 7, 6, 12, MTC_KEEP_ALWAYS };
	memset(p, 0, sizeof *p);
	memcpy(p->count, counts, sizeof counts);
}

static const char *skip_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static int parse_term(const char **pp, long long *out)
{
	const char *s = skip_blank(*pp);
	long long v = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (LLONG_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	*pp = skip_blank(s);
	*out = v;
	return 0;
}

int mtc_retention_parse_count(const char *s, long long *out)
{
	long long sum = 0, product, v;
	const char *p = skip_blank(s);
	size_t n = strlen(p);

	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 6 && !strncasecmp(p, "always", 6)) {
		*out = MTC_KEEP_ALWAYS;
		return 0;
	}
	for (;;) {
		if (parse_term(&p, &product))
			return -1;
		while (*p == '*') {
			p++;
			if (parse_term(&p, &v) || (v && product > LLONG_MAX / v))
				return -1;
			product *= v;
		}
		if (sum > LLONG_MAX - product)
			return -1;
		sum += product;
		if (!*p)
			break;
		if (*p++ != '+')
			return -1;
	}
	*out = sum;
	return 0;
}

int mtc_retention_keeps_nothing(const struct mtc_retention_policy *p)
{
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (p->count[f])
			return 0;
	return 1;
}

static int by_time_then_name(const void *a, const void *b)
{
	const struct mtc_retention_item *x = a, *y = b;
	if (x->when != y->when)
		return x->when < y->when ? -1 : 1;
	return strcmp(x->name, y->name);
}

static long long floor_div(long long a, long long b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

struct civil {
	long long y, m, d, hh, mm, ss;
};

static struct civil to_civil(time_t t)
{
	struct tm tm;
	struct civil c;
	gmtime_r(&t, &tm);
	c.y = tm.tm_year + 1900LL;
	c.m = tm.tm_mon + 1;
	c.d = tm.tm_mday;
	c.hh = tm.tm_hour;
	c.mm = tm.tm_min;
	c.ss = tm.tm_sec;
	return c;
}

/* (ISO year, ISO week) as one number: the week holding the Thursday of t's week. */
static long long iso_week_key(time_t t)
{
	long long days = floor_div((long long)t, 86400);
	long long weekday = days + 3 - floor_div(days + 3, 7) * 7; /* Monday 0; 1970-01-01 a Thursday */
	long long thursday = days - weekday + 3;
	struct civil c = to_civil((time_t)(thursday * 86400));
	time_t jan1;
	mtc_ts_from_civil(c.y, 1, 1, 0, 0, 0, &jan1);
	return c.y * 100 + (thursday - floor_div((long long)jan1, 86400)) / 7 + 1;
}

static long long bucket_key(enum mtc_freq f, time_t t)
{
	struct civil c = to_civil(t);
	switch (f) {
	case MTC_MINUTELY: return floor_div((long long)t, 60);
	case MTC_HOURLY: return floor_div((long long)t, 3600);
	case MTC_DAILY: return floor_div((long long)t, 86400);
	case MTC_WEEKLY: return iso_week_key(t);
	case MTC_MONTHLY: return c.y * 12 + c.m - 1;
	default: return c.y;
	}
}

static int days_in_month(long long y, long long m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : days[m - 1];
}

/*
 * newest - count units, as dateutil's relativedelta computes it. Returns 0
 * when the window reaches before year 1 (no lower bound).
 */
static int window_start(enum mtc_freq f, time_t newest, long long count, time_t *start)
{
	static const long long unit[] = { 60, 3600, 86400, 7 * 86400 };
	struct civil c;
	long long months;

	if (f <= MTC_WEEKLY) {
		if (count > (LLONG_MAX / 2) / unit[f] ||
		    (long long)newest - count * unit[f] < -62135596800LL)
			return 0;
		*start = (time_t)((long long)newest - count * unit[f]);
		return 1;
	}
	c = to_civil(newest);
	if (count > 12 * 10000LL)
		return 0;
	months = c.y * 12 + (c.m - 1) - (f == MTC_MONTHLY ? count : count * 12);
	if (months < 12)
		return 0;
	c.y = months / 12;
	c.m = months % 12 + 1;
	if (c.d > days_in_month(c.y, c.m))
		c.d = days_in_month(c.y, c.m);
	return mtc_ts_from_civil(c.y, c.m, c.d, c.hh, c.mm, c.ss, start) == 0;
}

static void apply_frequency(const struct mtc_retention_policy *p, enum mtc_freq f,
			    struct mtc_retention_item *items, size_t n, size_t *chosen)
{
	long long count = p->count[f];
	size_t nchosen = 0, first;
	time_t start = 0;
	int bounded = 0;

	if (count != MTC_KEEP_ALWAYS && !p->relaxed)
		bounded = window_start(f, items[n - 1].when, count, &start);
	for (size_t i = 0; i < n;) {
		long long key = bucket_key(f, items[i].when);
		size_t j = i + 1;
		while (j < n && bucket_key(f, items[j].when) == key)
			j++;
		size_t pick = p->prefer_recent ? j - 1 : i;
		if (!bounded || items[pick].when >= start)
			chosen[nchosen++] = pick;
		i = j;
	}
	first = count == MTC_KEEP_ALWAYS || (unsigned long long)count >= nchosen
			? 0
			: nchosen - (size_t)count;
	for (size_t k = first; k < nchosen; k++)
		items[chosen[k]].kept_by |= 1u << f;
}

void mtc_retention_apply(const struct mtc_retention_policy *p, struct mtc_retention_item *items,
			 size_t n)
{
	size_t *chosen;

	if (!n)
		return;
	qsort(items, n, sizeof *items, by_time_then_name);
	for (size_t i = 0; i < n; i++)
		items[i].kept_by = 0;
	chosen = xcalloc(n, sizeof *chosen);
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (p->count[f])
			apply_frequency(p, (enum mtc_freq)f, items, n, chosen);
	free(chosen);
}

static void append(char *buf, size_t len, size_t *used, const char *s)
{
	int w = snprintf(buf + *used, len - *used, "%s%s", *used ? ", " : "", s);
	if (w > 0 && (size_t)w < len - *used)
		*used += (size_t)w;
}

void mtc_retention_reasons(const struct mtc_retention_item *it, char *buf, size_t len)
{
	size_t used = 0;
	if (!len)
		return;
	buf[0] = '\0';
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (it->kept_by & (1u << f))
			append(buf, len, &used, freq_names[f]);
	if (it->protects & MTC_PROTECT_NEWEST_VALID)
		append(buf, len, &used, "newest valid");
	if (it->protects & MTC_PROTECT_RESTORE_VERSION)
		append(buf, len, &used, "restore.version");
	if (it->protects & MTC_PROTECT_IN_PROGRESS)
		append(buf, len, &used, "in progress");
}
