#ifndef MTC_PEER_CMD_H
#define MTC_PEER_CMD_H

/* The peer verbs of mtc-replicate (argv[0] is the verb): option parsing and exit codes. */
int mtc_replicate_serve(int argc, const char **argv);
int mtc_replicate_push(int argc, const char **argv);
int mtc_replicate_fetch(int argc, const char **argv);

#endif
