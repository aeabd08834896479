#include "prune.h"

struct found {
	char *dir;
	const struct mtc_warden_section *section;
};

static void found_add(struct found **f, size_t *n, const char *dir,
		      const struct mtc_warden_section *section)
{
	for (size_t i = 0; i < *n; i++)
		if ((*f)[i].section == section && !strcmp((*f)[i].dir, dir))
			return;
	*f = xrealloc(*f, (*n + 1) * sizeof **f);
	(*f)[(*n)++] = (struct found){ .dir = xstrdup(dir), .section = section };
}

static const struct rules *rules_of(const struct rules *all, const struct mtc_warden_section *s)
{
	return &all[s - ini.sections];
}

/*
 * backup-warden's search: a directory whose path falls in a section and whose
 * name holds a timestamp is a backup, in a group (its parent, the section);
 * with [main] path any other directory is searched in turn, SEARCH_DEPTH deep.
 */
static int search(const char *dir, const struct rules *all, int depth, struct found **f, size_t *nf)
{
	struct mtc_store *s = NULL;
	char **names = NULL;
	size_t n = 0;
	int rc = open_dir(dir, &s);

	if (!rc && mtc_backups_list_dirs(s, &names, &n) < 0) {
		mtc_error("cannot list '%s': %s", dir, mtc_store_error(s));
		rc = MTC_EXIT_FAILURE;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		char *path = join(dir, names[i]);
		const struct mtc_warden_section *sec = mtc_warden_section_for(&ini, path);
		time_t when;
		if (sec && mtc_ts_parse(rules_of(all, sec)->ts, names[i], &when) == 0)
			found_add(f, nf, dir, sec);
		else if (ini.main_path && depth < SEARCH_DEPTH)
			rc = search(path, all, depth + 1, f, nf);
		free(path);
	}
	mtc_backups_free_names(names, n);
	if (s)
		mtc_store_close(s);
	return rc;
}

int prune_ini(const struct rules *all, struct totals *t)
{
	struct found *f = NULL;
	size_t nf = 0;
	int rc = MTC_EXIT_OK;

	if (ini.main_path) {
		rc = search(ini.main_path, all, 0, &f, &nf);
	} else {
		for (size_t i = 0; i < ini.n; i++) {
			int one = search(ini.sections[i].path, all, 0, &f, &nf);
			rc = rc ? rc : one;
		}
	}
	if (!nf && !rc) {
		mtc_error("no backups under '%s' in the sections of '%s'",
			  ini.main_path ? ini.main_path : ini.sections[0].path, config_file);
		rc = MTC_EXIT_NOTFOUND;
	}
	for (size_t i = 0; i < nf; i++) {
		struct mtc_store *s = NULL;
		int one = open_dir(f[i].dir, &s);
		if (!one)
			one = prune_dir(s, f[i].dir, rules_of(all, f[i].section), 0, 0, 0, t);
		if (s)
			mtc_store_close(s);
		rc = rc ? rc : one;
		free(f[i].dir);
	}
	free(f);
	return rc;
}
