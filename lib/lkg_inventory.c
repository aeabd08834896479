#include "lkg_inventory.h"

#include <string.h>

#include "backups.h"

json_t *mtc_lkg_rank_entry(const struct mtc_inventory *inv, int rank, const char *address,
			   const char *job)
{
	json_t *metas = json_array(), *data = json_array();

	for (size_t i = 0; i < inv->n_metas; i++) {
		const struct mtc_inv_meta *m = &inv->metas[i];
		if (job && strcmp(m->job, job))
			continue;
		json_array_append_new(metas, json_pack("[I, i, i, s]", (json_int_t)m->step, m->node,
						       m->worker, m->hash));
	}
	for (size_t i = 0; i < inv->n_data; i++)
		json_array_append_new(data, json_string(inv->data[i].hash));
	return json_pack("{s:i, s:s?, s:o, s:o}", "node-rank", rank, "node-address", address,
			 "meta-files", metas, "data-files", data);
}

json_t *mtc_lkg_backup_entry(struct mtc_store *s, const char *name, int nodes, int workers, int *valid)
{
	struct mtc_backup_info info;
	json_t *metas, *data, *e;

	if (mtc_backup_inspect(s, name, nodes, workers, &info) < 0)
		return NULL;
	if (valid)
		*valid = info.state == MTC_BACKUP_VALID;
	metas = json_array();
	data = json_array();
	for (size_t i = 0; i < info.n_metas; i++) {
		const struct mtc_backup_meta *m = &info.metas[i];
		if (!m->hash[0])
			continue;
		/* a rank past the nodes is a bigger run's (a shrink); its data may be a column's copy */
		if (m->rank < nodes)
			json_array_append_new(metas, json_pack("[I, i, i, s]", (json_int_t)m->step,
							       m->rank, m->worker, m->hash));
		if (m->has_data)
			json_array_append_new(data, json_string(m->hash));
	}
	e = json_pack("{s:s, s:o, s:o}", "name", name, "meta-files", metas, "data-files", data);
	if (info.shape_nodes)
		json_object_set_new(e, "shape",
				    json_pack("{s:i, s:i}", "nodes", info.shape_nodes,
					      "assume-data-parallelism", info.shape_dp));
	mtc_backup_info_free(&info);
	return e;
}

json_t *mtc_lkg_inventory_head(const char *job, int nodes, int workers, int data_parallelism,
			       int peers_per_node)
{
	json_t *inv = json_pack("{s:s?, s:i, s:i}", "job-name", job, "nodes", nodes, "workers-per-node",
				workers);
	if (data_parallelism > 1)
		json_object_set_new(inv, "assume-data-parallelism", json_integer(data_parallelism));
	if (peers_per_node > 0)
		json_object_set_new(inv, "peers-per-node", json_integer(peers_per_node));
	json_object_set_new(inv, "ranks", json_array());
	return inv;
}
