/*
 * The coordinator's rounds (coord.h). Invariant: a round completes or fails
 * as a whole under the lock, and every rank that reported to it then holds
 * exactly one answer until it collects it; nothing waits without a deadline.
 */
#include "coord.h"

#include "coord_int.h"

void mtc_coord_defaults(struct mtc_coord_opts *o)
{
	o->nodes = 1;
	o->round_s = 300;
	o->heartbeat_s = 30;
	o->poll_s = 20;
	o->strict_ranks = 0;
	o->job = NULL;
}

/*
 * What the coordinator reads of each kind of report (mtc(7) §5.1): every other
 * key is dropped while parsing, and each list is bounded by what nodes allow.
 */
static void report_keys(struct mtc_coord *c)
{
#define KEY(k) { .key = k }
#define STR(k, n)                        \
	{                                \
		.key = k, .max_bytes = n \
	}
#define LIST(k, n)                                                  \
	{                                                           \
		.key = k, .max_items = n, .max_bytes = MTC_HASH_MAX \
	}
#define OBJ(k, t)                  \
	{                          \
		.key = k, .sub = t \
	}
#define END                 \
	{                   \
		.key = NULL \
	}
	size_t n = (size_t)c->o.nodes, list = MTC_COORD_LIST_CAP(c->o.nodes);
	const struct mtc_json_keep config[] = {
		STR("job-name", MTC_JOB_MAX),
		STR("framework", 64),
		KEY("node-rank"),
		KEY("nodes"),
		{ .key = "peer-ranks", .max_items = n < MTC_COORD_PEERS_MAX ? n : MTC_COORD_PEERS_MAX },
		KEY("peers-per-node"),
		KEY("assume-data-parallelism"),
		KEY("workers-per-node"),
		KEY("backup-interval-minutes"),
		KEY("backup-interval-steps"),
		END
	};
	const struct mtc_json_keep backup[] = { STR("name", 64),
						LIST("meta-files", MTC_COORD_BACKUP_CAP(n)),
						LIST("data-files", MTC_COORD_BACKUP_CAP(n)),
						OBJ("shape", c->shape_keys), END };
	const struct mtc_json_keep last[] = { STR("name", 64), KEY("step"), END };
	const struct mtc_json_keep shape[] = { KEY("nodes"), KEY("assume-data-parallelism"), END };
	const struct mtc_json_keep restore[] = {
		KEY("rank"),
		STR("session", 63),
		KEY("wait"),
		STR("address", 1024),
		OBJ("config", c->config_keys),
		LIST("meta-files", list),
		LIST("data-files", list),
		{ .key = "backups", .sub = c->backup_keys, .max_items = MTC_COORD_BACKUPS_MAX },
		STR("restore-version", 64),
		OBJ("shape", c->shape_keys),
		END
	};
	const struct mtc_json_keep done[] = { KEY("rank"), STR("session", 63), KEY("wait"),
					      KEY("ok"),   KEY("error"),       END };
	const struct mtc_json_keep sync[] = { KEY("rank"),
					      STR("session", 63),
					      KEY("wait"),
					      KEY("replicated-step"),
					      KEY("backup-running"),
					      KEY("backup-requested"),
					      OBJ("last-backup", c->last_keys),
					      OBJ("config", c->config_keys),
					      END };
	const struct mtc_json_keep beat[] = { KEY("rank"), STR("session", 63), KEY("wait"), END };
#undef KEY
#undef STR
#undef LIST
#undef OBJ
#undef END

	memcpy(c->config_keys, config, sizeof config);
	memcpy(c->backup_keys, backup, sizeof backup);
	memcpy(c->last_keys, last, sizeof last);
	memcpy(c->shape_keys, shape, sizeof shape);
	memcpy(c->keys[K_RESTORE], restore, sizeof restore);
	memcpy(c->keys[K_DONE], done, sizeof done);
	memcpy(c->keys[K_SYNC], sync, sizeof sync);
	memcpy(c->keys[NKINDS], beat, sizeof beat);
}

struct mtc_coord *mtc_coord_new(const struct mtc_coord_opts *o)
{
	struct mtc_coord *c = xcalloc(1, sizeof *c);
	LIST_INIT(&c->waits);
	pthread_condattr_t ca;

	c->o = *o;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_cond_init(&c->tick, &ca);
	pthread_condattr_destroy(&ca);
	for (int k = 0; k < NKINDS; k++)
		c->rounds[k].s = xcalloc((size_t)o->nodes, sizeof(struct slot));
	c->last_seen = xcalloc((size_t)o->nodes, sizeof(double));
	c->refusal_logged = xcalloc((size_t)o->nodes, 1);
	c->ignored_logged = xcalloc((size_t)o->nodes, 1);
	c->stale = xcalloc((size_t)o->nodes, sizeof *c->stale);
	c->ranks = mtc_rank_server_new(o->nodes, o->round_s);
	snprintf(c->job, sizeof c->job, "%s", o->job ? o->job : "");
	report_keys(c);
	c->last_backup_time = c->last_backup_step = c->last_agreed = -1;
	c->watching = pthread_create(&c->watcher, NULL, crd_watch_main, c) == 0;
	return c;
}

