#ifndef MTC_CLI_H
#define MTC_CLI_H

#include <limits.h>
#include <popt.h>

#include "config.h" /* mtc_parse_uint */
#include "threads.h"

/* -v/--verbose (repeatable), -q/--quiet, --log-format text|json, --version. */
extern struct poptOption mtc_common_options[];
#define MTC_POPT_COMMON                                                                         \
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, mtc_common_options, 0, "Common options:", NULL }, \
		POPT_AUTOHELP

/*
 * Options several programs take: each one's name, type and argument here;
 * those with one help text in every program take no help. The peers' token
 * is read through mtc_peer_token_path (token_file.h).
 */
#define MTC_POPT_ARG(name, c, type, var, help, arg) \
	{                                           \
		name, c, type, &(var), 0, help, arg \
	}

/* the node */
#define MTC_POPT_DIR_FOR(var, help) MTC_POPT_ARG("dir", 'd', POPT_ARG_STRING, var, help, "DIR")
#define MTC_POPT_DIR(var) MTC_POPT_DIR_FOR(var, "the local dir")
#define MTC_POPT_CONFIG(var)                                                                          \
	{                                                                                             \
		"config", 'c', POPT_ARG_STRING, &(var), 0, "the accepted config (JSON, - for stdin)", \
			"CFG"                                                                         \
	}
#define MTC_POPT_STEP(var, help) MTC_POPT_ARG("step", 's', POPT_ARG_STRING, var, help, "S")
#define MTC_POPT_JOB(var, help) MTC_POPT_ARG("job", '\0', POPT_ARG_STRING, var, help, "NAME")
#define MTC_POPT_NODES(var, help) MTC_POPT_ARG("nodes", '\0', POPT_ARG_INT, var, help, "N")
#define MTC_POPT_THREADS(var)                                                                           \
	{                                                                                               \
		"threads", '\0', POPT_ARG_INT, &(var), 0, "hashing threads (default: one per CPU)", "N" \
	}

/* the peers and the coordinator */
#define MTC_POPT_PEER(var, help) MTC_POPT_ARG("peer", '\0', POPT_ARG_ARGV, var, help, "URL")
#define MTC_POPT_PEER_URL_TEMPLATE(var)                                                          \
	{                                                                                        \
		"peer-url-template", '\0', POPT_ARG_STRING, &(var), 0,                           \
			"turns a peer rank into its URL, e.g. http://job-0-{rank}.job:7070", "T" \
	}
#define MTC_POPT_PEER_TOKEN_FILE(var)                                                                 \
	{                                                                                             \
		"peer-token-file", '\0', POPT_ARG_STRING, &(var), 0,                                  \
			"bearer token for the peers and the coordinator (else $MTC_PEER_TOKEN_FILE)", \
			"FILE"                                                                        \
	}
#define MTC_POPT_COORDINATOR_URL(var)                                       \
	{                                                                   \
		"coordinator-url", '\0', POPT_ARG_STRING, &(var), 0,        \
			"the coordinator (default $MTC_COORDINATOR)", "URL" \
	}

/* backups */
#define MTC_POPT_BACKUP(var, help) MTC_POPT_ARG("backup", 'b', POPT_ARG_STRING, var, help, "LOCATION")
#define MTC_POPT_NAME(var, help) \
	MTC_POPT_ARG("name", '\0', POPT_ARG_STRING, var, help, "YYYY-MM-DD_HH-MM")
#define MTC_POPT_VERIFY(var, help) MTC_POPT_ARG("verify", '\0', POPT_ARG_NONE, var, help, NULL)
#define MTC_POPT_STORE_AUTH(token_file, s3_endpoint)                                                        \
	{ "gcs-token-file",                                                                                 \
	  '\0',                                                                                             \
	  POPT_ARG_STRING,                                                                                  \
	  &(token_file),                                                                                    \
	  0,                                                                                                \
	  "gs:// bearer token file (else $MTC_GCS_TOKEN, credentials, metadata server)",                    \
	  "FILE" },                                                                                         \
	{                                                                                                   \
		"s3-endpoint", '\0', POPT_ARG_STRING, &(s3_endpoint), 0,                                    \
			"s3:// endpoint URL (else $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's, " \
			"AWS's)",                                                                           \
			"URL"                                                                               \
	}
#define MTC_POPT_BACKGROUND(var, help) \
	MTC_POPT_ARG("background", '\0', POPT_ARG_STRING, var, help, "CLASS")
#define MTC_POPT_PARALLEL_FOR(var, help) MTC_POPT_ARG("parallel", 'j', POPT_ARG_INT, var, help, "N")
#define MTC_POPT_PARALLEL(var) MTC_POPT_PARALLEL_FOR(var, "transfers in flight (default 32)")
#define MTC_POPT_NO_PROGRESS(var)                                                                     \
	{                                                                                             \
		"no-progress", '\0', POPT_ARG_NONE, &(var), 0, "no progress line on a terminal", NULL \
	}

