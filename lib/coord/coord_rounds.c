#include "coord_int.h"

const char *crd_kind_names[NKINDS] = { "restore", "restore-done", "sync" };

/* Under mu: w's answer may be collected. */
void crd_wake(struct mtc_coord *c, struct mtc_coord_wait *w)
{
	LIST_REMOVE(w, link);
	w->woken = 1;
	if (w->wake)
		w->wake(w->arg);
	else
		pthread_cond_broadcast(&c->cv);
}

/* Under mu: wakes the waits for rounds of kind k (every wait when k < 0). */
void crd_wake_kind(struct mtc_coord *c, int k)
{
	for (struct mtc_coord_wait *w = LIST_FIRST(&c->waits), *next; w; w = next) {
		next = LIST_NEXT(w, link);
		if (k < 0 || w->kind == k)
			crd_wake(c, w);
	}
}

static void forget_reports(struct round *rd, int nodes)
{
	for (int r = 0; r < nodes; r++) {
		json_decref(rd->s[r].report);
		rd->s[r].report = NULL;
		mtc_coord_list_free(&rd->s[r].list);
	}
	for (int b = 0; b < MTC_COORD_BACKUPS_MAX; b++)
		mtc_coord_list_free(&rd->backups[b]);
	mtc_json_atoms_free(rd->atoms);
	rd->atoms = NULL;
	rd->n_reported = 0;
	rd->opened = 0;
}

/* Ends the round: every rank that reported gets the same failure. */
static void fail_round(struct mtc_coord *c, struct round *rd, const char *msg)
{
	mtc_error("%s", msg);
	c->failed[rd - c->rounds]++;
	for (int r = 0; r < c->o.nodes; r++) {
		struct slot *s = &rd->s[r];
		if (!s->report)
			continue;
		json_decref(s->answer);
		s->answer = json_pack("{s:s, s:s}", "status", "failed", "error", msg);
	}
	forget_reports(rd, c->o.nodes);
	crd_wake_kind(c, (int)(rd - c->rounds));
}

static void list_ranks(struct mtc_coord *c, struct round *rd, int missing, char *out, size_t len)
{
	size_t n = 0;
	int shown = 0;
	out[0] = '\0';
	for (int r = 0; r < c->o.nodes && n < len; r++) {
		if ((rd->s[r].report == NULL) != missing)
			continue;
		if (shown++ == 16) {
			snprintf(out + n, len - n, ", …");
			return;
		}
		n += (size_t)snprintf(out + n, len - n, "%s%d", shown > 1 ? ", " : "", r);
	}
}

/* Fails an open round that timed out or waits for a rank that vanished. */
static void check_round(struct mtc_coord *c, enum kind k)
{
	struct round *rd = &c->rounds[k];
	double now = mtc_now();
	char msg[512], ranks[160];

	if (!rd->opened)
		return;
	if (now - rd->opened > c->o.round_s) {
		list_ranks(c, rd, 1, ranks, sizeof ranks);
		snprintf(msg, sizeof msg, "round '%s' timed out after %.0f s: rank%s %s did not report",
			 crd_kind_names[k], c->o.round_s, strchr(ranks, ',') ? "s" : "", ranks);
		fail_round(c, rd, msg);
		return;
	}
	for (int r = 0; r < c->o.nodes; r++)
		if (!rd->s[r].report && c->last_seen[r] > 0 &&
		    now - c->last_seen[r] > c->o.heartbeat_s) {
			snprintf(msg, sizeof msg,
				 "round '%s' failed: rank %d vanished (no heartbeat for %.0f s)",
				 crd_kind_names[k], r, now - c->last_seen[r]);
			fail_round(c, rd, msg);
			return;
		}
}

void crd_complete(struct mtc_coord *c, enum kind k)
{
	struct round *rd = &c->rounds[k];
	char err[512], msg[700];

	if (k == K_RESTORE) {
		if (crd_complete_restore(c, rd, err, sizeof err) < 0) {
			snprintf(msg, sizeof msg, "round 'restore' failed: %s", err);
			fail_round(c, rd, msg);
			return;
		}
	} else if (k == K_DONE) {
		crd_complete_done(c, rd);
	} else {
		crd_complete_sync(c, rd);
	}
	forget_reports(rd, c->o.nodes);
	c->done[k]++;
	crd_wake_kind(c, k);
}

/* Waits on cv until a broadcast or until (mtc_now() is CLOCK_MONOTONIC, as cv's clock). */
void crd_wait_until(struct mtc_coord *c, pthread_cond_t *cv, double until)
{
	struct timespec ts;

	ts.tv_sec = (time_t)until;
	ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
	pthread_cond_timedwait(cv, &c->mu, &ts);
}

/*
 * One thread checks the open rounds for timeouts and vanished ranks every
 * 0.25 s, and wakes the waits that are over; a waiting report holds no
 * thread of its own and is woken once.
 */
void *crd_watch_main(void *arg)
{
	struct mtc_coord *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		double now = mtc_now(), next = now + 0.25;
		for (int k = 0; k < NKINDS; k++)
			check_round(c, (enum kind)k);
		if (mtc_rank_server_check(c->ranks, now))
			crd_wake_kind(c, K_RANKS);
		for (struct mtc_coord_wait *w = LIST_FIRST(&c->waits), *after; w; w = after) {
			after = LIST_NEXT(w, link);
			if (w->until <= now)
				crd_wake(c, w);
			else if (w->until < next)
				next = w->until;
		}
		crd_wait_until(c, &c->tick, next);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}
