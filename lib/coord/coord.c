/*
 * The coordinator's rounds (coord.h). Invariant: a round completes or fails
 * as a whole under the lock, and every rank that reported to it then holds
 * exactly one answer until it collects it; nothing waits without a deadline.
 */
#include "coord.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "clock.h"
#include "coord_report.h"
#include "fsutil.h"
#include "json_atoms.h"
#include "json_parse.h"
#include "lkg.h"
#include "lkg_inventory.h"
#include "log.h"
#include "metrics.h"
#include "naming.h"
#include "peer/peer_auth.h"
#include "rank_server.h"
#include "shape.h"
#include "xalloc.h"

enum kind { K_RESTORE, K_DONE, K_SYNC, NKINDS };
/* not rounds of reports by rank: NKINDS is the heartbeat; the rank server keys by pod index */
#define K_RANKS (NKINDS + 1)
static const char *kind_names[NKINDS] = { "restore", "restore-done", "sync" };

struct slot {
	json_t *report; /* without its lists, which are in list */
	struct mtc_lkg_list list;
	json_t *answer; /* waiting to be collected */
	char session[64];
};

struct round {
	double opened; /* 0: no report yet */
	int n_reported;
	struct slot *s;
	struct mtc_json_atoms *atoms; /* the reports' strings and integers in arrays, one of each value */
	struct mtc_lkg_list backups[MTC_COORD_BACKUPS_MAX]; /* rank 0's, as its "backups" names them */
};

/*
 * A report waiting for its round: in the coordinator's list until it is
 * woken (its round ended, its wait is over, or stopping), then its owner's.
 */
struct mtc_coord_wait {
	LIST_ENTRY(mtc_coord_wait) link;
	int kind, rank; /* K_RANKS: rank is the pod index */
	double until;
	int woken;
	int superseded; /* another process reported for its rank: refused */
	char session[64];
	void (*wake)(void *); /* NULL: a thread waits on cv */
	void *arg;
};

struct mtc_coord {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* a wait without a wake function was woken */
	pthread_cond_t tick; /* the watcher's, so that stopping ends its wait */
	LIST_HEAD(, mtc_coord_wait) waits;
	pthread_t watcher;
	int watching;
	struct mtc_coord_opts o;
	struct round rounds[NKINDS];
	double *last_seen;	       /* 0: never heard from */
	unsigned char *refusal_logged; /* per rank: a report for it was refused (403) */
	unsigned char *ignored_logged; /* per rank: a field only rank 0 may state was dropped */
	char (*stale)[64];	       /* per rank: the session a newer process's report replaced */
	struct mtc_rank_server *ranks;
	char job[MTC_JOB_MAX + 1]; /* the job served: --job, else the first report's; "" until then */
	json_t *job_cfg;	   /* rank 0's last config: the job's settings, the reports' limits */
	struct mtc_json_keep keys[NKINDS + 1][16], config_keys[16], backup_keys[5], last_keys[3],
		shape_keys[3];
	int stopping;
	long long last_backup_time, last_backup_step, last_agreed;
	char last_backup_name[17];
	int scheduled;				/* the last backup was named by this coordinator */
	long long done[NKINDS], failed[NKINDS]; /* rounds, for the metrics */
};

static void *watch_main(void *arg);

/* Under mu: w's answer may be collected. */
static void wake(struct mtc_coord *c, struct mtc_coord_wait *w)
{
	LIST_REMOVE(w, link);
	w->woken = 1;
	if (w->wake)
		w->wake(w->arg);
	else
		pthread_cond_broadcast(&c->cv);
}

