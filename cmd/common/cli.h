#ifndef MTC_CLI_H
#define MTC_CLI_H

#include <popt.h>

#include "config.h" /* mtc_parse_uint */

/* -v/--verbose (repeatable), -q/--quiet, --log-format text|json, --version. */
extern struct poptOption mtc_common_options[];
#define MTC_POPT_COMMON                                                             \
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, mtc_common_options, 0, "Common options:", \
	  NULL },                                                                   \
	POPT_AUTOHELP

poptContext mtc_cli_context(const char *name, int argc, const char **argv,
			    const struct poptOption *opts, const char *usage);

/*
 * Runs popt over the whole command line. 0 to go on; -1 when the program
 * ends here, with its exit code in *code: 0 after --version,
 * MTC_EXIT_USAGE after a bad option.
 */
int mtc_cli_parse(poptContext ctx, int *code);

/* A usage error: one line to stderr, returns MTC_EXIT_USAGE. */
int mtc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * --slice-threshold SIZE and --slices N (store.h): the threshold parsed into
 * *threshold when given. 0, or MTC_EXIT_USAGE after the one-line error.
 */
int mtc_cli_slices(const char *threshold_text, int slices, long long *threshold);

/*
 * --dir of a program that writes the local dir: created when missing
 * (local_dir.h), which a warning says once. MTC_EXIT_OK, or MTC_EXIT_USAGE
 * after the one-line error naming the path and the reason.
 */
int mtc_cli_local_dir(const char *dir);

#endif
