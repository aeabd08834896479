/*
 * A report's limits and packed lists (coord_report.h). Invariant: a packed
 * list holds exactly what its JSON held, in order, at 56 bytes a meta and 33
 * a data hash.
 */
#include "coord_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "coord.h"
#include "xalloc.h"

static long long cfg_int(json_t *cfg, const char *key, long long dflt)
{
	json_t *v = json_object_get(cfg, key);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

void mtc_coord_limits(int nodes, json_t *cfg, struct mtc_coord_limits *l)
{
	size_t cap = MTC_COORD_LIST_CAP(nodes), bcap = MTC_COORD_BACKUP_CAP(nodes), want;
	long long w = cfg_int(cfg, "workers-per-node", 1), p = cfg_int(cfg, "peers-per-node", 0);

	l->list = cap;
	l->backup = bcap;
	l->workers = l->copies = 0;
	if (!json_is_object(cfg))
		return;
	if (p <= 0)
		p = (long long)json_array_size(json_object_get(cfg, "peer-ranks"));
	if (w < 1 || w > 4096)
		w = 1;
	if (p < 1 || p > MTC_COORD_PEERS_MAX)
		p = p < 1 ? 1 : MTC_COORD_PEERS_MAX;
	l->workers = (int)w;
	l->copies = (int)(1 + p);
	want = (size_t)(MTC_COORD_STEPS_HELD * w * (1 + p));
	l->list = want < 32 ? 32 : want < cap ? want : cap;
	want = (size_t)nodes * (size_t)w;
	l->backup = want < bcap ? want : bcap;
}

const char *mtc_coord_over(json_t *holder, size_t metas, size_t data, const char *who, char *buf,
			   size_t len)
{
	size_t m = json_array_size(json_object_get(holder, "meta-files")),
	       d = json_array_size(json_object_get(holder, "data-files"));

	if (m <= metas && d <= data)
		return NULL;
	snprintf(buf, len, "%s lists %zu %s; at most %zu are allowed (mtc(7) 5.1)", who,
		 m > metas ? m : d, m > metas ? "metas" : "data", m > metas ? metas : data);
	return buf;
}

void mtc_coord_list_take(json_t *holder, struct mtc_lkg_list *out)
{
	json_t *metas = json_object_get(holder, "meta-files"),
	       *data = json_object_get(holder, "data-files"), *m;
	size_t i;

	mtc_coord_list_free(out);
	if (json_array_size(metas)) {
		out->metas = xmalloc(json_array_size(metas) * sizeof *out->metas);
		json_array_foreach (metas, i, m) {
			struct mtc_lkg_meta *p = &out->metas[out->n_metas++];
			p->step = json_integer_value(json_array_get(m, 0));
			p->node = (int)json_integer_value(json_array_get(m, 1));
			p->worker = (int)json_integer_value(json_array_get(m, 2));
			mtc_lkg_hash_pack(json_string_value(json_array_get(m, 3)), p->hash);
		}
	}
	if (json_array_size(data)) {
		out->data = xmalloc(json_array_size(data) * sizeof *out->data);
		json_array_foreach (data, i, m)
			mtc_lkg_hash_pack(json_string_value(m), out->data[out->n_data++]);
	}
	json_object_del(holder, "meta-files");
	json_object_del(holder, "data-files");
}

void mtc_coord_list_free(struct mtc_lkg_list *l)
{
	free(l->metas);
	free(l->data);
	*l = (struct mtc_lkg_list){ 0 };
}

size_t mtc_coord_restore_body_max(int nodes)
{
	/* [9007199254740992,1048575,1048575,"D<64 hex>"], and "D<64 hex>", each with its comma */
	const size_t meta = 103, data = 68;
	size_t lists = MTC_COORD_LIST_CAP(nodes) * (meta + data) +
		       2 * MTC_COORD_BACKUP_CAP(nodes) * (meta + data) + MTC_COORD_BACKUPS_MAX * 256;

	return 2 * (16384 + lists) + (64u << 10);
}

char *mtc_coord_dump(json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return text;
}

char *mtc_coord_failure(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return mtc_coord_dump(json_pack("{s:s, s:s}", "status", "failed", "error", msg));
}
