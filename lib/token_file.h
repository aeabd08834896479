#ifndef MTC_TOKEN_FILE_H
#define MTC_TOKEN_FILE_H

#include <stddef.h>

/* A bearer token shorter than this is refused: it could be guessed. */
#define MTC_TOKEN_MIN 16

/*
 * Reads the peer bearer token from a file (a Kubernetes Secret, say): the
 * whole file up to its first newline, trailing blanks and a CR dropped. A
 * NUL in the file, a token of fewer than MTC_TOKEN_MIN bytes or an empty
 * file is refused (NULL and err): cutting a secret short silently would make
 * it guessable. A file readable by group or others is read, with a warning.
 */
char *mtc_read_token_file(const char *path, char *err, size_t errlen);

/* The peer token file: --peer-token-file when given, else $MTC_PEER_TOKEN_FILE, else NULL. */
const char *mtc_peer_token_path(const char *given);

#endif
