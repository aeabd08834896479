/*
 * The node's side of the rank server (mtc(7) §5.7): report the host, the pod
 * index and what the RAM holds; write what the answer says into
 * jax-init-info.txt (two lines, "<process id>" and "<host of process 0>:<port>",
 * as Orbax reads them), atomically. A final failure is written there as one
 * line, which Orbax refuses at once with that text rather than waiting 900 s.
 */
#include "rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "dirwatch.h"
#include "coord/coord_client.h"
#include "exitcode.h"
#include "fsutil.h"
#include "inventory.h"
#include "json_out.h"
#include "local_dir.h"
#include "log.h"
#include "peer/peer_auth.h"
#include "token_file.h"
#include "xalloc.h"

static int cmp_desc(const void *a, const void *b)
{
	const long long *x = a, *y = b;
	return x[0] != y[0] ? (x[0] < y[0] ? 1 : -1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* [[step, rank], ...]: the ranks whose every .meta of a step has its .data here, newest first. */
static json_t *holds(const char *dir)
{
	struct mtc_inventory inv;
	long long(*pairs)[2];
	size_t n = 0;
	json_t *out = json_array();

	if (mtc_inventory_scan(dir, &inv) < 0) {
		mtc_warn("cannot list '%s': reporting that it holds nothing:", dir);
		return out;
	}
	pairs = xcalloc(inv.n_metas + 1, sizeof *pairs);
	for (size_t i = 0; i < inv.n_metas; i++) {
		const struct mtc_inv_meta *m = &inv.metas[i];
		int whole = 1;
		for (size_t j = 0; j < inv.n_metas; j++)
			if (inv.metas[j].step == m->step && inv.metas[j].node == m->node &&
			    !mtc_inventory_find_data(&inv, inv.metas[j].hash))
				whole = 0;
		if (whole && m->worker == 0) {
			pairs[n][0] = m->step;
			pairs[n++][1] = m->node;
		}
	}
	qsort(pairs, n, sizeof *pairs, cmp_desc);
	for (size_t i = 0; i < n && i < 256; i++)
		json_array_append_new(out,
				      json_pack("[I, i]", (json_int_t)pairs[i][0], (int)pairs[i][1]));
	free(pairs);
	mtc_inventory_free(&inv);
	return out;
}

static int write_info(const char *dir, const char *text)
{
	char *path = xasprintf("%s/%s", dir, MTC_JAX_INIT_INFO);
	int rc = mtc_write_atomic(path, text, strlen(text));
	if (rc < 0)
		mtc_error("cannot write '%s':", path);
	free(path);
	return rc;
}

static int give_up(const char *dir, int rc, const char *why)
{
	char *line = xasprintf("mtc: no process id from the rank server: %s", why);
	mtc_error("no process id from the rank server: %s", why);
	write_info(dir, line);
	free(line);
	return rc;
}

/*
 * The answer as a line for a person; steals it. An older coordinator's answer
 * has no "nodes": the counts are then given without it.
 */
static int print_answer(json_t *answer, int index, const char *jax)
{
	long long pid = json_integer_value(json_object_get(answer, "process-id"));
	json_t *nodes = json_object_get(answer, "nodes"), *step = json_object_get(answer, "step");
	char of[32] = "", held[128] = "no node holds a step";
	int rc;

	if (json_is_integer(nodes))
		snprintf(of, sizeof of, " of %lld", (long long)json_integer_value(nodes));
	if (json_is_integer(step))
		snprintf(held, sizeof held, "%lld%s nodes on data they hold of step %lld",
			 (long long)json_integer_value(json_object_get(answer, "on-data")), of,
			 (long long)json_integer_value(step));
	rc = printf("process id %lld%s for pod index %d%s: JAX coordinator '%s', %s\n", pid, of, index,
		    pid == index ? "" : ", moved off its own index", jax, held);
	json_decref(answer);
	if (rc < 0 || fflush(stdout) != 0) {
		mtc_error("cannot write to standard output:");
		return -1;
	}
	return 0;
}

int do_rank(const struct rank_opts *o)
{
	struct mtc_coord_client cc;
	json_t *report, *answer = NULL, *pid;
	char err[1024], *secret = NULL, *info;
	const char *chost;
	int rc;

	if (o->token_file && !(secret = mtc_read_token_file(o->token_file, err, sizeof err))) {
		mtc_error("%s", err);
		return MTC_EXIT_USAGE;
	}
	report = json_pack("{s:i, s:s, s:o}", "index", o->index, "host", o->host, "holds",
			   holds(o->dir));
	mtc_info("reporting pod index %d, host '%s', %zu held ranks to '%s'", o->index, o->host,
		 json_array_size(json_object_get(report, "holds")), o->coordinator);
	/* no job or rank is known yet: the job's secret speaks for the node */
	mtc_coord_client_init(&cc, o->coordinator, secret, o->index);
	rc = mtc_coord_call(&cc, "ranks", report, mtc_deadline(o->timeout_s), &answer, err, sizeof err);
	mtc_coord_client_close(&cc);
	json_decref(report);
	if (secret) {
		memset(secret, 0, strlen(secret));
		free(secret);
	}
	if (rc)
		return give_up(o->dir, rc, err);
	pid = json_object_get(answer, "process-id");
	chost = json_string_value(json_object_get(answer, "coordinator-host"));
	if (!json_is_integer(pid) || !chost) {
		json_decref(answer);
		return give_up(o->dir, MTC_EXIT_FAILURE, "the answer has no process id and host");
	}
	info = xasprintf("%lld\n%s%s%s:%d", (long long)json_integer_value(pid),
			 strchr(chost, ':') ? "[" : "", chost, strchr(chost, ':') ? "]" : "",
			 o->jax_port);
	rc = write_info(o->dir, info) < 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
	if (rc == MTC_EXIT_OK) {
		json_object_del(answer, "status");
		if (o->json)
			rc = mtc_json_print(answer) == 0 ? MTC_EXIT_OK : MTC_EXIT_FAILURE;
		else
			rc = print_answer(answer, o->index, strchr(info, '\n') + 1) < 0
				     ? MTC_EXIT_FAILURE
				     : MTC_EXIT_OK;
		answer = NULL;
	}
	json_decref(answer);
	free(info);
	return rc;
}
