#ifndef MTC_PEER_CMD_H
#define MTC_PEER_CMD_H

#include <popt.h>

/* The peer verbs of mtc-replicate (argv[0] is the verb): option parsing and exit codes. */
int mtc_replicate_serve(int argc, const char **argv);
int mtc_replicate_push(int argc, const char **argv);
int mtc_replicate_fetch(int argc, const char **argv);

/*
 * Parses a verb's options; usage starts with the verb, and help and usage
 * errors name "mtc-replicate VERB". 0 to go on; -1 when the program ends
 * here with *code (mtc_cli_parse).
 */
int mtc_replicate_parse(int argc, const char **argv, struct poptOption *opts, const char *usage,
			poptContext *ctx, int *code);

#endif
