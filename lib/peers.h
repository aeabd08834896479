#ifndef MTC_PEERS_H
#define MTC_PEERS_H

#include "config.h"

/*
 * The replication peers of one node (mtc(7) §5.3), a pure function.
 * With peer_ranks given, those. Otherwise with D = data_parallelism > 1,
 * P = N / D and the peers are (rank + a*P) mod N for a = -1, +1, -2, +2, …
 * (peers_per_node values of a). Without D: rank XOR 1, then
 * (rank + i*(N/peers_per_node)) mod N for i = 1 … peers_per_node-1.
 * Candidates equal to rank, outside [0, N) or already chosen are skipped,
 * so a node may get fewer peers than asked for when N is small.
 */
struct mtc_peer_params {
	int rank;
	int nodes;
	int peers_per_node;
	int data_parallelism;  /* <= 1: none */
	const int *peer_ranks; /* NULL: compute */
	int n_peer_ranks;
};

/* Writes at most max ranks into out; returns how many, or -1 (EINVAL) on a bad input. */
int mtc_peers(const struct mtc_peer_params *p, int *out, int max);
int mtc_peers_from_config(const struct mtc_config *cfg, int *out, int max);

/* A peer's URL from a template such as http://job-0-{rank}.job:7070 (malloc'd). */
char *mtc_peer_url(const char *tmpl, int rank);

#endif
