/* Ranks by data locality (rank_assign.h): a maximum matching that prefers each node's own index. */
#include "rank_assign.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

struct hk {
	const struct mtc_rank_node *nodes;
	int n;
	int *node_of; /* rank -> node, -1 */
	int *rank_of; /* node -> rank, -1 */
	int *dist;    /* BFS layer of a node */
	int *queue, *stack;
	size_t *next; /* the DFS's position in a node's holds */
};

static int held(const struct hk *h, int i, size_t k)
{
	int r = h->nodes[i].holds[k];
	return r >= 0 && r < h->n ? r : -1;
}

/* Layers free nodes at 0; 1 when some free rank is reachable by an alternating path. */
static int bfs(struct hk *h)
{
	int head = 0, tail = 0, found = 0;

	for (int i = 0; i < h->n; i++) {
		h->dist[i] = h->rank_of[i] < 0 ? 0 : -1;
		if (!h->dist[i])
			h->queue[tail++] = i;
	}
	while (head < tail) {
		int i = h->queue[head++];
		for (size_t k = 0; k < h->nodes[i].n_holds; k++) {
			int r = held(h, i, k), j;
			if (r < 0)
				continue;
			j = h->node_of[r];
			if (j < 0)
				found = 1;
			else if (h->dist[j] < 0) {
				h->dist[j] = h->dist[i] + 1;
				h->queue[tail++] = j;
			}
		}
	}
	return found;
}

/* One augmenting path from free node root along the layers, without recursion. */
static int dfs(struct hk *h, int root)
{
	int top = 0;

	h->stack[top++] = root;
	while (top > 0) {
		int i = h->stack[top - 1], advanced = 0;
		while (h->next[i] < h->nodes[i].n_holds) {
			int r = held(h, i, h->next[i]), j;
			if (r < 0) {
				h->next[i]++;
				continue;
			}
			j = h->node_of[r];
			if (j < 0) {
				/* flip the path: each node on the stack takes the rank it tried */
				for (int t = top - 1; t >= 0; t--) {
					int u = h->stack[t], ur = held(h, u, h->next[u]);
					h->node_of[ur] = u;
					h->rank_of[u] = ur;
				}
				return 1;
			}
			if (h->dist[j] == h->dist[i] + 1) {
				h->stack[top++] = j;
				advanced = 1;
				break;
			}
			h->next[i]++;
		}
		if (advanced)
			continue;
		h->dist[i] = -1; /* a dead end for this phase */
		top--;
		if (top > 0)
			h->next[h->stack[top - 1]]++;
	}
	return 0;
}

static int by_index(const void *a, const void *b, void *arg)
{
	const struct mtc_rank_node *nodes = arg;
	int x = *(const int *)a, y = *(const int *)b;
	unsigned ix = (unsigned)nodes[x].index, iy = (unsigned)nodes[y].index; /* -1 last */
	return ix != iy ? (ix < iy ? -1 : 1) : (x > y) - (x < y);
}

int mtc_rank_assign(const struct mtc_rank_node *nodes, int n, int *rank_of, char *err, size_t errlen)
{
	struct hk h = { .nodes = nodes, .n = n };
	int *order, *index_used, matched = 0, free_rank = 0;

	index_used = xcalloc((size_t)n + 1, sizeof *index_used);
	for (int i = 0; i < n; i++) {
		int x = nodes[i].index;
		if (x < -1 || x >= n || (x >= 0 && index_used[x]++)) {
			free(index_used);
			return mtc_fail(err, errlen,
					x >= n || x < -1 ? "pod index %d is not in [0, %d)"
							 : "two nodes report pod index %d",
					x, n);
		}
	}
	h.node_of = xmalloc((size_t)n * sizeof(int));
	h.rank_of = rank_of;
	h.dist = xmalloc((size_t)n * sizeof(int));
	h.queue = xmalloc((size_t)n * sizeof(int));
	h.stack = xmalloc((size_t)n * sizeof(int));
	h.next = xmalloc((size_t)n * sizeof(size_t));
	order = xmalloc((size_t)n * sizeof(int));
	for (int i = 0; i < n; i++) {
		h.node_of[i] = rank_of[i] = -1;
		order[i] = i;
	}
	qsort_r(order, (size_t)n, sizeof *order, by_index, (void *)nodes);
	/* start from every node on its own index where it holds that rank's data */
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < nodes[i].n_holds; k++)
			if (nodes[i].holds[k] == nodes[i].index && h.node_of[nodes[i].index] < 0) {
				h.node_of[nodes[i].index] = i;
				rank_of[i] = nodes[i].index;
				break;
			}
	while (bfs(&h)) {
		memset(h.next, 0, (size_t)n * sizeof *h.next);
		for (int t = 0; t < n; t++)
			if (rank_of[order[t]] < 0 && h.dist[order[t]] == 0)
				dfs(&h, order[t]);
	}
	for (int i = 0; i < n; i++)
		matched += rank_of[i] >= 0;
	/* the rest: their own index when free, else the lowest free rank */
	for (int t = 0; t < n; t++) {
		int i = order[t];
		if (rank_of[i] < 0 && nodes[i].index >= 0 && h.node_of[nodes[i].index] < 0) {
			rank_of[i] = nodes[i].index;
			h.node_of[rank_of[i]] = i;
		}
	}
	for (int t = 0; t < n; t++) {
		int i = order[t];
		if (rank_of[i] >= 0)
			continue;
		while (h.node_of[free_rank] >= 0)
			free_rank++;
		rank_of[i] = free_rank;
		h.node_of[free_rank] = i;
	}
	free(index_used);
	free(h.node_of);
	free(h.dist);
	free(h.queue);
	free(h.stack);
	free(h.next);
	free(order);
	return matched;
}
