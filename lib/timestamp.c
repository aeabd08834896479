#include "timestamp.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

enum { YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, UNIXTIME, FIELDS };
static const char *field_names[FIELDS] = {
	"year", "month", "day", "hour", "minute", "second", "unixtime"
};

struct mtc_ts_pattern {
	regex_t re;
	size_t groups;
	size_t field_group[FIELDS]; /* 0: the pattern has no such group */
};

static const char default_pattern[] = "# Required components.\n"
				      "(?P<year>\\d{4} ) \\D?\n"
				      "(?P<month>\\d{2}) \\D?\n"
				      "(?P<day>\\d{2}  ) \\D?\n"
				      "(?:\n"
				      "    # Optional components.\n"
				      "    (?P<hour>\\d{2}  ) \\D?\n"
				      "    (?P<minute>\\d{2}) \\D?\n"
				      "    (?P<second>\\d{2})?\n"
				      ")?\n";

#define MAX_SECONDS 253402300799LL /* 9999-12-31 23:59:59 */

static int is_leap(long long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(long long y, long long m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to a proleptic Gregorian date (Hinnant's algorithm). */
static long long days_from_civil(long long y, long long m, long long d)
{
	long long era, yoe, doy, doe;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int mtc_ts_from_civil(long long y, long long mo, long long d, long long h, long long mi, long long s,
		      time_t *when)
{
	if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h < 0 ||
	    h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59)
		return -1;
	*when = (time_t)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s);
	return 0;
}

/* One character of a pattern becomes at most this many of the regular expression. */
#define RE_GROWTH 16

static void emit(struct mtc_buf *o, const char *s) { mtc_buf_append(o, s, strlen(s)); }

static void emit_char(struct mtc_buf *o, char c) { mtc_buf_append(o, &c, 1); }

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Verbose mode: the next significant character at or after p. */
static const char *skip_verbose(const char *p)
{
	for (;;) {
		if (is_space(*p)) {
			p++;
		} else if (*p == '#') {
			while (*p && *p != '\n')
				p++;
		} else {
			return p;
		}
	}
}

static const char *escape_outside(char c)
{
	switch (c) {
	case 'd': return "[0-9]";
	case 'D': return "[^0-9]";
	case 's': return "[[:space:]]";
	case 'S': return "[^[:space:]]";
	case 'w': return "[[:alnum:]_]";
	case 'W': return "[^[:alnum:]_]";
	case 'A': return "^";
	case 'Z':
	case 'z': return "$";
	case 'b': return "\\b";
	case 'B': return "\\B";
	case 'n': return "\n";
	case 't': return "\t";
	}
	return NULL;
}

static const char *escape_inside(char c)
{
	switch (c) {
	case 'd': return "0-9";
	case 's': return "[:space:]";
	case 'w': return "[:alnum:]_";
	case 'n': return "\n";
	case 't': return "\t";
	case ']': return "[.].]";
	case '-': return "[.-.]";
	case '^': return "[.^.]";
	case '\\': return "\\";
	}
	return NULL;
}

static int is_name_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

struct translation {
	struct mtc_buf re;
	size_t groups;
	size_t field_group[FIELDS];
	char err[160];
};

static int fail(struct translation *t, const char *fmt, const char *what)
{
	snprintf(t->err, sizeof t->err, fmt, what);
	return -1;
}

static int named_group(struct translation *t, const char **pp)
{
	const char *p = *pp, *name = p;
	char buf[64];
	size_t n;

	while (is_name_char(*p, p == name))
		p++;
	n = (size_t)(p - name);
	if (*p != '>' || n == 0 || n >= sizeof buf)
		return fail(t, "bad group name%s", "");
	memcpy(buf, name, n);
	buf[n] = '\0';
	t->groups++;
	for (int f = 0; f < FIELDS; f++) {
		if (strcmp(buf, field_names[f]))
			continue;
		if (t->field_group[f])
			return fail(t, "group '%s' named twice", buf);
		if (t->groups >= 64)
			return fail(t, "group '%s' comes after too many groups", buf);
		t->field_group[f] = t->groups;
	}
	*pp = p + 1;
	emit(&t->re, "(");
	return 0;
}

static int open_group(struct translation *t, const char **pp)
{
	const char *p = *pp;
	if (*p != '?') {
		t->groups++;
		emit(&t->re, "(");
		return 0;
	}
	p++;
	if (*p == 'P' && p[1] == '<') {
		*pp = p + 2;
		return named_group(t, pp);
	}
	if (*p == '<' && p[1] != '=' && p[1] != '!') {
		*pp = p + 1;
		return named_group(t, pp);
	}
	if (*p == ':') {
		t->groups++;
		*pp = p + 1;
		emit(&t->re, "(");
		return 0;
	}
	return fail(t, "unsupported group '(?%.2s'", p);
}

static int bracket(struct translation *t, const char **pp)
{
	const char *p = *pp;
	const char *e;

	emit(&t->re, "[");
	if (*p == '^')
		emit_char(&t->re, *p++);
	if (*p == ']')
		emit_char(&t->re, *p++);
	for (;;) {
		if (!*p)
			return fail(t, "unterminated character class%s", "");
		if (*p == ']') {
			emit(&t->re, "]");
			*pp = p + 1;
			return 0;
		}
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			char close[3] = { p[1], ']', '\0' };
			const char *end = strstr(p + 2, close);
			if (end) {
				for (; p < end + 2; p++)
					emit_char(&t->re, *p);
				continue;
			}
		}
		if (*p == '\\') {
			if (!p[1])
				return fail(t, "trailing backslash%s", "");
			e = escape_inside(p[1]);
			if (e) {
				emit(&t->re, e);
			} else if ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z') ||
				   (p[1] >= '0' && p[1] <= '9')) {
				char what[3] = { '\\', p[1], '\0' };
				return fail(t, "unsupported escape '%s' in a character class", what);
			} else {
				emit_char(&t->re, p[1]);
			}
			p += 2;
			continue;
		}
		emit_char(&t->re, *p++);
	}
}

