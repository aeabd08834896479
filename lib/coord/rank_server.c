/*
 * The rank server's round (rank_server.h). Invariant: once assigned, a pod
 * index's rank never changes for this coordinator, and every rank of [0,
 * nodes) belongs to exactly one index.
 */
#include "rank_server.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "coord.h"
#include "coord_report.h"
#include "log.h"
#include "rank_assign.h"
#include "xalloc.h"

struct rank_slot {
	int reported;
	char session[64], stale[64]; /* stale: the session this one replaced */
	char *host;
	long long *steps;
	int *ranks;
	size_t n_holds;
};

struct mtc_rank_server {
	int nodes, n_reported;
	double round_s, opened;
	struct rank_slot *s;
	int *rank_of;	  /* by index, once assigned */
	json_t *shared;	  /* the answer's common part, once assigned */
	char failed[512]; /* why the last round failed, for the reports it held */
	unsigned char *failed_for;
};

struct mtc_rank_server *mtc_rank_server_new(int nodes, double round_s)
{
	struct mtc_rank_server *rs = xcalloc(1, sizeof *rs);
	rs->nodes = nodes;
	rs->round_s = round_s;
	rs->s = xcalloc((size_t)nodes, sizeof *rs->s);
	rs->failed_for = xcalloc((size_t)nodes, 1);
	return rs;
}

static void forget(struct rank_slot *s)
{
	free(s->host);
	free(s->steps);
	free(s->ranks);
	s->host = NULL;
	s->steps = NULL;
	s->ranks = NULL;
	s->n_holds = 0;
	s->reported = 0;
}

void mtc_rank_server_free(struct mtc_rank_server *rs)
{
	if (!rs)
		return;
	for (int i = 0; i < rs->nodes; i++)
		forget(&rs->s[i]);
	free(rs->s);
	free(rs->rank_of);
	free(rs->failed_for);
	json_decref(rs->shared);
	free(rs);
}

/* The newest step at which every rank is held by some node; else the newest held at all; -1: none. */
static long long judged_step(const struct mtc_rank_server *rs)
{
	long long best = -1, newest = -1;
	unsigned char *seen = xmalloc((size_t)rs->nodes);
	long long *cand = NULL;
	size_t nc = 0;

	for (int i = 0; i < rs->nodes; i++)
		for (size_t k = 0; k < rs->s[i].n_holds; k++) {
			long long st = rs->s[i].steps[k];
			size_t j;
			for (j = 0; j < nc && cand[j] != st; j++)
				;
			if (j == nc) {
				cand = xrealloc(cand, (nc + 1) * sizeof *cand);
				cand[nc++] = st;
			}
		}
	for (size_t j = 0; j < nc; j++) {
		int covered = 0;
		if (cand[j] > newest)
			newest = cand[j];
		if (cand[j] <= best)
			continue;
		memset(seen, 0, (size_t)rs->nodes);
		for (int i = 0; i < rs->nodes; i++)
			for (size_t k = 0; k < rs->s[i].n_holds; k++)
				if (rs->s[i].steps[k] == cand[j] && !seen[rs->s[i].ranks[k]]) {
					seen[rs->s[i].ranks[k]] = 1;
					covered++;
				}
		if (covered == rs->nodes)
			best = cand[j];
	}
	free(seen);
	free(cand);
	return best >= 0 ? best : newest;
}

