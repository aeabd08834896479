/*
 * libFuzzer target: untrusted bodies into the coordinator's request handling
 * (mtc_coord_handle), as any token holder may send them, and the manifest
 * text reader beside it. The first byte picks the endpoint; the rest is the
 * body. Invariants: every answer is JSON with a "status" (or "error"), a
 * report either joins a round or is refused (409: a newer process of its
 * rank replaced it), and nothing leaks or crashes.
 * A round of two ranks completes when a second rank reports, so the LKG
 * planner and the sync decision run on fuzzed reports too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord/coord.h"
#include "log.h"
#include "manifest_text.h"

static const char *const kinds[] = { "restore", "restore-done", "sync", "heartbeat", "nope" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mtc_coord *c;
	struct mtc_manifest m;
	char err[256], *answer = NULL;
	const char *kind;
	json_t *j;
	int code;

	if (!c) {
		struct mtc_coord_opts o;
		mtc_log_set_level(MTC_LOG_CRITICAL);
		mtc_coord_defaults(&o);
		o.nodes = 2;
		o.poll_s = 0;
		c = mtc_coord_new(&o);
	}
	if (size < 1)
		return 0;
	kind = kinds[data[0] % (sizeof kinds / sizeof *kinds)];
	code = mtc_coord_handle(c, kind, (const char *)data + 1, size - 1, &answer);
	j = answer ? json_loads(answer, 0, NULL) : NULL;
	if (!j || !(json_object_get(j, "status") || json_object_get(j, "error")) ||
	    (code != 200 && code != 400 && code != 403 && code != 404 && code != 409 && code != 503))
		abort();
	json_decref(j);
	free(answer);
	if (mtc_manifest_parse((const char *)data + 1, size - 1, &m, err, sizeof err) == 0)
		mtc_manifest_free(&m);
	return 0;
}
