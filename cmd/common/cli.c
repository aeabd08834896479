#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exitcode.h"
#include "http.h"
#include "local_dir.h"
#include "parent_watch.h"
#include "log.h"
#include "store/store.h"
#include "xalloc.h"

enum { OPT_VERBOSE = 0x7601, OPT_QUIET, OPT_VERSION, OPT_LOG_FORMAT, OPT_TOKEN_FILE, OPT_HELP };

struct poptOption mtc_common_options[] = {
	{ "verbose", 'v', POPT_ARG_NONE, NULL, OPT_VERBOSE, "more log output (repeatable)", NULL },
	{ "quiet", 'q', POPT_ARG_NONE, NULL, OPT_QUIET, "errors only", NULL },
	{ "log-format", '\0', POPT_ARG_STRING, NULL, OPT_LOG_FORMAT, "log lines as text or json",
	  "text|json" },
	{ "version", '\0', POPT_ARG_NONE, NULL, OPT_VERSION, "print the version and exit", NULL },
	{ NULL, 'h', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, NULL, OPT_HELP, NULL, NULL },
	/* named two different secrets once: refused, naming the two flags that replace it */
	{ "token-file", '\0', POPT_ARG_STRING | POPT_ARGFLAG_DOC_HIDDEN, NULL, OPT_TOKEN_FILE, NULL,
	  NULL },
	POPT_TABLEEND
};

/* What a usage error points to: the program, or the program and its verb. */
static const char *help_name;

poptContext mtc_cli_context(const char *name, int argc, const char **argv, const struct poptOption *opts,
			    const char *usage)
{
	poptContext ctx = poptGetContext(name, argc, argv, opts, 0);
	help_name = name;
	if (usage)
		poptSetOtherOptionHelp(ctx, usage);
	return ctx;
}

int mtc_usage_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s (see '%s --help')\n", mtc_prog(), msg,
		help_name ? help_name : mtc_prog());
	mtc_log_keep_error(msg);
	return MTC_EXIT_USAGE;
}

/* The program ends here with exit code c. */
static int stop(int *code, int c)
{
	*code = c;
	return -1;
}

/* $MTC_PARENT_PID: the program ends with that process (parent_watch.h). */
static int watch_parent(int *code)
{
	const char *v = getenv("MTC_PARENT_PID");
	long long pid;
	char err[256];

	if (!v || !*v)
		return 0;
	if (mtc_parse_uint(v, &pid) < 0 || pid == 0)
		return stop(code, mtc_usage_error("MTC_PARENT_PID is a process id, not '%s'", v));
	if (mtc_parent_watch((long)pid, err, sizeof err) < 0) {
		mtc_error("%s", err);
		return stop(code, MTC_EXIT_FAILURE);
	}
	return 0;
}

int mtc_cli_parse(poptContext ctx, int *code)
{
	int rc, level = MTC_LOG_WARN;
	char *arg;

	while ((rc = poptGetNextOpt(ctx)) > 0) {
		switch (rc) {
		case OPT_VERBOSE: level++; break;
		case OPT_QUIET: level = MTC_LOG_ERROR; break;
		case OPT_LOG_FORMAT:
			arg = poptGetOptArg(ctx);
			if (mtc_log_set_format(arg) < 0) {
				rc = mtc_usage_error("unknown log format '%s'", arg ? arg : "");
				free(arg);
				return stop(code, rc);
			}
			free(arg);
			break;
		case OPT_VERSION:
			printf("%s (mtc) %s\n", mtc_prog(), MTC_VERSION);
			return stop(code, MTC_EXIT_OK);
		case OPT_HELP: poptPrintHelp(ctx, stdout, 0); return stop(code, MTC_EXIT_OK);
		case OPT_TOKEN_FILE:
			return stop(code, mtc_usage_error("'--token-file' is ambiguous: use "
							  "--peer-token-file for the peers' bearer "
							  "token or --gcs-token-file for a gs:// "
							  "bearer token"));
		}
	}
	if (rc < -1)
		return stop(code, mtc_usage_error("%s: '%s'", poptStrerror(rc),
						  poptBadOption(ctx, POPT_BADOPTION_NOALIAS)));
	mtc_log_set_level(level > MTC_LOG_DEBUG ? MTC_LOG_DEBUG : level);
	return watch_parent(code);
}

int mtc_cli_verb(int argc, const char **argv, const struct mtc_verb *verbs, int n)
{
	if (argc > 1)
		for (int v = 0; v < n; v++)
			if (!strcmp(argv[1], verbs[v].name)) {
				argv[1] = argv[0];
				return v;
			}
	return n;
}

poptContext mtc_cli_verb_context(int argc, const char **argv, const struct poptOption *opts,
				 const char *usage)
{
	static char name[64];
	snprintf(name, sizeof name, "%s %.*s", mtc_prog(), (int)strcspn(usage, " "), usage);
	return mtc_cli_context(name, argc, argv, opts, usage);
}