static void assign(struct mtc_rank_server *rs)
{
	struct mtc_rank_node *nodes = xcalloc((size_t)rs->nodes, sizeof *nodes);
	int **held = xcalloc((size_t)rs->nodes, sizeof *held), on_data, zero = 0;
	long long step = judged_step(rs);
	double t0 = mtc_now();
	json_t *moved = json_array();
	char err[160];

	for (int i = 0; i < rs->nodes; i++) {
		const struct rank_slot *s = &rs->s[i];
		held[i] = xmalloc((s->n_holds + 1) * sizeof **held);
		nodes[i].index = i;
		nodes[i].holds = held[i];
		for (size_t k = 0; k < s->n_holds; k++)
			if (s->steps[k] == step)
				held[i][nodes[i].n_holds++] = s->ranks[k];
	}
	rs->rank_of = xmalloc((size_t)rs->nodes * sizeof *rs->rank_of);
	on_data = mtc_rank_assign(nodes, rs->nodes, rs->rank_of, err, sizeof err);
	for (int i = 0; i < rs->nodes; i++) {
		if (rs->rank_of[i] == 0)
			zero = i;
		free(held[i]);
	}
	for (int i = 0; i < rs->nodes; i++)
		if (rs->rank_of[i] != i)
			json_array_append_new(moved, json_pack("[i, i]", rs->rank_of[i], i));
	rs->shared = json_pack("{s:s, s:s, s:o, s:i, s:o, s:i}", "status", "done", "coordinator-host",
			       rs->s[zero].host, "step", step >= 0 ? json_integer(step) : json_null(),
			       "on-data", on_data, "moved", moved, "nodes", rs->nodes);
	mtc_info("ranks: %d of %d nodes on data they hold (step %lld), %zu moved, assigned in %.3f s",
		 on_data, rs->nodes, step, json_array_size(moved), mtc_now() - t0);
	free(held);
	free(nodes);
}

static int done_answer(struct mtc_rank_server *rs, int index, char **answer)
{
	json_t *a = json_copy(rs->shared);
	json_object_set_new(a, "process-id", json_integer(rs->rank_of[index]));
	*answer = mtc_coord_dump(a);
	return 200;
}

/* Reads a report into slot fields; NULL when it holds together, else why. */
static const char *parse(struct mtc_rank_server *rs, json_t *rep, int *index, const char **session,
			 const char **host, json_t **holds)
{
	json_t *v = json_object_get(rep, "index"), *h;
	size_t i;

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= rs->nodes)
		return "no \"index\" in [0, nodes)";
	*index = (int)json_integer_value(v);
	*session = json_string_value(json_object_get(rep, "session")) ?: "";
	if (strlen(*session) > 63)
		return "\"session\" is longer than 63 bytes";
	*host = json_string_value(json_object_get(rep, "host"));
	if (!*host || !**host || strlen(*host) > 253 || strpbrk(*host, " /\t\r\n"))
		return "no \"host\" (a name or address)";
	*holds = json_object_get(rep, "holds");
	if (*holds && !json_is_array(*holds))
		return "\"holds\" is not a list";
	if (json_array_size(*holds) > MTC_RANK_HOLDS_MAX)
		return "\"holds\" is longer than 256";
	json_array_foreach (*holds, i, h) {
		json_t *st = json_array_get(h, 0), *r = json_array_get(h, 1);
		if (!json_is_array(h) || json_array_size(h) != 2 || !json_is_integer(st) ||
		    json_integer_value(st) < 0 || json_integer_value(st) > MTC_COORD_STEP_MAX ||
		    !json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > INT_MAX)
			return "a \"holds\" entry is not [step, rank]";
	}
	return NULL;
}

