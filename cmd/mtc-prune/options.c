#include "prune.h"

int parse_policy(struct mtc_retention_policy *p)
{
	static const char *defaults[MTC_FREQ_COUNT] = { "0", "72", "7", "6", "12", "always" };
	mtc_retention_defaults(p);
	p->prefer_recent = prefer_recent;
	p->relaxed = relaxed;
	for (int f = 0; f < MTC_FREQ_COUNT; f++) {
		const char *text = defaults[f];
		for (char **c = counts[f]; c && *c; c++)
			text = *c;
		if (mtc_retention_parse_count(text, &p->count[f]) < 0)
			return mtc_usage_error("--%s: '%s' is not a count, a sum or 'always'",
					       mtc_freq_name((enum mtc_freq)f), text);
	}
	if (mtc_retention_keeps_nothing(p))
		return mtc_usage_error(
			"refusing a policy where every count is 0: it would delete every backup");
	return MTC_EXIT_OK;
}

int rules_init(struct rules *r, const char *pat, char **inc, char **exc, char **inc_list,
	       char **exc_list)
{
	char err[256];
	if (mtc_ts_compile(pat, &r->ts, err, sizeof err) < 0)
		return r->section ? mtc_usage_error("'%s': [%s] timestamp_pattern: %s", config_file,
						    r->section->path, err)
				  : mtc_usage_error("--timestamp-pattern: %s", err);
	add_globs(&r->in, &r->n_in, inc, 0);
	add_globs(&r->in, &r->n_in, inc_list, 1);
	add_globs(&r->out, &r->n_out, exc, 0);
	add_globs(&r->out, &r->n_out, exc_list, 1);
	return MTC_EXIT_OK;
}

void rules_free(struct rules *r)
{
	mtc_ts_free(r->ts);
	for (size_t i = 0; i < r->n_in; i++)
		free(r->in[i]);
	for (size_t i = 0; i < r->n_out; i++)
		free(r->out[i]);
	free(r->in);
	free(r->out);
}

/*
 * backup-warden takes only these beside its config file: the policy is the
 * file's. MTC_EXIT_OK, or the usage error's code.
 */
static int refuse_beside_ini(void)
{
	static const char *freq_flags[MTC_FREQ_COUNT] = { "--minutely", "--hourly",  "--daily",
							  "--weekly",	"--monthly", "--yearly" };
	const char *given = NULL;
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (counts[f])
			given = freq_flags[f];
	given = prefer_recent  ? "--prefer-recent"
		: relaxed      ? "--relaxed"
		: utc	       ? "--utc"
		: include      ? "--include"
		: exclude      ? "--exclude"
		: include_list ? "--include-list"
		: exclude_list ? "--exclude-list"
		: pattern      ? "--timestamp-pattern"
		: path_opt     ? "--path"
		: list_file    ? "--list"
		: job	       ? "--job"
		: location     ? "a LOCATION"
			       : given;
	if (given)
		return mtc_usage_error("%s cannot be given with the backup-warden config '%s': "
				       "the file's sections say where and how to prune",
				       given, config_file);
	return MTC_EXIT_OK;
}

int load_ini(struct rules **all)
{
	char err[512];
	if (mtc_warden_ini_load(config_file, &ini, err, sizeof err) < 0) {
		int rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_USAGE;
		mtc_error("cannot read backup-warden config '%s': %s", config_file, err);
		return rc;
	}
	for (size_t i = 0; i < ini.n_ignored; i++)
		mtc_info("'%s': [main] %s is ignored", config_file, ini.ignored[i]);
	*all = xcalloc(ini.n, sizeof **all);
	for (size_t i = 0; i < ini.n; i++) {
		const struct mtc_warden_section *sec = &ini.sections[i];
		char *inc[] = { sec->include_list, NULL }, *exc[] = { sec->exclude_list, NULL };
		int rc;
		(*all)[i].section = sec;
		(*all)[i].policy = sec->policy;
		rc = rules_init(&(*all)[i], sec->timestamp_pattern, NULL, NULL, inc, exc);
		if (rc != MTC_EXIT_OK)
			return rc;
		if (!ini.main_path && strpbrk(sec->path, "*?["))
			return mtc_usage_error(
				"'%s': [%s] is a glob: globs need a [main] path to search below",
				config_file, sec->path);
	}
	return MTC_EXIT_OK;
}

static void free_argv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void free_options(void)
{
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		free_argv(counts[f]);
	free(path_opt);
	free(list_file);
	free(pattern);
	free(grace_text);
	free(config_file);
	free(token_file);
	free(s3_endpoint);
	free(job);
	free_argv(include);
	free_argv(exclude);
	free_argv(include_list);
	free_argv(exclude_list);
}

/* The mixtures refused before anything is read: MTC_EXIT_OK, or the usage error's code. */
int check_modes(int ini_mode)
{
	if (ini_mode)
		return refuse_beside_ini();
	if (path_opt && location)
		return mtc_usage_error("one location only: -p '%s' or '%s'", path_opt, location);
	if (list_file && (path_opt || location))
		return mtc_usage_error("--list and a location do not mix");
	if (!list_file && !path_opt && !location)
		return mtc_usage_error(
			"a LOCATION with --job (or --config), -p PATH or --list FILE is needed");
	if (path_opt && (job || config_file))
		return mtc_usage_error("-p names the directory of the backups itself: give the bucket "
				       "root as LOCATION with %s",
				       job ? "--job" : "--config");
	if (list_file && (do_delete || config_file || job))
		return mtc_usage_error("--list decides only: no --delete, --config or --job");
	return MTC_EXIT_OK;
}
