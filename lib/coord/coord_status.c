#include "coord_int.h"

char *crd_status_json(struct mtc_coord *c)
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
		snprintf(label, sizeof label, "round=\"%s\"", crd_kind_names[k]);
		mtc_metric_value(t, "mtc_coord_round_reports", label, c->rounds[k].n_reported);
		snprintf(label, sizeof label, "round=\"%s\",result=\"done\"", crd_kind_names[k]);
		mtc_metric_value(t, "mtc_coord_rounds_total", label, (double)c->done[k]);
		snprintf(label, sizeof label, "round=\"%s\",result=\"failed\"", crd_kind_names[k]);
		mtc_metric_value(t, "mtc_coord_rounds_total", label, (double)c->failed[k]);
	}
	pthread_mutex_unlock(&c->mu);
}
