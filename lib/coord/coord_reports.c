#include "coord_int.h"

static char *collect(struct slot *s)
{
	json_t *a = s->answer;
	s->answer = NULL;
	return mtc_coord_dump(a);
}

int crd_kind_of(const char *kind)
{
	int k;
	for (k = 0; k < NKINDS && strcmp(kind, crd_kind_names[k]); k++)
		;
	if (!strcmp(kind, "ranks"))
		return K_RANKS;
	return k < NKINDS || !strcmp(kind, "heartbeat") ? k : -1;
}

static int in_range(json_t *v, long long lo, long long hi)
{
	return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

/* Why a restore report's meta-files or data-files do not hold together; NULL when they do. */
static const char *bad_listing(const struct mtc_coord *c, json_t *rep)
{
	json_t *metas = json_object_get(rep, "meta-files"), *data = json_object_get(rep, "data-files");
	json_t *m;
	size_t i;

	if ((metas && !json_is_array(metas)) || (data && !json_is_array(data)))
		return "\"meta-files\" and \"data-files\" must be lists";
	json_array_foreach (metas, i, m) {
		if (!json_is_array(m) || json_array_size(m) != 4 ||
		    !in_range(json_array_get(m, 0), 0, MTC_COORD_STEP_MAX) ||
		    !in_range(json_array_get(m, 1), 0, c->o.nodes - 1) ||
		    !in_range(json_array_get(m, 2), 0, 1 << 20) ||
		    !mtc_is_hash(json_string_value(json_array_get(m, 3)) ?: ""))
			return "a meta is not [step, node in [0, nodes), worker, hash]";
	}
	json_array_foreach (data, i, m) {
		if (!mtc_is_hash(json_string_value(m) ?: ""))
			return "a data-files entry is not a hash";
	}
	return NULL;
}

/* Why a sync report does not hold together; NULL when it does. */
static const char *bad_sync(json_t *rep, char *buf, size_t len)
{
	json_t *last = json_object_get(rep, "last-backup"),
	       *step = json_object_get(rep, "replicated-step");
	const char *name = json_string_value(json_object_get(last, "name"));
	time_t when;

	if (step && !json_is_null(step) && !in_range(step, -1, MTC_COORD_STEP_MAX))
		return "\"replicated-step\" is not a step";
	if (!last || json_is_null(last))
		return NULL;
	if (!name || mtc_parse_backup_name(name, &when) < 0)
		return "\"last-backup\" has no backup name";
	if ((long long)when > (long long)time(NULL) + MTC_COORD_SKEW_S) {
		snprintf(buf, len, "\"last-backup\" '%s' is later than this coordinator's clock", name);
		return buf;
	}
	if (json_object_get(last, "step") &&
	    !in_range(json_object_get(last, "step"), -1, MTC_COORD_STEP_MAX))
		return "\"last-backup\" has no valid step";
	return NULL;
}

/* Why a report of kind k does not hold together, or NULL. */
static const char *bad_report(const struct mtc_coord *c, int k, json_t *rep, char *buf, size_t len)
{
	if (k == K_RESTORE) {
		json_t *a = json_object_get(rep, "address");
		json_t *backups = json_object_get(rep, "backups"), *b;
		const char *why;
		size_t i;
		if (a && !json_is_null(a) && (!json_is_string(a) || json_string_length(a) > 1024))
			return "\"address\" is not a URL";
		if (backups && !json_is_null(backups) && !json_is_array(backups))
			return "\"backups\" is not a list";
		json_array_foreach (backups, i, b) {
			if (!json_is_string(json_object_get(b, "name")))
				return "a backup has no name";
			if ((why = bad_listing(c, b)))
				return why;
		}
		return bad_listing(c, rep);
	}
	if (k == K_SYNC)
		return bad_sync(rep, buf, len);
	return NULL;
}

/*
 * Why a restore report lists more than its rank may (coord.h): the limits of
 * rank 0's config, for rank 0 its own, before rank 0 is heard the rank's own.
 */
static const char *over_limits(struct mtc_coord *c, json_t *rep, int rank, char *buf, size_t len)
{
	json_t *cfg = json_object_get(rep, "config"), *b;
	struct mtc_coord_limits l;
	size_t i, metas = 0, data = 0, cap = 2 * MTC_COORD_BACKUP_CAP(c->o.nodes);
	char who[128];
	const char *why;

	pthread_mutex_lock(&c->mu);
	mtc_coord_limits(c->o.nodes, rank && c->job_cfg ? c->job_cfg : cfg, &l);
	pthread_mutex_unlock(&c->mu);
	snprintf(who, sizeof who, "rank %d", rank);
	if ((why = mtc_coord_over(rep, l.list, l.list, who, buf, len)))
		return why;
	json_array_foreach (json_object_get(rep, "backups"), i, b) {
		snprintf(who, sizeof who, "backup '%.64s'",
			 json_string_value(json_object_get(b, "name")));
		/* its data may be a bigger run's too, a column's one copy after a shrink (§5.9) */
		if ((why = mtc_coord_over(b, l.backup, MTC_COORD_BACKUP_CAP(c->o.nodes), who, buf, len)))
			return why;
		metas += json_array_size(json_object_get(b, "meta-files"));
		data += json_array_size(json_object_get(b, "data-files"));
	}
	if (metas > cap || data > cap) {
		snprintf(buf, len,
			 "the backups list %zu %s in all; at most %zu are allowed (mtc(7) 5.1)",
			 metas > cap ? metas : data, metas > cap ? "metas" : "data", cap);
		return buf;
	}
	return NULL;
}

/*
 * Under mu: 0 when the job that who's credential (else the report's config,
 * cfg_job, when given) names is the one this coordinator serves, else 403 with
 * why. Without --job, the first job named is the one served.
 */
int crd_other_job(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *cfg_job, char *why,
		  size_t len)
{
	const char *job = who && who->kind == MTC_CRED_RANK ? who->job : cfg_job;

	if (!job || !mtc_valid_job_name(job))
		return 0;
	if (!c->job[0]) {
		snprintf(c->job, sizeof c->job, "%s", job);
		mtc_info("coordinator: serving job '%s', the first a report named (--job names it)",
			 job);
	}
	if (!strcmp(job, c->job))
		return 0;
	if (job == cfg_job)
		snprintf(why, len, "the config names job '%s', this coordinator serves job '%s'", job,
			 c->job);
	else
		snprintf(why, len, "the credential of rank %d of job '%s' cannot speak for job '%s'",
			 who->rank, job, c->job);
	return 403;
}

/*
 * 0 when who may report for rank (its credential's job and the report's config,
 * when it has one, naming this coordinator's job), else 403 with the answer;
 * logged the first time per rank.
 */
static int refused_speaker(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *kind,
			   json_t *rep, int rank, char **answer)
{
	const char *job = json_string_value(json_object_get(json_object_get(rep, "config"), "job-name"));
	char why[640];
	int first, code;

	if (!(code = mtc_cred_may_write(who, c->o.strict_ranks, job, rank, why, sizeof why))) {
		pthread_mutex_lock(&c->mu);
		code = crd_other_job(c, who, job, why, sizeof why);
		pthread_mutex_unlock(&c->mu);
	}
	if (!code)
		return 0;
	pthread_mutex_lock(&c->mu);
	first = !c->refusal_logged[rank];
	c->refusal_logged[rank] = 1;
	pthread_mutex_unlock(&c->mu);
	if (first)
		mtc_warn("refused a '%s' report for rank %d: %s", kind, rank, why);
	*answer = mtc_coord_failure("refused a '%s' report for rank %d: %s", kind, rank, why);
	return 403;
}

/*
 * Drops what rank may not state (mtc(7) §5.1): the backups, the restore.version
 * pin and the last backup come from rank 0 only, the coordinator's own node
 * (the first two logged once per rank); a failure's reason is kept to
 * MTC_COORD_ERROR_MAX bytes.
 */
static void keep_own(struct mtc_coord *c, const char *kind, json_t *rep, int rank)
{
	static const char *const rank0_only[] = { "backups", "restore-version", "last-backup" };
	json_t *e = json_object_get(rep, "error");
	const char *s = json_string_value(e);
	size_t n = json_string_length(e);
	int first;

	for (size_t i = 0; rank && i < sizeof rank0_only / sizeof *rank0_only; i++) {
		if (!json_object_get(rep, rank0_only[i]))
			continue;
		json_object_del(rep, rank0_only[i]);
		if (i == 2) /* every rank's sync names the backups the coordinator named */
			continue;
		pthread_mutex_lock(&c->mu);
		first = !c->ignored_logged[rank];
		c->ignored_logged[rank] = 1;
		pthread_mutex_unlock(&c->mu);
		if (first)
			mtc_warn("ignored \"%s\" in rank %d's '%s' report: only rank 0 speaks for "
				 "the backups",
				 rank0_only[i], rank, kind);
	}
	if (s && n > MTC_COORD_ERROR_MAX) {
		for (n = MTC_COORD_ERROR_MAX; n && ((unsigned char)s[n] & 0xC0) == 0x80; n--)
			;
		json_object_set_new(rep, "error", json_stringn(s, n));
	}
}

/* Under mu: the answer to a report of kind k from rank whose wait is over. */
/* The answer to a report whose rank a newer process has since reported for. */
char *crd_superseded_answer(int rank)
{
	return mtc_coord_failure("rank %d reported again from another process: this one's report is "
				 "superseded (the newest report for a rank wins)",
				 rank);
}

/*
 * Under mu: a report of session for rank replaced the waiting one of old: that
 * one is answered 409 at once, and so is any later report of old.
 */
static void supersede(struct mtc_coord *c, int k, int rank, const char *old)
{
	if (!old[0])
		return;
	if (k != K_RANKS) {
		mtc_warn("rank %d reported from a new process; the older's report is refused", rank);
		snprintf(c->stale[rank], sizeof c->stale[rank], "%s", old);
	}
	for (struct mtc_coord_wait *w = LIST_FIRST(&c->waits), *next; w; w = next) {
		next = LIST_NEXT(w, link);
		if (w->kind == k && w->rank == rank && !strcmp(w->session, old)) {
			w->superseded = 1;
			crd_wake(c, w);
		}
	}
}

int crd_answer_now(struct mtc_coord *c, int k, int rank, const char *session, char **answer)
{
	struct round *rd;

	if (k == K_RANKS)
		return mtc_rank_server_answer(c->ranks, rank, session, answer);
	rd = &c->rounds[k];
	if (c->stale[rank][0] && !strcmp(c->stale[rank], session)) {
		*answer = crd_superseded_answer(rank);
		return 409;
	}
	if (rd->s[rank].answer) {
		*answer = collect(&rd->s[rank]);
		return 200;
	}
	/* A coordinator shutting down sends its ranks to the next one (503: report again). */
	if (c->stopping) {
		*answer = mtc_coord_failure("the coordinator is shutting down");
		return 503;
	}
	*answer = mtc_coord_dump(json_pack("{s:s, s:i, s:i}", "status", "waiting", "reported",
					   rd->n_reported, "nodes", c->o.nodes));
	return 200;
}

/* A report that holds together, with its kind, rank and wait; else its HTTP status and answer. */
static int parse_report(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *kind,
			const char *body, size_t len, char **answer, json_t **report, int *kp,
			int *rankp, double *wait)
{
	json_t *rep, *v;
	const char *bad;
	int k = crd_kind_of(kind), rank, code;
	char buf[256], jerr[160];

	if (k < 0) {
		*answer = mtc_coord_failure("no such coordinator endpoint '%s'", kind);
		return 404;
	}
	pthread_mutex_lock(&c->mu); /* the round's shared values, read as the report is */
	rep = mtc_json_parse_kept(body, len, k < NKINDS ? c->rounds[k].atoms : NULL, c->keys[k], jerr,
				  sizeof jerr);
	pthread_mutex_unlock(&c->mu);
	if (!json_is_object(rep) || !json_is_integer(v = json_object_get(rep, "rank")) ||
	    json_integer_value(v) < 0 || json_integer_value(v) >= c->o.nodes) {
		*answer = mtc_coord_failure("bad '%s' report: %s", kind,
					    !rep ? jerr : "no \"rank\" in [0, nodes)");
		json_decref(rep);
		return 400;
	}
	rank = (int)json_integer_value(v);
	if ((code = refused_speaker(c, who, kind, rep, rank, answer))) {
		json_decref(rep);
		return code;
	}
	keep_own(c, kind, rep, rank);
	if (k < NKINDS && ((bad = bad_report(c, k, rep, buf, sizeof buf)) ||
			   (k == K_RESTORE && (bad = over_limits(c, rep, rank, buf, sizeof buf))))) {
		mtc_warn("refused a '%s' report from rank %d: %s", kind, rank, bad);
		*answer = mtc_coord_failure("bad '%s' report: %s", kind, bad);
		json_decref(rep);
		return 400;
	}
	*wait = c->o.poll_s;
	if (json_is_number(v = json_object_get(rep, "wait")) && json_number_value(v) >= 0 &&
	    json_number_value(v) < *wait)
		*wait = json_number_value(v);
	*report = rep;
	*kp = k;
	*rankp = rank;
	return 0;
}

/* Under mu: a report's wait for its round, until it is woken or wait seconds pass. */
static struct mtc_coord_wait *add_wait(struct mtc_coord *c, int k, int rank, const char *session,
				       double wait, void (*wake_fn)(void *), void *arg)
{
	struct mtc_coord_wait *w = xcalloc(1, sizeof *w);
	w->kind = k;
	w->rank = rank;
	snprintf(w->session, sizeof w->session, "%s", session);
	w->until = mtc_now() + wait;
	w->wake = wake_fn;
	w->arg = arg;
	LIST_INSERT_HEAD(&c->waits, w, link);
	return w;
}

/*
 * A report to the rank server (rank_server.h): any credential of the job may
 * make it, since a node has no rank yet; a rank credential of another job may not.
 */
static int start_ranks(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *body,
		       size_t len, char **answer, void (*wake_fn)(void *), void *arg, void **wait_out)
{
	char session[64], old[64], why[640];
	int index, code;

	pthread_mutex_lock(&c->mu);
	if (c->stopping) {
		pthread_mutex_unlock(&c->mu);
		*answer = mtc_coord_failure("the coordinator is shutting down");
		return 503;
	}
	if (who && who->kind == MTC_CRED_RANK && (code = crd_other_job(c, who, NULL, why, sizeof why))) {
		pthread_mutex_unlock(&c->mu);
		*answer = mtc_coord_failure("refused a 'ranks' report: %s", why);
		return code;
	}
	code = mtc_rank_server_report(c->ranks, body, len, &index, session, old, answer);
	if (code == 200 || (code == 0 && old[0]))
		supersede(c, K_RANKS, index, old);
	if (code == 200)
		crd_wake_kind(c, K_RANKS);
	if (code == 0)
		*wait_out = add_wait(c, K_RANKS, index, session, c->o.poll_s, wake_fn, arg);
	pthread_mutex_unlock(&c->mu);
	return code;
}

int crd_start(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *kind, const char *body,
	      size_t len, char **answer, void (*wake_fn)(void *), void *arg, void **wait_out)
{
	json_t *rep, *v;
	const char *key;
	char session[64] = ""; /* a copy: a round that completes frees the report */
	struct slot *s;
	struct round *rd;
	double wait;
	int k, rank, code;

	*wait_out = NULL;
	if (crd_kind_of(kind) == K_RANKS)
		return start_ranks(c, who, body, len, answer, wake_fn, arg, wait_out);
	if ((code = parse_report(c, who, kind, body, len, answer, &rep, &k, &rank, &wait)))
		return code;
	if (json_is_string(v = json_object_get(rep, "session")))
		snprintf(session, sizeof session, "%s", json_string_value(v));
	pthread_mutex_lock(&c->mu);
	c->last_seen[rank] = mtc_now();
	if (k < NKINDS && c->stale[rank][0] && !strcmp(c->stale[rank], session)) {
		pthread_mutex_unlock(&c->mu);
		json_decref(rep);
		*answer = crd_superseded_answer(rank);
		return 409;
	}
	if (c->stopping || k == NKINDS) {
		pthread_mutex_unlock(&c->mu);
		json_decref(rep);
		*answer = c->stopping ? mtc_coord_failure("the coordinator is shutting down")
				      : xstrdup("{\"status\":\"done\"}");
		return c->stopping ? 503 : 200;
	}
	rd = &c->rounds[k];
	s = &rd->s[rank];
	if (s->answer && !strcmp(s->session, session)) {
		*answer = collect(s);
		pthread_mutex_unlock(&c->mu);
		json_decref(rep);
		return 200;
	}
	json_decref(s->answer);
	s->answer = NULL;
	if (!s->report)
		rd->n_reported++;
	else if (strcmp(s->session, session))
		supersede(c, k, rank, s->session);
	if (s->report)
		json_decref(s->report);
	s->report = rep;
	if (rank == 0 && json_is_object(v = json_object_get(rep, "config"))) {
		json_decref(c->job_cfg);
		c->job_cfg = json_deep_copy(v);
	}
	if (k == K_RESTORE) {
		json_t *b;
		size_t i;
		mtc_coord_list_take(rep, &s->list);
		for (int x = 0; rank == 0 && x < MTC_COORD_BACKUPS_MAX; x++)
			mtc_coord_list_free(&rd->backups[x]);
		json_array_foreach (json_object_get(rep, "backups"), i, b)
			mtc_coord_list_take(b, &rd->backups[i]);
	}
	/* what stays JSON (the peer ranks) repeats from rank to rank: one copy of each value */
	if (!rd->atoms)
		rd->atoms = mtc_json_atoms_new();
	json_object_foreach (rep, key, v)
		if (json_is_array(v))
			mtc_json_share(rd->atoms, v);
	snprintf(s->session, sizeof s->session, "%s", session);
	if (!rd->opened)
		rd->opened = mtc_now();
	if (rd->n_reported == c->o.nodes)
		crd_complete(c, (enum kind)k);
	if (s->answer || wait <= 0) {
		code = crd_answer_now(c, k, rank, session, answer);
		pthread_mutex_unlock(&c->mu);
		return code;
	}
	*wait_out = add_wait(c, k, rank, session, wait, wake_fn, arg);
	pthread_mutex_unlock(&c->mu);
	return 0;
}
