#include "peer_client.h"

#include "peer_client_int.h"

void mtc_peer_client_defaults(struct mtc_peer_client *pc)
{
	memset(pc, 0, sizeof *pc);
	pc->deadline_s = 3600;
	pc->retries = 4;
	pc->streams = 4;
	pc->limits.max_bytes = 1LL << 40;
	pc->limits.max_files = 1000000;
	pc->limits.max_depth = 64;
}

struct push_peer {
	const struct mtc_peer_client *pc;
	const char *dir;
	const char *url;
	char **metas;
	int n_metas;
	int ok, sent, skipped;
	long long bytes;
	double seconds;
	char err[1024];
};

static void *push_one(void *arg)
{
	struct push_peer *p = arg;
	double t0 = mtc_now();

	for (int i = 0; i < p->n_metas; i++) {
		char hash[MTC_HASH_MAX + 1], *mpath = xasprintf("%s/%s", p->dir, p->metas[i]);
		char *data;
		long long sent = 0;
		int has, rc;

		if (mtc_read_meta(mpath, hash) < 0) {
			snprintf(p->err, sizeof p->err, "cannot read '%s': %s", mpath, strerror(errno));
			free(mpath);
			goto out;
		}
		free(mpath);
		data = xasprintf("%s.data", hash);
		has = mtc_peer_has(p->pc, p->url, data, p->err, sizeof p->err);
		if (has == 0) {
			rc = mtc_peer_put(p->pc, p->url, p->dir, data, &sent, p->err, sizeof p->err);
			p->sent++;
			p->bytes += sent;
		} else {
			rc = has < 0;
			p->skipped += has == 1;
		}
		free(data);
		if (rc)
			goto out;
		if (mtc_peer_put(p->pc, p->url, p->dir, p->metas[i], &sent, p->err, sizeof p->err))
			goto out;
	}
	p->ok = 1;
	p->err[0] = '\0';
out:
	p->seconds = mtc_now() - t0;
	return NULL;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char **step_metas(const char *dir, const char *job, long long step, int rank, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **out = NULL;
	int cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		struct mtc_ckpt_name c;
		if (mtc_parse_ckpt_name(e->d_name, &c) || c.ext != MTC_EXT_META || strcmp(c.job, job) ||
		    c.step != step || c.rank != rank)
			continue;
		if (*n == cap)
			out = xrealloc(out, (size_t)(cap = cap ? cap * 2 : 4) * sizeof *out);
		out[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(out, (size_t)*n, sizeof *out, by_name);
	return out;
}

json_t *mtc_peer_push_step(const struct mtc_peer_client *pc, const char *dir, const char *job,
			   long long step, int rank, char *const *peers, int n_peers, int *failed)
{
	struct push_peer *pp = xcalloc((size_t)(n_peers ? n_peers : 1), sizeof *pp);
	pthread_t *th = xcalloc((size_t)(n_peers ? n_peers : 1), sizeof *th);
	json_t *list = json_array(), *out;
	double t0 = mtc_now();
	int n_metas;
	char **metas = step_metas(dir, job, step, rank, &n_metas);

	*failed = 0;
	if (!n_metas) {
		free(pp);
		free(th);
		*failed = -1;
		return json_pack("{s:I, s:b, s:s, s:o}", "step", (json_int_t)step, "ok", 0, "error",
				 "no .meta of this node for the step", "peers", list);
	}
	for (int i = 0; i < n_peers; i++) {
		pp[i] = (struct push_peer){
			.pc = pc, .dir = dir, .url = peers[i], .metas = metas, .n_metas = n_metas
		};
		if (pthread_create(&th[i], NULL, push_one, &pp[i]))
			push_one(&pp[i]), th[i] = 0;
	}
	for (int i = 0; i < n_peers; i++) {
		json_t *one;
		if (th[i])
			pthread_join(th[i], NULL);
		one = json_pack("{s:s, s:b, s:i, s:i, s:i, s:I, s:o}", "peer", pp[i].url, "ok", pp[i].ok,
				"metas", n_metas, "data-sent", pp[i].sent, "data-skipped", pp[i].skipped,
				"bytes", (json_int_t)pp[i].bytes, "seconds",
				mtc_json_seconds(pp[i].seconds));
		if (!pp[i].ok) {
			json_object_set_new(one, "error", json_string(pp[i].err));
			mtc_error("cannot push step %lld to '%s': %s", step, pp[i].url, pp[i].err);
			(*failed)++;
		}
		json_array_append_new(list, one);
	}
	out = json_pack("{s:I, s:b, s:o, s:o}", "step", (json_int_t)step, "ok", *failed == 0, "seconds",
			mtc_json_seconds(mtc_now() - t0), "peers", list);
	for (int i = 0; i < n_metas; i++)
		free(metas[i]);
	free(metas);
	free(pp);
	free(th);
	return out;
}
