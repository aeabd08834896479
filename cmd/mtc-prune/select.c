#include "prune.h"

void add_globs(char ***dst, size_t *n, char **src, int split)
{
	for (; src && *src; src++) {
		char *copy = xstrdup(*src), *save, *tok;
		for (tok = strtok_r(copy, split ? "," : "", &save); tok;
		     tok = strtok_r(NULL, split ? "," : "", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			size_t len = strlen(tok);
			while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
				tok[--len] = '\0';
			if (!len)
				continue;
			*dst = xrealloc(*dst, (*n + 1) * sizeof **dst);
			(*dst)[(*n)++] = xstrdup(tok);
		}
		free(copy);
	}
}

static int matches_any(char **globs, size_t n, const char *name, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], name, FNM_NOESCAPE) == 0 ||
		    (path && fnmatch(globs[i], path, FNM_NOESCAPE) == 0))
			return 1;
	return 0;
}

static int selected(const struct rules *r, const char *name, const char *path)
{
	if (matches_any(r->out, r->n_out, name, path))
		return 0;
	return !r->n_in || matches_any(r->in, r->n_in, name, path);
}

int parse_duration(const char *s, long long *out)
{
	char *end;
	long long v;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case '\0':
	case 's': break;
	case 'm': v *= 60; break;
	case 'h': v *= 3600; break;
	case 'd': v *= 86400; break;
	default: return -1;
	}
	if (*end && end[1])
		return -1;
	*out = v;
	return 0;
}

static const char *base_of(const char *s)
{
	const char *slash = strrchr(s, '/');
	return slash && slash[1] ? slash + 1 : s;
}

char *join(const char *root, const char *name)
{
	size_t n = strlen(root);
	return xasprintf("%s%s%s", root, n && root[n - 1] == '/' ? "" : "/", name);
}

static void note_ignored(struct run *run, const char *name)
{
	size_t used = strlen(run->ignored_names);
	time_t when;
	if (run->location_named && mtc_parse_backup_name(name, &when) < 0) {
		run->ignored++;
		return;
	}
	if (run->ignored < NAMES_SHOWN)
		snprintf(run->ignored_names + used, sizeof run->ignored_names - used, "%s'%s'",
			 used ? ", " : "", name);
	else if (run->ignored == NAMES_SHOWN)
		snprintf(run->ignored_names + used, sizeof run->ignored_names - used, ", ...");
	run->ignored++;
}

/* A name without a timestamp is ignored and counted; one the globs leave out, or one of another INI section, is skipped. */
void add_item(struct run *run, const char *name)
{
	time_t when;
	char *path = run->root ? join(run->root, name) : NULL;

	if (run->r->section && path && mtc_warden_section_for(&ini, path) != run->r->section) {
		free(path);
		return;
	}
	if (mtc_ts_parse(run->r->ts, base_of(name), &when) < 0) {
		note_ignored(run, name);
	} else if (!selected(run->r, name, path)) {
		mtc_debug("'%s' is left out by --include/--exclude", name);
	} else {
		run->items = xrealloc(run->items, (run->n + 1) * sizeof *run->items);
		run->bs = xrealloc(run->bs, (run->n + 1) * sizeof *run->bs);
		run->bs[run->n] = (struct backup){ .name = xstrdup(name), .state = UNCHECKED };
		run->items[run->n] = (struct mtc_retention_item){ .name = run->bs[run->n].name,
								  .when = when };
		run->n++;
	}
	free(path);
}

void report_ignored(const struct run *run)
{
	if (run->ignored_names[0])
		mtc_warn("%s%s%zu name%s without a timestamp ignored (not backups): %s",
			 run->root ? run->root : "", run->root ? ": " : "", run->ignored,
			 run->ignored == 1 ? "" : "s", run->ignored_names);
}

int read_list(const char *file, struct run *run)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f) {
		mtc_error("cannot open '%s':", file);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len)
			add_item(run, line);
	}
	free(line);
	if (ferror(f)) {
		mtc_error("cannot read '%s':", file);
		if (f != stdin)
			fclose(f);
		return -1;
	}
	if (f != stdin)
		fclose(f);
	return 0;
}

struct backup *backup_of(const struct run *run, const char *name)
{
	for (size_t i = 0; i < run->n; i++)
		if (run->bs[i].name == name)
			return &run->bs[i];
	return NULL;
}

/* The state by the metas and the cheap size check; with --verify a valid one is re-hashed too. */
static int inspect(struct mtc_store *s, struct backup *b, int nodes, int workers, int deep)
{
	struct mtc_backup_info info;
	struct mtc_verify_stats stats;
	char why[512];
	int rc = 0;

	if (b->state != UNCHECKED && !deep)
		return 0;
	if (mtc_backup_judge(s, b->name, nodes, workers, &info, NULL) < 0) {
		mtc_error("cannot read backup '%s': %s", b->name, mtc_store_error(s));
		mtc_backup_info_free(&info);
		return -1;
	}
	if (deep && info.state == MTC_BACKUP_VALID) {
		mtc_info("verifying '%s'", b->name);
		rc = mtc_backup_verify(s, &store_opt, &info, parallel, NULL, NULL, &stats, why,
				       sizeof why);
		if (rc < 0) {
			mtc_error("cannot verify backup '%s': %s", b->name, why);
		} else if (rc == 1) {
			info.state = MTC_BACKUP_DAMAGED;
			snprintf(info.reason, sizeof info.reason, "%.200s", why);
			mtc_warn("backup '%s' is damaged: %s", b->name, why);
		}
	}
	b->state = (int)info.state;
	snprintf(b->reason, sizeof b->reason, "%s", info.reason);
	mtc_backup_info_free(&info);
	return rc < 0 ? -1 : 0;
}

/*
 * Items are sorted oldest first. The newest intact backup (by the sizes its
 * manifests give; with --verify, the newest that re-hashes to its names),
 * the one in restore.version and every backup younger than the grace period
 * that is not valid (being written) are kept whatever the policy says.
 */
int protect(struct mtc_store *s, struct run *run, const char *restore_version, int nodes, int workers)
{
	struct mtc_retention_item *items = run->items;
	time_t now = time(NULL);
	int found = 0;

	for (size_t k = run->n; k-- > 0;) {
		struct backup *b = backup_of(run, items[k].name);
		int young = (long long)(now - items[k].when) < grace;
		if (restore_version && !strcmp(items[k].name, restore_version))
			items[k].protects |= MTC_PROTECT_RESTORE_VERSION;
		if (found && !young)
			continue;
		if (inspect(s, b, nodes, workers, verify && !found) < 0)
			return -1;
		if (b->state == MTC_BACKUP_VALID && !found) {
			items[k].protects |= MTC_PROTECT_NEWEST_VALID;
			found = 1;
		} else if (b->state != MTC_BACKUP_VALID && b->state != MTC_BACKUP_DAMAGED && young) {
			items[k].protects |= MTC_PROTECT_IN_PROGRESS;
		}
	}
	if (!found && run->n)
		mtc_warn("%s: no %s backup among %zu", run->root, verify ? "verified" : "intact",
			 run->n);
	return 0;
}