void mtc_coord_free(struct mtc_coord *c)
{
	if (!c)
		return;
	mtc_coord_shutdown(c);
	if (c->watching)
		pthread_join(c->watcher, NULL);
	for (int k = 0; k < NKINDS; k++) {
		for (int r = 0; r < c->o.nodes; r++) {
			json_decref(c->rounds[k].s[r].report);
			json_decref(c->rounds[k].s[r].answer);
			mtc_coord_list_free(&c->rounds[k].s[r].list);
		}
		for (int b = 0; b < MTC_COORD_BACKUPS_MAX; b++)
			mtc_coord_list_free(&c->rounds[k].backups[b]);
		mtc_json_atoms_free(c->rounds[k].atoms);
		free(c->rounds[k].s);
	}
	free(c->last_seen);
	free(c->refusal_logged);
	free(c->ignored_logged);
	free(c->stale);
	mtc_rank_server_free(c->ranks);
	json_decref(c->job_cfg);
	pthread_cond_destroy(&c->cv);
	pthread_cond_destroy(&c->tick);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void mtc_coord_shutdown(struct mtc_coord *c)
{
	pthread_mutex_lock(&c->mu);
	c->stopping = 1;
	crd_wake_kind(c, -1);
	pthread_cond_signal(&c->tick);
	pthread_mutex_unlock(&c->mu);
}

int mtc_coord_start(void *coord, const struct mtc_peer_cred *who, const char *method, const char *path,
		    const char *body, size_t len, char **answer, void (*wake_fn)(void *), void *arg,
		    void **wait)
{
	*wait = NULL;
	if (!strcmp(path + strlen(MTC_COORD_PREFIX), "status") || strcmp(method, "POST"))
		return mtc_coord_route(coord, who, method, path, body, len, answer);
	return crd_start(coord, who, path + strlen(MTC_COORD_PREFIX), body ? body : "", len, answer,
			 wake_fn, arg, wait);
}

int mtc_coord_collect(void *coord, void *wait, char **answer)
{
	struct mtc_coord *c = coord;
	struct mtc_coord_wait *w = wait;
	int code;

	pthread_mutex_lock(&c->mu);
	if (!w->woken)
		LIST_REMOVE(w, link);
	if (w->superseded) {
		*answer = w->kind == K_RANKS ? NULL : crd_superseded_answer(w->rank);
		code = w->kind == K_RANKS ? mtc_rank_server_answer(c->ranks, w->rank, w->session, answer)
					  : 409;
	} else {
		code = crd_answer_now(c, w->kind, w->rank, w->session, answer);
	}
	pthread_mutex_unlock(&c->mu);
	free(w);
	return code;
}

/* start, then sleep until the report's wait is woken (or over, should the watcher be gone). */
static int handle_as(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *kind,
		     const char *body, size_t len, char **answer)
{
	struct mtc_coord_wait *w;
	int code = crd_start(c, who, kind, body, len, answer, NULL, NULL, (void **)&w);

	if (code)
		return code;
	pthread_mutex_lock(&c->mu);
	while (!w->woken && mtc_now() < w->until + 1)
		crd_wait_until(c, &c->cv, w->until + 1);
	pthread_mutex_unlock(&c->mu);
	return mtc_coord_collect(c, w, answer);
}

int mtc_coord_handle(struct mtc_coord *c, const char *kind, const char *body, size_t len, char **answer)
{
	return handle_as(c, NULL, kind, body, len, answer);
}

int mtc_coord_admit(void *coord, const char *method, const char *path, size_t *max_body, char *err,
		    size_t errlen)
{
	const struct mtc_coord *c = coord;
	const char *kind = path + strlen(MTC_COORD_PREFIX);
	int k = crd_kind_of(kind);

	if (!strcmp(kind, "status") && !strcmp(method, "GET")) {
		*max_body = 0;
		return 0;
	}
	if (k < 0) {
		snprintf(err, errlen, "no such coordinator endpoint");
		return 404;
	}
	if (strcmp(method, "POST")) {
		snprintf(err, errlen, "method not allowed: use POST");
		return 405;
	}
	*max_body = k == K_RESTORE ? mtc_coord_restore_body_max(c->o.nodes) : 64u << 10;
	return 0;
}

int mtc_coord_route(void *coord, const struct mtc_peer_cred *who, const char *method, const char *path,
		    const char *body, size_t len, char **answer)
{
	const char *kind = path + strlen(MTC_COORD_PREFIX);

	if (strncmp(path, MTC_COORD_PREFIX, strlen(MTC_COORD_PREFIX))) {
		*answer = mtc_coord_failure("no such endpoint");
		return 404;
	}
	if (!strcmp(kind, "status") && !strcmp(method, "GET")) {
		struct mtc_coord *c = coord;
		char why[640];
		int code;
		pthread_mutex_lock(&c->mu);
		code = c->job[0] && who && who->kind == MTC_CRED_RANK
			       ? crd_other_job(c, who, NULL, why, sizeof why)
			       : 0;
		pthread_mutex_unlock(&c->mu);
		if (code) {
			*answer = mtc_coord_failure("refused a status read: %s", why);
			return code;
		}
		*answer = crd_status_json(coord);
		return 200;
	}
	if (strcmp(method, "POST")) {
		*answer = mtc_coord_failure("method not allowed: use POST");
		return 405;
	}
	return handle_as(coord, who, kind, body ? body : "", len, answer);
}