int mtc_rank_server_report(struct mtc_rank_server *rs, const char *body, size_t len, int *index,
			   char session[64], char superseded[64], char **answer)
{
	json_error_t je;
	json_t *rep = json_loadb(body, len, 0, &je), *holds, *h;
	const char *sess, *host, *why = NULL;
	struct rank_slot *s;
	size_t i;

	superseded[0] = '\0';
	if (!rep)
		why = je.text;
	else if (!json_is_object(rep))
		why = "not a JSON object";
	else
		why = parse(rs, rep, index, &sess, &host, &holds);
	if (why) {
		*answer = mtc_coord_failure("bad 'ranks' report: %s", why);
		json_decref(rep);
		return 400;
	}
	s = &rs->s[*index];
	snprintf(session, 64, "%s", sess);
	if (s->stale[0] && !strcmp(s->stale, sess)) {
		*answer =
			mtc_coord_failure("pod index %d reported again from another process: this one's "
					  "report is superseded",
					  *index);
		json_decref(rep);
		return 409;
	}
	if (rs->rank_of) {
		json_decref(rep);
		return done_answer(rs, *index, answer);
	}
	if (s->reported && strcmp(s->session, sess)) {
		mtc_warn("ranks: pod index %d reported from a new process ('%s' replaces '%s'); "
			 "the older is refused",
			 *index, sess, s->session);
		snprintf(superseded, 64, "%s", s->session);
		snprintf(s->stale, sizeof s->stale, "%s", s->session);
	}
	if (!s->reported)
		rs->n_reported++;
	forget(s);
	s->reported = 1;
	rs->failed_for[*index] = 0;
	snprintf(s->session, sizeof s->session, "%s", sess);
	s->host = xstrdup(host);
	s->steps = xmalloc((json_array_size(holds) + 1) * sizeof *s->steps);
	s->ranks = xmalloc((json_array_size(holds) + 1) * sizeof *s->ranks);
	json_array_foreach (holds, i, h) {
		/* a rank past the nodes is of a bigger run of the job (a shrink): no place here */
		if (json_integer_value(json_array_get(h, 1)) >= rs->nodes)
			continue;
		s->steps[s->n_holds] = json_integer_value(json_array_get(h, 0));
		s->ranks[s->n_holds++] = (int)json_integer_value(json_array_get(h, 1));
	}
	json_decref(rep);
	if (!rs->opened)
		rs->opened = mtc_now();
	if (rs->n_reported == rs->nodes) {
		assign(rs);
		return done_answer(rs, *index, answer);
	}
	return 0;
}

int mtc_rank_server_answer(struct mtc_rank_server *rs, int index, const char *session, char **answer)
{
	const struct rank_slot *s = &rs->s[index];

	if (s->stale[0] && !strcmp(s->stale, session)) {
		*answer =
			mtc_coord_failure("pod index %d reported again from another process: this one's "
					  "report is superseded",
					  index);
		return 409;
	}
	if (rs->rank_of)
		return done_answer(rs, index, answer);
	if (rs->failed_for[index]) {
		rs->failed_for[index] = 0;
		*answer = mtc_coord_failure("%s", rs->failed);
		return 200;
	}
	*answer = mtc_coord_dump(json_pack("{s:s, s:i, s:i}", "status", "waiting", "reported",
					   rs->n_reported, "nodes", rs->nodes));
	return 200;
}

int mtc_rank_server_reported(const struct mtc_rank_server *rs)
{
	return rs->rank_of ? rs->nodes : rs->n_reported;
}

int mtc_rank_server_check(struct mtc_rank_server *rs, double now)
{
	char missing[160] = "";
	size_t n = 0;
	int shown = 0;

	if (rs->rank_of || !rs->opened || now - rs->opened <= rs->round_s)
		return 0;
	for (int i = 0; i < rs->nodes && n < sizeof missing; i++) {
		if (rs->s[i].reported)
			continue;
		if (shown++ == 16) {
			snprintf(missing + n, sizeof missing - n, ", ...");
			break;
		}
		n += (size_t)snprintf(missing + n, sizeof missing - n, "%s%d", shown > 1 ? ", " : "", i);
	}
	snprintf(rs->failed, sizeof rs->failed,
		 "rank assignment timed out after %.0f s: %d of %d nodes reported; pod index%s %s "
		 "did not",
		 rs->round_s, rs->n_reported, rs->nodes, strchr(missing, ',') ? "es" : "", missing);
	mtc_error("%s", rs->failed);
	for (int i = 0; i < rs->nodes; i++) {
		rs->failed_for[i] = (unsigned char)rs->s[i].reported;
		forget(&rs->s[i]);
	}
	rs->n_reported = 0;
	rs->opened = 0;
	return 1;
}
