#include "peers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static int add_peer(const struct mtc_peer_params *p, long long cand, int *out, int n, int max)
{
	if (cand < 0 || cand >= p->nodes || cand == p->rank || n >= max)
		return n;
	for (int i = 0; i < n; i++)
		if (out[i] == cand)
			return n;
	out[n] = (int)cand;
	return n + 1;
}

static long long mod(long long a, long long n) { return ((a % n) + n) % n; }

int mtc_peers(const struct mtc_peer_params *p, int *out, int max)
{
	int n = 0;

	if (p->nodes <= 0 || p->rank < 0 || p->rank >= p->nodes || max < 0) {
		errno = EINVAL;
		return -1;
	}
	if (p->peer_ranks) {
		for (int i = 0; i < p->n_peer_ranks; i++)
			n = add_peer(p, p->peer_ranks[i], out, n, max);
		return n;
	}
	if (p->peers_per_node <= 0)
		return 0;
	if (p->data_parallelism > 1) {
		long long part;
		if (p->nodes % p->data_parallelism) {
			errno = EINVAL;
			return -1;
		}
		part = p->nodes / p->data_parallelism;
		for (int k = 0; k < p->peers_per_node; k++) {
			long long a = (k / 2 + 1) * (k % 2 ? 1 : -1);
			n = add_peer(p, mod(p->rank + a * part, p->nodes), out, n, max);
		}
		return n;
	}
	n = add_peer(p, p->rank ^ 1, out, n, max);
	for (int i = 1; i < p->peers_per_node; i++)
		n = add_peer(p, mod(p->rank + (long long)i * (p->nodes / p->peers_per_node), p->nodes),
			     out, n, max);
	return n;
}

int mtc_peers_from_config(const struct mtc_config *cfg, int *out, int max)
{
	struct mtc_peer_params p = {
		.rank = cfg->node_rank,
		.nodes = cfg->nodes,
		.peers_per_node = cfg->peers_per_node,
		.data_parallelism = cfg->data_parallelism,
		.peer_ranks = cfg->peer_ranks,
		.n_peer_ranks = cfg->n_peer_ranks,
	};
	return mtc_peers(&p, out, max);
}

char *mtc_peer_url(const char *tmpl, int rank)
{
	char num[16], *out = xstrdup(""), *next;
	const char *p;

	snprintf(num, sizeof num, "%d", rank);
	while ((p = strstr(tmpl, "{rank}"))) {
		next = xasprintf("%s%.*s%s", out, (int)(p - tmpl), tmpl, num);
		free(out);
		out = next;
		tmpl = p + strlen("{rank}");
	}
	next = xasprintf("%s%s", out, tmpl);
	free(out);
	return next;
}