/* Under mu: wakes the waits for rounds of kind k (every wait when k < 0). */
static void wake_kind(struct mtc_coord *c, int k)
{
	for (struct mtc_coord_wait *w = LIST_FIRST(&c->waits), *next; w; w = next) {
		next = LIST_NEXT(w, link);
		if (k < 0 || w->kind == k)
			wake(c, w);
	}
}

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
	c->watching = pthread_create(&c->watcher, NULL, watch_main, c) == 0;
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
	wake_kind(c, -1);
	pthread_cond_signal(&c->tick);
	pthread_mutex_unlock(&c->mu);
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
	wake_kind(c, (int)(rd - c->rounds));
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
			 kind_names[k], c->o.round_s, strchr(ranks, ',') ? "s" : "", ranks);
		fail_round(c, rd, msg);
		return;
	}
	for (int r = 0; r < c->o.nodes; r++)
		if (!rd->s[r].report && c->last_seen[r] > 0 &&
		    now - c->last_seen[r] > c->o.heartbeat_s) {
			snprintf(msg, sizeof msg,
				 "round '%s' failed: rank %d vanished (no heartbeat for %.0f s)",
				 kind_names[k], r, now - c->last_seen[r]);
			fail_round(c, rd, msg);
			return;
		}
}

/* The job's config: rank 0's, the coordinator's own node (a rank states only its own peers). */
static json_t *job_config(struct round *rd)
{
	json_t *cfg = json_object_get(rd->s[0].report, "config");
	return json_is_object(cfg) ? cfg : NULL;
}

