#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/rank_assign.h"
#include "tap.h"

/* assign: n nodes with the given indexes; holds[i] ends with -1. */
static int assign(int n, const int *index, const int *const *holds, int *rank_of)
{
	struct mtc_rank_node *nodes = calloc((size_t)n, sizeof *nodes);
	char err[128];
	int rc;
	for (int i = 0; i < n; i++) {
		nodes[i].index = index[i];
		nodes[i].holds = holds[i];
		while (holds[i][nodes[i].n_holds] >= 0)
			nodes[i].n_holds++;
	}
	rc = mtc_rank_assign(nodes, n, rank_of, err, sizeof err);
	free(nodes);
	return rc;
}

static int is_perm(const int *r, int n)
{
	char *seen = calloc((size_t)n, 1);
	int ok = 1;
	for (int i = 0; i < n; i++) {
		if (r[i] < 0 || r[i] >= n || seen[r[i]])
			ok = 0;
		else
			seen[r[i]] = 1;
	}
	free(seen);
	return ok;
}

static double cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void)
{
	static const int none[] = { -1 };
	int r[8];

	{
		const int idx[] = { 0, 1, 2, 3 };
		const int *h[] = { none, none, none, none };
		is_int(assign(4, idx, h, r), 0, "a fresh job: no node holds data");
		ok(r[0] == 0 && r[1] == 1 && r[2] == 2 && r[3] == 3, "a fresh job keeps its indexes");
	}
	{
		/* the hosts permuted: pod 0 landed where rank 2's data is, and so on */
		static const int h0[] = { 2, 3, -1 }, h1[] = { 0, 1, -1 }, h2[] = { 3, 2, -1 },
				 h3[] = { 1, 0, -1 };
		const int idx[] = { 0, 1, 2, 3 };
		const int *h[] = { h0, h1, h2, h3 };
		is_int(assign(4, idx, h, r), 4, "every node on data it holds");
		ok(r[0] == 2 && r[1] == 0 && r[2] == 3 && r[3] == 1,
		   "each node takes the rank of its own data (its first choice), not its index");
	}
	{
		/* a node lost (pod 1 on an empty host); the others hold their peer's copy too */
		static const int h0[] = { 0, 1, -1 }, h2[] = { 2, 3, -1 }, h3[] = { 3, 2, -1 };
		const int idx[] = { 0, 1, 2, 3 };
		const int *h[] = { h0, none, h2, h3 };
		is_int(assign(4, idx, h, r), 3, "three of four on their data");
		ok(r[0] == 0 && r[1] == 1 && r[2] == 2 && r[3] == 3, "ties go to the pod index");
	}
	{
		/* augmenting: the greedy choice of node 0 must move for node 1 to be matched */
		static const int h0[] = { 1, 0, -1 }, h1[] = { 1, -1 }, h2[] = { 0, -1 };
		const int idx[] = { 2, 0, 1 };
		const int *h[] = { h0, h1, h2 };
		int m = assign(3, idx, h, r);
		ok(m == 2 && is_perm(r, 3) && r[1] == 1, "a maximum matching, by an augmenting path");
	}
	{
		const int idx[] = { -1, -1, -1 };
		static const int h2[] = { 0, 7, -9, -1 };
		const int *h[] = { none, none, h2 };
		ok(assign(3, idx, h, r) == 1 && r[2] == 0 && r[0] == 1 && r[1] == 2,
		   "unknown indexes take the free ranks in report order; ranks out of range are ignored");
	}
	{
		const int idx[] = { 0, 0 };
		const int *h[] = { none, none };
		is_int(assign(2, idx, h, r), -1, "two nodes with one index are refused");
		const int idx2[] = { 0, 5 };
		is_int(assign(2, idx2, h, r), -1, "an index out of range is refused");
	}
	{
		/* 16,384 nodes, every host holding its own and its peer's ranks, all of them moved */
		int n = 16384, *rank = malloc((size_t)n * sizeof *rank);
		struct mtc_rank_node *nodes = calloc((size_t)n, sizeof *nodes);
		int *holds = malloc((size_t)n * 2 * sizeof *holds), m;
		char err[128];
		double t0;
		srand(7);
		for (int i = 0; i < n; i++) {
			int host = (i * 7919 + 13) %
				   n; /* a permutation: 7919 is prime, n a power of 2 */
			nodes[i].index = i;
			holds[2 * i] = host;
			holds[2 * i + 1] = host ^ 1;
			nodes[i].holds = holds + 2 * i;
			nodes[i].n_holds = 2;
		}
		t0 = cpu_s();
		m = mtc_rank_assign(nodes, n, rank, err, sizeof err);
		printf("# rank assignment at %d nodes, every host moved: %.4f s of CPU\n", n,
		       cpu_s() - t0);
		ok(m == n && is_perm(rank, n), "16,384 moved nodes all land on their data");
		/* the adversarial shape: D=64 replicas, every node holds its whole column */
		int d = 64, *col = malloc((size_t)n * (size_t)d * sizeof *col);
		for (int i = 0; i < n; i++) {
			int c = ((i * 7919 + 13) % n) % (n / d);
			for (int k = 0; k < d; k++)
				col[(size_t)i * (size_t)d + (size_t)k] = c + k * (n / d);
			nodes[i].holds = col + (size_t)i * (size_t)d;
			nodes[i].n_holds = (size_t)d;
		}
		t0 = cpu_s();
		m = mtc_rank_assign(nodes, n, rank, err, sizeof err);
		printf("# rank assignment at %d nodes, D=%d, each holding its column: %.4f s of CPU\n",
		       n, d, cpu_s() - t0);
		ok(m == n && is_perm(rank, n), "and so do they when each holds its column's %d ranks",
		   d);
		free(col);
		free(rank);
		free(nodes);
		free(holds);
	}
	return done();
}
