#include "warden_ini.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "xalloc.h"

struct kv {
	char *key, *value;
	int line;
};

struct raw_section {
	char *name;
	int line;
	struct kv *kv;
	size_t n;
};

struct raw {
	struct raw_section *s;
	size_t n;
};

static char *trim(char *s)
{
	size_t n;
	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* ConfigParser's basic interpolation: %% is a %, a reference is not supported. */
static int unescape(char *v, int line, char *err, size_t errlen)
{
	char *w = v;
	for (char *r = v; *r; r++) {
		if (*r == '%') {
			if (r[1] != '%')
				return mtc_fail(
					err, errlen,
					"line %d: '%%' references are not supported (write %%%% for a %%)",
					line);
			r++;
		}
		*w++ = *r;
	}
	*w = '\0';
	return 0;
}

static void raw_free(struct raw *r)
{
	for (size_t i = 0; i < r->n; i++) {
		for (size_t k = 0; k < r->s[i].n; k++) {
			free(r->s[i].kv[k].key);
			free(r->s[i].kv[k].value);
		}
		free(r->s[i].kv);
		free(r->s[i].name);
	}
	free(r->s);
}

static int raw_read(FILE *f, struct raw *r, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	int no = 0, rc = 0;
	struct kv *last = NULL;

	while (rc == 0 && getline(&line, &cap, f) >= 0) {
		char *t = trim(line);
		no++;
		if (!*t || *t == '#' || *t == ';') {
			continue;
		}
		if ((line[0] == ' ' || line[0] == '\t') && last) {
			char *v = xasprintf("%s%s%s", last->value, *last->value ? " " : "", t);
			free(last->value);
			last->value = v;
			continue;
		}
		last = NULL;
		if (*t == '[') {
			char *end = strrchr(t, ']');
			if (!end || end[1]) {
				rc = mtc_fail(err, errlen, "line %d: a section header is '[NAME]'", no);
				break;
			}
			*end = '\0';
			for (size_t i = 0; i < r->n; i++)
				if (!strcmp(r->s[i].name, t + 1))
					rc = mtc_fail(err, errlen,
						      "line %d: section [%s] again (first at line %d)",
						      no, t + 1, r->s[i].line);
			r->s = xrealloc(r->s, (r->n + 1) * sizeof *r->s);
			r->s[r->n++] = (struct raw_section){ .name = xstrdup(t + 1), .line = no };
			continue;
		}
		if (!r->n) {
			rc = mtc_fail(err, errlen, "line %d: a key before any [section]", no);
			break;
		}
		size_t sep = strcspn(t, "=:");
		if (!t[sep] || sep == 0) {
			rc = mtc_fail(err, errlen, "line %d: expected 'key = value'", no);
			break;
		}
		t[sep] = '\0';
		char *key = trim(t), *value = trim(t + sep + 1);
		struct raw_section *s = &r->s[r->n - 1];
		for (char *c = key; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		for (size_t k = 0; k < s->n; k++)
			if (!strcmp(s->kv[k].key, key))
				rc = mtc_fail(err, errlen,
					      "line %d: '%s' again in [%s] (first at line %d)", no, key,
					      s->name, s->kv[k].line);
		if (rc == 0)
			rc = unescape(value, no, err, errlen);
		s->kv = xrealloc(s->kv, (s->n + 1) * sizeof *s->kv);
		s->kv[s->n] = (struct kv){ .key = xstrdup(key), .value = xstrdup(value), .line = no };
		last = &s->kv[s->n++];
	}
	free(line);
	if (rc == 0 && ferror(f))
		rc = mtc_fail(err, errlen, "%s", strerror(errno));
	return rc;
}

static int parse_bool(const char *v, int *out)
{
	static const char *yes[] = { "1", "yes", "true", "on" }, *no[] = { "0", "no", "false", "off" };
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(v, no[i]))
			return *out = 0, 0;
	}
	return -1;
}

static int freq_of(const char *key)
{
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (!strcmp(key, mtc_freq_name((enum mtc_freq)f)))
			return f;
	return -1;
}

static int section_key(struct mtc_warden_section *s, const struct kv *kv, char *err, size_t errlen)
{
	int f = freq_of(kv->key), b;
	const char *v = kv->value;

	if (f >= 0) {
		if (*v && mtc_retention_parse_count(v, &s->policy.count[f]) < 0)
			return mtc_fail(err, errlen,
					"line %d: %s: '%s' is not a count, a sum or 'always'", kv->line,
					kv->key, v);
		return 0;
	}
	if (!strcmp(kv->key, "timestamp_pattern") || !strcmp(kv->key, "include_list") ||
	    !strcmp(kv->key, "exclude_list")) {
		char **dst = kv->key[0] == 't'	 ? &s->timestamp_pattern
			     : kv->key[0] == 'i' ? &s->include_list
						 : &s->exclude_list;
		free(*dst);
		*dst = *v ? xstrdup(v) : NULL;
		return 0;
	}
	if (!strcmp(kv->key, "prefer_recent") || !strcmp(kv->key, "relaxed") ||
	    !strcmp(kv->key, "utc") || !strcmp(kv->key, "filestat")) {
		if (parse_bool(v, &b) < 0)
			return mtc_fail(err, errlen,
					"line %d: %s: '%s' is not yes/no, true/false, on/off or 1/0",
					kv->line, kv->key, v);
		if (kv->key[0] == 'p')
			s->policy.prefer_recent = b;
		else if (kv->key[0] == 'r')
			s->policy.relaxed = b;
		else if (kv->key[0] == 'f' && b)
			return mtc_fail(err, errlen,
					"line %d: filestat: backups are dated by their names only",
					kv->line);
		return 0;
	}
	return mtc_fail(err, errlen, "line %d: unknown key '%s' in [%s]", kv->line, kv->key, s->path);
}