static long long cfg_int(json_t *cfg, const char *key, long long dflt)
{
	json_t *v = cfg ? json_object_get(cfg, key) : NULL;
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* 1 when a rank holds steps of the job cut into other columns (mtc(7) §5.9), and why. */
static int shape_changed(struct mtc_coord *c, struct round *rd, json_t *cfg, char *err, size_t errlen)
{
	struct mtc_shape now = { c->o.nodes, (int)cfg_int(cfg, "assume-data-parallelism", 1) };

	if (now.dp < 1 || now.nodes % now.dp)
		now.dp = 1;
	for (int r = 0; r < c->o.nodes; r++) {
		json_t *j = json_object_get(rd->s[r].report, "shape");
		struct mtc_shape saved = { (int)cfg_int(j, "nodes", 0),
					   (int)cfg_int(j, "assume-data-parallelism", 1) };
		char where[32];
		if (!json_is_object(j) || saved.nodes < 1 || saved.dp < 1 || saved.nodes % saved.dp)
			continue;
		snprintf(where, sizeof where, "node %d", r);
		if (mtc_shape_check(&saved, &now, where, err, errlen) < 0)
			return 1;
	}
	return 0;
}

/* 1 when the plan restores a backup the job wrote with other columns, and why. */
static int backup_shape_changed(struct mtc_coord *c, struct round *rd, json_t *plan, char *err,
				size_t errlen)
{
	json_t *cfg = job_config(rd);
	struct mtc_shape now = { c->o.nodes, (int)cfg_int(cfg, "assume-data-parallelism", 1) };

	if (now.dp < 1 || now.nodes % now.dp)
		now.dp = 1;
	return mtc_shape_check_backup(plan, json_object_get(rd->s[0].report, "backups"), &now, err,
				      errlen) < 0;
}

static json_t *restore_inventory(struct mtc_coord *c, struct round *rd, char *err, size_t errlen)
{
	json_t *cfg = job_config(rd), *inv, *ranks = json_array(), *rep0 = rd->s[0].report,
	       *backups = json_object_get(rep0, "backups"),
	       *version = json_object_get(rep0, "restore-version");

	if (!cfg || !json_is_string(json_object_get(cfg, "job-name"))) {
		snprintf(err, errlen, "rank 0 sent no config");
		json_decref(ranks);
		return NULL;
	}
	if (cfg_int(cfg, "nodes", -1) != c->o.nodes) {
		snprintf(err, errlen, "the config says nodes: %lld, the coordinator serves %d",
			 cfg_int(cfg, "nodes", -1), c->o.nodes);
		json_decref(ranks);
		return NULL;
	}
	if (shape_changed(c, rd, cfg, err, errlen)) {
		json_decref(ranks);
		return NULL;
	}
	inv = mtc_lkg_inventory_head(json_string_value(json_object_get(cfg, "job-name")), c->o.nodes,
				     (int)cfg_int(cfg, "workers-per-node", 1),
				     (int)cfg_int(cfg, "assume-data-parallelism", 0),
				     (int)cfg_int(cfg, "peers-per-node", 0));
	for (int r = 0; r < c->o.nodes; r++) {
		json_t *rep = rd->s[r].report, *rc = json_object_get(rep, "config"),
		       *o = json_pack("{s:i}", "node-rank", r), *v;
		if ((v = json_object_get(rep, "address")) && json_is_string(v))
			json_object_set(o, "node-address", v);
		if (rc && json_is_array(v = json_object_get(rc, "peer-ranks")))
			json_object_set(o, "peer-ranks", v);
		json_array_append_new(ranks, o);
	}
	json_object_set_new(inv, "ranks", ranks); /* replaces the head's empty one */
	/* the backup location speaks through the coordinator's own node only (parse_report) */
	if (json_is_array(backups))
		json_object_set(inv, "backups", backups);
	if (json_is_string(version))
		json_object_set(inv, "restore-version", version);
	return inv;
}

static int complete_restore(struct mtc_coord *c, struct round *rd, char *err, size_t errlen)
{
	double t0 = mtc_now();
	json_t *inv = restore_inventory(c, rd, err, errlen), *plan, *step;
	struct mtc_lkg_list *lists;
	struct mtc_lkg_listing listing = { .backups = rd->backups };

	if (!inv)
		return -1;
	/* the lists stay packed: the planner reads them where they are */
	lists = xmalloc((size_t)c->o.nodes * sizeof *lists);
	for (int r = 0; r < c->o.nodes; r++)
		lists[r] = rd->s[r].list;
	listing.ranks = lists;
	listing.n_backups = json_array_size(json_object_get(inv, "backups"));
	plan = mtc_lkg_plan_listed(inv, &listing, err, errlen);
	free(lists);
	json_decref(inv);
	if (!plan)
		return -1;
	if (backup_shape_changed(c, rd, plan, err, errlen)) {
		json_decref(plan);
		return -1;
	}
	step = json_object_get(plan, "step");
	mtc_info("restore plan: step %lld from %s, computed in %.3f s",
		 json_is_integer(step) ? (long long)json_integer_value(step) : -1LL,
		 json_string_value(json_object_get(plan, "source")) ?: "?", mtc_now() - t0);
	for (int r = 0; r < c->o.nodes; r++) {
		json_t *view = mtc_lkg_rank_view(plan, r);
		if (!view)
			view = json_pack("{s:n}", "step");
		json_object_set_new(view, "status", json_string("done"));
		json_object_set(view, "plan-step", step);
		rd->s[r].answer = view;
	}
	json_decref(plan);
	return 0;
}

static void complete_done(struct mtc_coord *c, struct round *rd)
{
	const char *error = NULL;
	int bad = -1;
	for (int r = 0; r < c->o.nodes && bad < 0; r++)
		if (!json_is_true(json_object_get(rd->s[r].report, "ok"))) {
			bad = r;
			error = json_string_value(json_object_get(rd->s[r].report, "error"));
		}
	for (int r = 0; r < c->o.nodes; r++) {
		json_t *a = json_pack("{s:s, s:b}", "status", "done", "ok", bad < 0);
		if (bad >= 0)
			json_object_set_new(a, "error",
					    json_sprintf("rank %d could not restore: %s", bad,
							 error ? error : "no reason given"));
		rd->s[r].answer = a;
	}
}

int mtc_coord_backup_due(long long agreed, int any_running, int requested, long long minutes,
			 long long steps, long long now, long long last_time, long long last_step,
			 const char *last_name, char name[17])
{
	int due;

	if (agreed < 0 || any_running || agreed == last_step)
		return 0;
	mtc_backup_name((time_t)now, name);
	if (last_name && !strcmp(name, last_name))
		return 0;
	due = requested || last_time < 0;
	if (minutes >= 0 && now - last_time >= minutes * 60)
		due = 1;
	if (steps > 0 && agreed - last_step >= steps)
		due = 1;
	return due;
}

static void complete_sync(struct mtc_coord *c, struct round *rd)
{
	json_t *cfg = job_config(rd), *backup = NULL;
	long long agreed = -1;
	int running = 0, requested = 0;
	char name[17];

	for (int r = 0; r < c->o.nodes; r++) {
		json_t *rep = rd->s[r].report, *last = json_object_get(rep, "last-backup");
		const char *lname = json_string_value(json_object_get(last, "name"));
		long long s = cfg_int(rep, "replicated-step", -1);
		time_t when;
		if (r == 0 || s < agreed)
			agreed = s;
		running |= json_is_true(json_object_get(rep, "backup-running"));
		/* A newer backup a rank knows of (one found at its start) counts as the last one. */
		if (lname && mtc_parse_backup_name(lname, &when) == 0 &&
		    (c->last_backup_time < 0 || strcmp(lname, c->last_backup_name) > 0)) {
			c->last_backup_time = (long long)when;
			c->last_backup_step = cfg_int(last, "step", -1);
			snprintf(c->last_backup_name, sizeof c->last_backup_name, "%s", lname);
			c->scheduled = 0;
		}
	}
	/* A request is for the step its rank reported: it counts once every rank is there. */
	for (int r = 0; r < c->o.nodes; r++)
		requested |= json_is_true(json_object_get(rd->s[r].report, "backup-requested")) &&
			     cfg_int(rd->s[r].report, "replicated-step", -1) == agreed;
	if (mtc_coord_backup_due(agreed, running, requested, cfg_int(cfg, "backup-interval-minutes", -1),
				 cfg_int(cfg, "backup-interval-steps", -1), (long long)time(NULL),
				 c->last_backup_time, c->last_backup_step,
				 c->last_backup_time < 0 ? NULL : c->last_backup_name, name)) {
		c->last_backup_time = (long long)time(NULL);
		c->last_backup_step = agreed;
		memcpy(c->last_backup_name, name, sizeof name);
		c->scheduled = 1;
		backup = json_pack("{s:s, s:I}", "name", name, "step", (json_int_t)agreed);
		mtc_info("sync: agreed step %lld; backup '%s' due", agreed, name);
	} else {
		if (agreed != c->last_agreed)
			mtc_info("sync: agreed step %lld", agreed);
		/* Named again while its step is agreed: a rank restarted since can still do its part. */
		if (c->scheduled && agreed == c->last_backup_step)
			backup = json_pack("{s:s, s:I}", "name", c->last_backup_name, "step",
					   (json_int_t)agreed);
	}
	c->last_agreed = agreed;
	for (int r = 0; r < c->o.nodes; r++) {
		json_t *a = json_pack("{s:s, s:I}", "status", "done", "agreed-step", (json_int_t)agreed);
		if (agreed < 0)
			json_object_set_new(a, "agreed-step", json_null());
		if (backup)
			json_object_set(a, "backup", backup);
		rd->s[r].answer = a;
	}
	json_decref(backup);
}

static void complete(struct mtc_coord *c, enum kind k)
{
	struct round *rd = &c->rounds[k];
	char err[512], msg[700];

	if (k == K_RESTORE) {
		if (complete_restore(c, rd, err, sizeof err) < 0) {
			snprintf(msg, sizeof msg, "round 'restore' failed: %s", err);
			fail_round(c, rd, msg);
			return;
		}
	} else if (k == K_DONE) {
		complete_done(c, rd);
	} else {
		complete_sync(c, rd);
	}
	forget_reports(rd, c->o.nodes);
	c->done[k]++;
	wake_kind(c, k);
}

/* Waits on cv until a broadcast or until (mtc_now() is CLOCK_MONOTONIC, as cv's clock). */
static void wait_until(struct mtc_coord *c, pthread_cond_t *cv, double until)
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
static void *watch_main(void *arg)
{
	struct mtc_coord *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		double now = mtc_now(), next = now + 0.25;
		for (int k = 0; k < NKINDS; k++)
			check_round(c, (enum kind)k);
		if (mtc_rank_server_check(c->ranks, now))
			wake_kind(c, K_RANKS);
		for (struct mtc_coord_wait *w = LIST_FIRST(&c->waits), *after; w; w = after) {
			after = LIST_NEXT(w, link);
			if (w->until <= now)
				wake(c, w);
			else if (w->until < next)
				next = w->until;
		}
		wait_until(c, &c->tick, next);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static char *collect(struct slot *s)
{
	json_t *a = s->answer;
	s->answer = NULL;
	return mtc_coord_dump(a);
}

static int kind_of(const char *kind)
{
	int k;
	for (k = 0; k < NKINDS && strcmp(kind, kind_names[k]); k++)
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
static int other_job(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *cfg_job,
		     char *why, size_t len)
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
		code = other_job(c, who, job, why, sizeof why);
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
static char *superseded_answer(int rank)
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
			wake(c, w);
		}
	}
}

