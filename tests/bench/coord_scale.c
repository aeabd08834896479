/*
 * The coordinator's restore round in process at N ranks (lib/coord.h, no HTTP):
 * its CPU and the process's peak RSS. Built and run by tests/bench/coord.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "coord/coord.h"
#include "fsutil.h"

static double cpu(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static long rss_kb(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_maxrss;
}

static char *report(int r, int n, int steps)
{
	char hash[80];
	json_t *metas = json_array(), *data = json_array();
	int peer = r ^ 1;
	if (peer >= n)
		peer = r;
	for (int s = 1; s <= steps; s++)
		for (int k = 0; k < 2; k++) {
			int node = k ? peer : r;
			snprintf(hash, sizeof hash, "%064x", (unsigned)(s * 1000003u + (unsigned)node * 7919u));
			json_array_append_new(metas, json_pack("[i, i, i, s]", s, node, 0, hash));
			json_array_append_new(data, json_string(hash));
		}
	json_t *cfg = json_pack("{s:s, s:s, s:i, s:i, s:[i], s:i}", "job-name", "b", "framework", "orbax",
				"node-rank", r, "nodes", n, "peer-ranks", peer, "backup-interval-minutes", 30);
	json_t *j = json_pack("{s:i, s:s, s:s, s:o, s:o, s:o, s:i}", "rank", r, "session", "s1", "address",
			      "http://10.0.0.1:7070", "config", cfg, "meta-files", metas, "data-files", data,
			      "wait", 0);
	char *t = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return t;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1024, steps = 4;
	struct mtc_coord_opts o;
	mtc_coord_defaults(&o);
	o.nodes = n;
	o.poll_s = 0;
	struct mtc_coord *c = mtc_coord_new(&o);
	char **bodies = calloc((size_t)n, sizeof *bodies);
	for (int r = 0; r < n; r++)
		bodies[r] = report(r, n, steps);
	double c0 = cpu(), t0 = mtc_now(), t1;
	int done = 0;
	int last = 0; /* the last report completes the round and takes its answer at once */
	for (int r = 0; r < n; r++) {
		char *a = NULL;
		mtc_coord_handle(c, "restore", bodies[r], strlen(bodies[r]), &a);
		last = a && strstr(a, "\"status\":\"done\"") != NULL;
		done += last;
		free(a);
	}
	t1 = mtc_now();
	double c1 = cpu();
	for (int r = 0; r < n - last; r++) {
		char *a = NULL;
		mtc_coord_handle(c, "restore", bodies[r], strlen(bodies[r]), &a);
		done += a && strstr(a, "\"status\":\"done\"") != NULL;
		free(a);
	}
	printf("%6d ranks: reports+plan %.2f s CPU (%.2f s wall), answers %.2f s CPU; %d done; max RSS %ld MiB\n",
	       n, c1 - c0, t1 - t0, cpu() - c1, done, rss_kb() / 1024);
	return done == n ? 0 : 1;
}
