#ifndef MTC_RANK_ASSIGN_H
#define MTC_RANK_ASSIGN_H

#include <stddef.h>

/*
 * Node ranks (= JAX process ids) by data locality (mtc(7) §5.7). Node i
 * reports its pod index (-1: unknown) and the ranks whose checkpoint its RAM
 * holds. rank_of[i] is a permutation of [0, n) such that as many nodes as
 * possible get a rank they hold (a maximum bipartite matching, Hopcroft-Karp),
 * a node that holds its own index keeps it where the matching allows, and a
 * node matched to nothing takes its own index when free, else the lowest
 * free rank, in the order of the indexes. A fresh job (nothing held) keeps
 * its indexes. Returns the number of nodes that got a rank they hold, or -1
 * with err when two nodes name the same index or one is out of [0, n).
 */
struct mtc_rank_node {
	int index;
	const int *holds; /* ranks in [0, n); others are ignored */
	size_t n_holds;
};

int mtc_rank_assign(const struct mtc_rank_node *nodes, int n, int *rank_of, char *err, size_t errlen);

#endif