static int answer_now(struct mtc_coord *c, int k, int rank, const char *session, char **answer)
{
	struct round *rd;

	if (k == K_RANKS)
		return mtc_rank_server_answer(c->ranks, rank, session, answer);
	rd = &c->rounds[k];
	if (c->stale[rank][0] && !strcmp(c->stale[rank], session)) {
		*answer = superseded_answer(rank);
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
	int k = kind_of(kind), rank, code;
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
	if (who && who->kind == MTC_CRED_RANK && (code = other_job(c, who, NULL, why, sizeof why))) {
		pthread_mutex_unlock(&c->mu);
		*answer = mtc_coord_failure("refused a 'ranks' report: %s", why);
		return code;
	}
	code = mtc_rank_server_report(c->ranks, body, len, &index, session, old, answer);
	if (code == 200 || (code == 0 && old[0]))
		supersede(c, K_RANKS, index, old);
	if (code == 200)
		wake_kind(c, K_RANKS);
	if (code == 0)
		*wait_out = add_wait(c, K_RANKS, index, session, c->o.poll_s, wake_fn, arg);
	pthread_mutex_unlock(&c->mu);
	return code;
}

static int start(struct mtc_coord *c, const struct mtc_peer_cred *who, const char *kind,
		 const char *body, size_t len, char **answer, void (*wake_fn)(void *), void *arg,
		 void **wait_out)
{
	json_t *rep, *v;
	const char *key;
	char session[64] = ""; /* a copy: a round that completes frees the report */
	struct slot *s;
	struct round *rd;
	double wait;
	int k, rank, code;

	*wait_out = NULL;
	if (kind_of(kind) == K_RANKS)
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
		*answer = superseded_answer(rank);
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
		complete(c, (enum kind)k);
	if (s->answer || wait <= 0) {
		code = answer_now(c, k, rank, session, answer);
		pthread_mutex_unlock(&c->mu);
		return code;
	}
	*wait_out = add_wait(c, k, rank, session, wait, wake_fn, arg);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

int mtc_coord_start(void *coord, const struct mtc_peer_cred *who, const char *method, const char *path,
		    const char *body, size_t len, char **answer, void (*wake_fn)(void *), void *arg,
		    void **wait)
{
	*wait = NULL;
	if (!strcmp(path + strlen(MTC_COORD_PREFIX), "status") || strcmp(method, "POST"))
		return mtc_coord_route(coord, who, method, path, body, len, answer);
	return start(coord, who, path + strlen(MTC_COORD_PREFIX), body ? body : "", len, answer, wake_fn,
		     arg, wait);
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
		*answer = w->kind == K_RANKS ? NULL : superseded_answer(w->rank);
		code = w->kind == K_RANKS ? mtc_rank_server_answer(c->ranks, w->rank, w->session, answer)
					  : 409;
	} else {
		code = answer_now(c, w->kind, w->rank, w->session, answer);
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
	int code = start(c, who, kind, body, len, answer, NULL, NULL, (void **)&w);

	if (code)
		return code;
	pthread_mutex_lock(&c->mu);
	while (!w->woken && mtc_now() < w->until + 1)
		wait_until(c, &c->cv, w->until + 1);
	pthread_mutex_unlock(&c->mu);
	return mtc_coord_collect(c, w, answer);
}

int mtc_coord_handle(struct mtc_coord *c, const char *kind, const char *body, size_t len, char **answer)
{
	return handle_as(c, NULL, kind, body, len, answer);
}

static char *status_json(struct mtc_coord *c)
{
	json_t *seen = json_array(), *o;
	double now;
	pthread_mutex_lock(&c->mu);
	now = mtc_now();
	for (int r = 0; r < c->o.nodes; r++)
		json_array_append_new(seen, c->last_seen[r] > 0 ? json_real(now - c->last_seen[r])
								: json_null());
	o = json_pack("{s:i, s:o, s:{s:i, s:i, s:i, s:i}}", "nodes", c->o.nodes, "seconds-since-seen",
		      seen, "reported", "restore", c->rounds[K_RESTORE].n_reported, "restore-done",
		      c->rounds[K_DONE].n_reported, "sync", c->rounds[K_SYNC].n_reported, "ranks",
		      mtc_rank_server_reported(c->ranks));
	if (c->last_backup_time >= 0)
		json_object_set_new(o, "last-backup",
				    json_pack("{s:s, s:I}", "name", c->last_backup_name, "step",
					      (json_int_t)c->last_backup_step));
	pthread_mutex_unlock(&c->mu);
	return mtc_coord_dump(o);
}

void mtc_coord_metrics(void *coord, struct mtc_buf *t)
{
	struct mtc_coord *c = coord;
	double now;
	int silent = 0, heard = 0;

	pthread_mutex_lock(&c->mu);
	now = mtc_now();
	for (int r = 0; r < c->o.nodes; r++) {
		heard += c->last_seen[r] > 0;
		silent += c->last_seen[r] > 0 && now - c->last_seen[r] > c->o.heartbeat_s;
	}
	mtc_metric_header(t, "mtc_coord_ranks", "gauge",
			  "the job's ranks: heard from, and silent for longer than the heartbeat timeout");
	mtc_metric_value(t, "mtc_coord_ranks", "state=\"heard\"", heard);
	mtc_metric_value(t, "mtc_coord_ranks", "state=\"silent\"", silent);
	mtc_metric_value(t, "mtc_coord_ranks", "state=\"expected\"", c->o.nodes);
	mtc_metric_header(t, "mtc_coord_round_reports", "gauge",
			  "ranks that reported to the open round");
	mtc_metric_header(t, "mtc_coord_rounds_total", "counter", "rounds by kind and outcome");
	for (int k = 0; k < NKINDS; k++) {
		char label[64];
		snprintf(label, sizeof label, "round=\"%s\"", kind_names[k]);
		mtc_metric_value(t, "mtc_coord_round_reports", label, c->rounds[k].n_reported);
		snprintf(label, sizeof label, "round=\"%s\",result=\"done\"", kind_names[k]);
		mtc_metric_value(t, "mtc_coord_rounds_total", label, (double)c->done[k]);
		snprintf(label, sizeof label, "round=\"%s\",result=\"failed\"", kind_names[k]);
		mtc_metric_value(t, "mtc_coord_rounds_total", label, (double)c->failed[k]);
	}
	pthread_mutex_unlock(&c->mu);
}

int mtc_coord_admit(void *coord, const char *method, const char *path, size_t *max_body, char *err,
		    size_t errlen)
{
	const struct mtc_coord *c = coord;
	const char *kind = path + strlen(MTC_COORD_PREFIX);
	int k = kind_of(kind);

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
			       ? other_job(c, who, NULL, why, sizeof why)
			       : 0;
		pthread_mutex_unlock(&c->mu);
		if (code) {
			*answer = mtc_coord_failure("refused a status read: %s", why);
			return code;
		}
		*answer = status_json(coord);
		return 200;
	}
	if (strcmp(method, "POST")) {
		*answer = mtc_coord_failure("method not allowed: use POST");
		return 405;
	}
	return handle_as(coord, who, kind, body ? body : "", len, answer);
}