static int quantifier_follows(struct translation *t, const char *p)
{
	p = skip_verbose(p);
	if (*p == '?' || *p == '+')
		return fail(t, "lazy or possessive quantifiers are not supported%s", "");
	return 0;
}

/* Python verbose-mode syntax to a POSIX extended regular expression. */
static int translate(const char *p, struct translation *t)
{
	const char *e;

	emit(&t->re, "");
	for (;;) {
		p = skip_verbose(p);
		if (!*p)
			return 0;
		switch (*p) {
		case '\\':
			if (!p[1])
				return fail(t, "trailing backslash%s", "");
			if (p[1] >= '0' && p[1] <= '9')
				return fail(t, "backreferences are not supported%s", "");
			e = escape_outside(p[1]);
			if (e) {
				emit(&t->re, e);
			} else if ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z')) {
				char what[3] = { '\\', p[1], '\0' };
				return fail(t, "unsupported escape '%s'", what);
			} else {
				emit_char(&t->re, '\\');
				emit_char(&t->re, p[1]);
			}
			p += 2;
			break;
		case '[':
			p++;
			if (bracket(t, &p))
				return -1;
			break;
		case '(':
			p++;
			if (open_group(t, &p))
				return -1;
			break;
		case '*':
		case '+':
		case '?':
		case '}':
			emit_char(&t->re, *p++);
			if (quantifier_follows(t, p))
				return -1;
			break;
		default: emit_char(&t->re, *p++);
		}
	}
}

int mtc_ts_compile(const char *pattern, struct mtc_ts_pattern **out, char *err, size_t errlen)
{
	struct translation t = { 0 };
	struct mtc_ts_pattern *p;
	int rc;

	if (!pattern || !*pattern)
		pattern = default_pattern;
	mtc_buf_init(&t.re, RE_GROWTH * strlen(pattern) + 1);
	if (translate(pattern, &t)) {
		snprintf(err, errlen, "%s", t.err);
		mtc_buf_free(&t.re);
		return -1;
	}
	if (!t.field_group[UNIXTIME])
		for (int f = YEAR; f <= DAY; f++)
			if (!t.field_group[f]) {
				snprintf(err, errlen, "no group named '%s' (nor 'unixtime')",
					 field_names[f]);
				mtc_buf_free(&t.re);
				return -1;
			}
	p = xcalloc(1, sizeof *p);
	rc = regcomp(&p->re, t.re.p, REG_EXTENDED);
	mtc_buf_free(&t.re);
	if (rc) {
		char why[160];
		regerror(rc, &p->re, why, sizeof why);
		snprintf(err, errlen, "%s", why);
		free(p);
		return -1;
	}
	p->groups = t.groups;
	memcpy(p->field_group, t.field_group, sizeof p->field_group);
	*out = p;
	return 0;
}

void mtc_ts_free(struct mtc_ts_pattern *p)
{
	if (!p)
		return;
	regfree(&p->re);
	free(p);
}

/* -1: not a number; 1: the group did not take part or is empty. */
static int group_number(const char *name, const regmatch_t *m, long long *v)
{
	regoff_t i;
	if (m->rm_so < 0 || m->rm_eo <= m->rm_so)
		return 1;
	if (m->rm_eo - m->rm_so > 18)
		return -1;
	*v = 0;
	for (i = m->rm_so; i < m->rm_eo; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		*v = *v * 10 + (name[i] - '0');
	}
	return 0;
}

int mtc_ts_parse(const struct mtc_ts_pattern *p, const char *name, time_t *when)
{
	regmatch_t m[64];
	long long v[FIELDS] = { 0 };
	size_t n = p->groups + 1 < 64 ? p->groups + 1 : 64;
	time_t t;

	if (regexec(&p->re, name, n, m, 0))
		return -1;
	for (int f = 0; f < FIELDS; f++) {
		size_t g = p->field_group[f];
		int rc = g && g < n ? group_number(name, &m[g], &v[f]) : 1;
		if (rc < 0 || (rc == 1 && f <= DAY && !p->field_group[UNIXTIME]))
			return -1;
		if (rc == 1)
			v[f] = f == UNIXTIME ? -1 : 0;
	}
	if (p->field_group[UNIXTIME] && v[UNIXTIME] >= 0) {
		long long s = v[UNIXTIME];
		if (s > MAX_SECONDS)
			s /= 1000;
		if (s > MAX_SECONDS)
			return -1;
		*when = (time_t)s;
		return 0;
	}
	if (mtc_ts_from_civil(v[YEAR], v[MONTH], v[DAY], v[HOUR], v[MINUTE], v[SECOND], &t))
		return -1;
	if (when)
		*when = t;
	return 0;
}