static void verbs_usage(FILE *f, const struct mtc_verb *verbs, int n)
{
	fprintf(f, "Usage: %s VERB [OPTIONS]\n", mtc_prog());
	for (int v = 0; v < n; v++)
		if (verbs[v].fn)
			fprintf(f, "  %s %s\n", mtc_prog(), verbs[v].usage);
	fprintf(f, "Run '%s VERB --help' for the options of a verb.\n", mtc_prog());
}

int mtc_cli_dispatch(int argc, const char **argv, const struct mtc_verb *verbs, int n)
{
	int v;

	if (argc < 2) {
		verbs_usage(stderr, verbs, n);
		return MTC_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--usage")) {
		verbs_usage(stdout, verbs, n);
		return MTC_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("%s (mtc) %s\n", mtc_prog(), MTC_VERSION);
		return MTC_EXIT_OK;
	}
	if ((v = mtc_cli_verb(argc, argv, verbs, n)) == n)
		return mtc_usage_error("unknown verb '%s'", argv[1]);
	if (!verbs[v].fn)
		return mtc_usage_error("'%s' is not available in this build", verbs[v].name);
	return verbs[v].fn(argc - 1, argv + 1);
}

int mtc_cli_slices(const char *threshold_text, int slices, long long *threshold)
{
	if (threshold_text && (mtc_store_parse_size(threshold_text, threshold) < 0 || *threshold == 0))
		return mtc_usage_error("--slice-threshold takes a size such as 64M, not '%s'",
				       threshold_text);
	if (slices < 0 || slices > MTC_STORE_SLICES_MAX)
		return mtc_usage_error("--slices takes 1 to %d", MTC_STORE_SLICES_MAX);
	return 0;
}

int mtc_cli_local_dir(const char *dir)
{
	char err[512];
	int created;

	if (mtc_local_dir_prepare(dir, &created, err, sizeof err) < 0) {
		mtc_error("%s", err);
		return MTC_EXIT_USAGE;
	}
	if (created)
		mtc_warn("created the local dir '%s' (mode %04o): it was missing, so nothing from "
			 "before is in it",
			 dir, MTC_LOCAL_DIR_MODE);
	return MTC_EXIT_OK;
}

int mtc_cli_required(const char *name, int given, ...)
{
	char msg[512] = "";
	const char *last = NULL;
	int n = 0;
	va_list ap;

	va_start(ap, given);
	while (name) {
		if (!given) {
			if (last)
				snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%s%s",
					 n > 1 ? ", " : "", last);
			last = name;
			n++;
		}
		if ((name = va_arg(ap, const char *)))
			given = va_arg(ap, int);
	}
	va_end(ap);
	if (!n)
		return 0;
	if (n == 1)
		return mtc_usage_error("%s is required", last);
	return mtc_usage_error("%s and %s are required", msg, last);
}

int mtc_cli_config(const char *path, struct mtc_config *cfg)
{
	char err[512];
	struct stat st;

	if (!path)
		return mtc_usage_error("--config is required");
	if (strcmp(path, "-") && stat(path, &st) < 0) {
		mtc_error("cannot read config '%s': %s", path, strerror(errno));
		return errno == ENOENT || errno == ENOTDIR ? MTC_EXIT_NOTFOUND : MTC_EXIT_USAGE;
	}
	if (mtc_config_load(path, cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", path, err);
		return MTC_EXIT_USAGE;
	}
	return MTC_EXIT_OK;
}

int mtc_cli_count(const char *name, int *v)
{
	if (*v == MTC_CLI_UNSET)
		*v = 0;
	else if (*v < 1)
		return mtc_usage_error("%s takes a number, 1 or more, not '%d'", name, *v);
	return 0;
}

int mtc_cli_background(const char *name, enum mtc_background *out)
{
	if (name && mtc_background_parse(name, out) < 0)
		return mtc_usage_error("--background takes idle, nice or normal, not '%s'", name);
	return 0;
}

int mtc_cli_start(const char *name, int argc, const char **argv, const struct poptOption *opts,
		  const char *usage, poptContext *ctx, int *code)
{
	mtc_log_init(argv[0]);
	mtc_http_init();
	*ctx = mtc_cli_context(name, argc, argv, opts, usage);
	return mtc_cli_parse(*ctx, code);
}

int mtc_cli_no_args(poptContext ctx)
{
	if (!poptPeekArg(ctx))
		return 0;
	return mtc_usage_error("unexpected argument '%s'", poptPeekArg(ctx));
}

void mtc_cli_status_node(const char *dir, const struct mtc_config *cfg)
{
	char *context = xasprintf("job=%s node=%d/%d", cfg->job_name, cfg->node_rank, cfg->nodes);

	mtc_log_status_dir(dir, context);
	free(context);
}

int mtc_cli_node(const char *dir, const char *config, struct mtc_config *cfg)
{
	int rc;

	if ((rc = mtc_cli_local_dir(dir)) != MTC_EXIT_OK)
		return rc;
	if ((rc = mtc_cli_config(config, cfg)) != MTC_EXIT_OK)
		return rc;
	mtc_cli_status_node(dir, cfg);
	return MTC_EXIT_OK;
}
