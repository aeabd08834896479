/*
 * mtc-replicate: the steady-state side of a node.
 *   digest  print the content digest of files and directories (b3sum's shape)
 *   commit  turn saved steps in the local dir into <hash>.data + .meta
 *   gc      local garbage collection, keeping the given steps
 *   serve, push, fetch, run: the peer service and the loop (added by their owners)
 * Each verb is one function with its own options, in cmd/mtc-replicate/;
 * main() only dispatches.
 */
#include "common/cli.h"
#include "exitcode.h"
#include "http.h"
#include "log.h"
#include "mtc-replicate/peer_cmd.h"
#include "mtc-replicate/verbs.h"

static const struct mtc_verb verbs[] = {
	{ "digest", mtc_replicate_digest, DIGEST_USAGE },
	{ "commit", mtc_replicate_commit, COMMIT_USAGE },
	{ "gc", mtc_replicate_gc, GC_USAGE },
	{ "serve", mtc_replicate_serve,
	  "serve --dir DIR --listen HOST:PORT [--peer-token-file FILE] [--insecure] [--json]" },
	{ "push", mtc_replicate_push,
	  "push --dir DIR --config CFG --step S [--peer URL]... [--peer-url-template T] [--json]" },
	{ "fetch", mtc_replicate_fetch,
	  "fetch --dir DIR --from URL [--hash H]... [--meta NAME]... [--json]" },
	{ "run", mtc_replicate_run, RUN_USAGE },
};

int main(int argc, const char **argv)
{
	mtc_log_init(argv[0]);
	mtc_http_init();
	return mtc_cli_dispatch(argc, argv, verbs, (int)(sizeof verbs / sizeof *verbs));
}