/* time */
#define MTC_POPT_TIMEOUT(var, help) MTC_POPT_ARG("timeout", '\0', POPT_ARG_DOUBLE, var, help, "SEC")
#define MTC_POPT_QUIET_TIME(var, help) \
	MTC_POPT_ARG("quiet-time", '\0', POPT_ARG_DOUBLE, var, help, "SEC")
#define MTC_POPT_HEARTBEAT(var)                                         \
	{                                                               \
		"heartbeat", '\0', POPT_ARG_DOUBLE, &(var), 0,          \
			"seconds between heartbeats (default 5)", "SEC" \
	}

/* output */
#define MTC_POPT_JSON(var, help) MTC_POPT_ARG("json", '\0', POPT_ARG_NONE, var, help, NULL)

/* --slice-threshold SIZE and --slices N, read by mtc_cli_slices; the helps say which way. */
#define MTC_POPT_SLICES(threshold_text, slices, threshold_help, slices_help)                        \
	{ "slice-threshold", '\0', POPT_ARG_STRING, &(threshold_text), 0, threshold_help, "SIZE" }, \
	{                                                                                           \
		"slices", '\0', POPT_ARG_INT, &(slices), 0, slices_help, "N"                        \
	}

poptContext mtc_cli_context(const char *name, int argc, const char **argv, const struct poptOption *opts,
			    const char *usage);

/*
 * The start of a program's main: logging and HTTP set up, *ctx made over
 * opts and parsed as mtc_cli_parse does, whose result it returns.
 */
int mtc_cli_start(const char *name, int argc, const char **argv, const struct poptOption *opts,
		  const char *usage, poptContext *ctx, int *code);

/* No argument left after the options: 0, else MTC_EXIT_USAGE after the one-line error. */
int mtc_cli_no_args(poptContext ctx);

/*
 * Runs popt over the whole command line. 0 to go on; -1 when the program
 * ends here, with its exit code in *code: 0 after --version,
 * MTC_EXIT_USAGE after a bad option.
 */
int mtc_cli_parse(poptContext ctx, int *code);

/*
 * A program whose first argument is a verb. usage starts with the verb's
 * name; fn NULL: not in this build.
 */
struct mtc_verb {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *usage;
};

/*
 * The verb argv[1] names among the n of verbs: its index, with argv[1]
 * replaced by argv[0], so that the verb parses argc - 1, argv + 1 and popt
 * prints "Usage: PROG VERB ...". n when argv[1] names none.
 */
int mtc_cli_verb(int argc, const char **argv, const struct mtc_verb *verbs, int n);

/* mtc_cli_context for a verb: usage errors point to "PROG VERB --help". */
poptContext mtc_cli_verb_context(int argc, const char **argv, const struct poptOption *opts,
				 const char *usage);

/*
 * main of a program made of verbs: --help, --usage and --version, the
 * verb's function run, or a usage error; the program's exit code.
 */
int mtc_cli_dispatch(int argc, const char **argv, const struct mtc_verb *verbs, int n);

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

/* An int option left unset: its variable's initial value. */
#define MTC_CLI_UNSET INT_MIN

/*
 * An int option that takes 1 or more: 0 when given so, or unset (*v becomes
 * 0, the default); else MTC_EXIT_USAGE after the one-line error naming it.
 */
int mtc_cli_count(const char *name, int *v);

/*
 * The options a mode needs, as pairs of a name and whether it was given,
 * ending with NULL: 0 when all were, else MTC_EXIT_USAGE after one line
 * naming the missing ones only ("--step is required").
 */
int mtc_cli_required(const char *name, int given, ...);

/*
 * --background CLASS (threads.h) into *out when given (name not NULL): 0,
 * else MTC_EXIT_USAGE after the one-line error.
 */
int mtc_cli_background(const char *name, enum mtc_background *out);

/*
 * The accepted config at path (- for stdin) into *cfg: MTC_EXIT_OK, else
 * after the one-line error naming path, MTC_EXIT_NOTFOUND when there is
 * no such file and MTC_EXIT_USAGE when it is not a valid config.
 */
int mtc_cli_config(const char *path, struct mtc_config *cfg);

/* The job and node of cfg said in the status file of the local dir. */
void mtc_cli_status_node(const char *dir, const struct mtc_config *cfg);

/*
 * A node's --dir and --config: mtc_cli_local_dir, mtc_cli_config into *cfg,
 * then mtc_cli_status_node. MTC_EXIT_OK, else as those say (cfg then unset).
 */
int mtc_cli_node(const char *dir, const char *config, struct mtc_config *cfg);

#endif