static int main_key(struct mtc_warden_config *c, const struct kv *kv, char *err, size_t errlen)
{
	static const char *ignored[] = { "environment",
					 "syslog",
					 "log_file",
					 "slack_webhook",
					 "s3_endpoint_url",
					 "s3_access_key_id",
					 "s3_secret_access_key",
					 "s3_session_token",
					 "s3_only_prefixes",
					 "ssh_sudo" };
	const char *v = kv->value;

	if (!strcmp(kv->key, "path")) {
		free(c->main_path);
		c->main_path = *v ? xstrdup(v) : NULL;
		return 0;
	}
	if (!strcmp(kv->key, "source")) {
		if (*v && strcmp(v, "local"))
			return mtc_fail(err, errlen,
					"line %d: source = %s: only local is read here; "
					"name gs:// locations in the sections instead",
					kv->line, v);
		return 0;
	}
	if (!strcmp(kv->key, "bucket") || !strcmp(kv->key, "ssh_host")) {
		if (*v)
			return mtc_fail(err, errlen,
					"line %d: %s: not supported (name gs:// locations "
					"in the sections instead)",
					kv->line, kv->key);
		return 0;
	}
	for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++)
		if (!strcmp(kv->key, ignored[i])) {
			c->ignored = xrealloc(c->ignored, (c->n_ignored + 1) * sizeof *c->ignored);
			c->ignored[c->n_ignored++] = xstrdup(kv->key);
			return 0;
		}
	return mtc_fail(err, errlen, "line %d: unknown key '%s' in [main]", kv->line, kv->key);
}

static int by_path_reversed(const void *a, const void *b)
{
	return strcmp(((const struct mtc_warden_section *)b)->path,
		      ((const struct mtc_warden_section *)a)->path);
}

static int interpret(const struct raw *r, struct mtc_warden_config *c, char *err, size_t errlen)
{
	const struct raw_section *defaults = NULL;

	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->s[i].name, "DEFAULT"))
			defaults = &r->s[i];
	for (size_t i = 0; i < r->n; i++) {
		const struct raw_section *rs = &r->s[i];
		if (rs == defaults)
			continue;
		if (!strcmp(rs->name, "main")) {
			for (size_t k = 0; k < rs->n; k++)
				if (main_key(c, &rs->kv[k], err, errlen) < 0)
					return -1;
			continue;
		}
		c->sections = xrealloc(c->sections, (c->n + 1) * sizeof *c->sections);
		struct mtc_warden_section *s = &c->sections[c->n++];
		*s = (struct mtc_warden_section){ .path = xstrdup(rs->name) };
		for (int pass = 0; pass < 2; pass++) {
			const struct raw_section *from = pass ? rs : defaults;
			for (size_t k = 0; from && k < from->n; k++)
				if (section_key(s, &from->kv[k], err, errlen) < 0)
					return -1;
		}
		if (mtc_retention_keeps_nothing(&s->policy))
			return mtc_fail(err, errlen,
					"line %d: [%s] keeps nothing (no count other than 0): "
					"it would delete every backup",
					rs->line, rs->name);
	}
	if (!c->n)
		return mtc_fail(err, errlen, "no section names a directory of backups");
	qsort(c->sections, c->n, sizeof *c->sections, by_path_reversed);
	return 0;
}

int mtc_warden_ini_is_json(const char *file)
{
	FILE *f = fopen(file, "r");
	int ch;
	if (!f)
		return -1;
	while ((ch = getc(f)) != EOF && isspace(ch))
		;
	fclose(f);
	return ch == '{';
}

int mtc_warden_ini_load(const char *file, struct mtc_warden_config *out, char *err, size_t errlen)
{
	struct raw r = { 0 };
	FILE *f = fopen(file, "r");
	int rc;

	memset(out, 0, sizeof *out);
	if (!f)
		return mtc_fail(err, errlen, "%s", strerror(errno));
	rc = raw_read(f, &r, err, errlen);
	fclose(f);
	if (rc == 0)
		rc = interpret(&r, out, err, errlen);
	raw_free(&r);
	if (rc < 0)
		mtc_warden_ini_free(out);
	return rc;
}

void mtc_warden_ini_free(struct mtc_warden_config *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->sections[i].path);
		free(c->sections[i].timestamp_pattern);
		free(c->sections[i].include_list);
		free(c->sections[i].exclude_list);
	}
	for (size_t i = 0; i < c->n_ignored; i++)
		free(c->ignored[i]);
	free(c->ignored);
	free(c->sections);
	free(c->main_path);
	memset(c, 0, sizeof *c);
}

const struct mtc_warden_section *mtc_warden_section_for(const struct mtc_warden_config *c,
							const char *path)
{
	for (size_t i = 0; i < c->n; i++) {
		char *glob = xasprintf("%s*", c->sections[i].path);
		int hit = fnmatch(glob, path, FNM_NOESCAPE) == 0;
		free(glob);
		if (hit)
			return &c->sections[i];
	}
	return NULL;
}
