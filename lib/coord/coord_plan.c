#include "coord_int.h"

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

int crd_complete_restore(struct mtc_coord *c, struct round *rd, char *err, size_t errlen)
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

void crd_complete_done(struct mtc_coord *c, struct round *rd)
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

void crd_complete_sync(struct mtc_coord *c, struct round *rd)
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
