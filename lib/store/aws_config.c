#include "aws_config.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

#define FILE_MAX (1u << 20)

const char *mtc_aws_profile_name(void)
{
	const char *p = getenv("AWS_PROFILE");

	if (!p || !*p)
		p = getenv("AWS_DEFAULT_PROFILE");
	return p && *p ? p : "default";
}

static char *home_file(const char *var, const char *name)
{
	const char *v = getenv(var), *home = getenv("HOME");
	struct passwd *pw;

	if (v && *v)
		return xstrdup(v);
	if ((!home || !*home) && (pw = getpwuid(getuid())))
		home = pw->pw_dir;
	return home && *home ? xasprintf("%s/.aws/%s", home, name) : NULL;
}

char *mtc_aws_config_file(void) { return home_file("AWS_CONFIG_FILE", "config"); }

char *mtc_aws_credentials_file(void) { return home_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"); }

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static void set(struct mtc_aws_profile *p, const char *key, const char *value, int replace)
{
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->keys[i], key))
			continue;
		if (replace) {
			free(p->values[i]);
			p->values[i] = xstrdup(value);
		}
		return;
	}
	p->keys = xrealloc(p->keys, (p->n + 1) * sizeof *p->keys);
	p->values = xrealloc(p->values, (p->n + 1) * sizeof *p->values);
	p->keys[p->n] = xstrdup(key);
	p->values[p->n++] = xstrdup(value);
}

/* The section a header line names, in the file's form; NULL when it names another form. */
static int section_is(const char *header, const char *name, int config_form)
{
	if (!config_form)
		return !strcmp(header, name);
	if (!strcmp(name, "default") && !strcmp(header, "default"))
		return 1;
	if (strncmp(header, "profile", 7) || !isspace((unsigned char)header[7]))
		return 0;
	header += 7;
	while (isspace((unsigned char)*header))
		header++;
	return !strcmp(header, name);
}

static int load_file(const char *path, int config_form, int replace, struct mtc_aws_profile *p,
		     char *err, size_t errlen)
{
	char *buf, *line, *save = NULL, parent[64] = "";
	size_t len;
	int in = 0;

	if (!path)
		return 0;
	if (mtc_read_file(path, FILE_MAX, &buf, &len) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return mtc_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int indented = isspace((unsigned char)line[0]);
		char *t = trim(line), *eq, *key, *value;

		if (!*t || *t == '#' || *t == ';')
			continue;
		if (*t == '[') {
			char *end = strchr(t, ']');
			if (end)
				*end = '\0';
			in = section_is(trim(t + 1), p->name, config_form);
			p->found |= in;
			parent[0] = '\0';
			continue;
		}
		if (!in || !(eq = strchr(t, '=')))
			continue;
		*eq = '\0';
		key = trim(t);
		value = trim(eq + 1);
		if (indented && parent[0]) {
			char *full = xasprintf("%s.%s", parent, key);
			set(p, full, value, replace);
			free(full);
		} else if (!*value && strlen(key) < sizeof parent) {
			strcpy(parent, key);
		} else {
			parent[0] = '\0';
			set(p, key, value, replace);
		}
	}
	free(buf);
	return 0;
}

int mtc_aws_profile_load(const char *name, struct mtc_aws_profile *p, char *err, size_t errlen)
{
	char *creds = mtc_aws_credentials_file(), *config = mtc_aws_config_file();
	int rc;

	*p = (struct mtc_aws_profile){ .name = xstrdup(name ? name : mtc_aws_profile_name()) };
	rc = load_file(creds, 0, 1, p, err, errlen);
	if (rc == 0)
		rc = load_file(config, 1, 0, p, err, errlen);
	free(creds);
	free(config);
	if (rc < 0)
		mtc_aws_profile_free(p);
	return rc;
}

void mtc_aws_profile_free(struct mtc_aws_profile *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->keys[i]);
		free(p->values[i]);
	}
	free(p->keys);
	free(p->values);
	free(p->name);
	*p = (struct mtc_aws_profile){ 0 };
}

const char *mtc_aws_profile_get(const struct mtc_aws_profile *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->keys[i], key))
			return p->values[i];
	return NULL;
}
