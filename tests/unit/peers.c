#include <stdio.h>
#include <stdlib.h>

#include "peers.h"
#include "tap.h"

static void peers_are(int nodes, int ppn, int dp, int rank, const char *want)
{
	struct mtc_peer_params p = {
		.rank = rank, .nodes = nodes, .peers_per_node = ppn, .data_parallelism = dp
	};
	int out[16], n = mtc_peers(&p, out, 16);
	char got[256] = "";
	size_t len = 0;

	if (n < 0)
		snprintf(got, sizeof got, "error");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(got + len, sizeof got - len, "%s%d", i ? "," : "", out[i]);
	is_str(got, want, "N=%d peers=%d D=%d rank %d -> [%s]", nodes, ppn, dp, rank, want);
}

/* The §5.3 formulas, written independently, for the sweep. */
static int expected(int nodes, int ppn, int dp, int rank, int *out)
{
	int n = 0, cand[8], nc = 0;
	if (dp > 1) {
		int part = nodes / dp;
		for (int a = 1; nc < ppn; a++) {
			cand[nc++] = ((rank - a * part) % nodes + nodes) % nodes;
			if (nc < ppn)
				cand[nc++] = (rank + a * part) % nodes;
		}
	} else {
		cand[nc++] = rank ^ 1;
		for (int i = 1; i < ppn; i++)
			cand[nc++] = (rank + i * (nodes / ppn)) % nodes;
	}
	for (int i = 0; i < nc; i++) {
		int dup = cand[i] == rank || cand[i] >= nodes;
		for (int j = 0; j < n; j++)
			dup |= out[j] == cand[i];
		if (!dup)
			out[n++] = cand[i];
	}
	return n;
}

static void sweep(void)
{
	int cases = 0, bad = 0;
	for (int nodes = 2; nodes <= 64; nodes++)
		for (int ppn = 1; ppn <= 4; ppn++)
			for (int dp = 0; dp <= nodes; dp++) {
				if (dp == 1 || (dp > 1 && nodes % dp))
					continue;
				for (int rank = 0; rank < nodes; rank++) {
					struct mtc_peer_params p = { rank, nodes, ppn, dp, NULL, 0 };
					int got[8], want[8], ng = mtc_peers(&p, got, 8);
					int nw = expected(nodes, ppn, dp, rank, want);
					cases++;
					if (ng != nw) {
						bad++;
						continue;
					}
					for (int i = 0; i < ng; i++)
						bad += got[i] != want[i] || got[i] == rank;
					if (dp > 1)
						for (int i = 0; i < ng; i++)
							bad += got[i] % (nodes / dp) !=
							       rank % (nodes / dp);
				}
			}
	ok(bad == 0, "sweep of N 2..64, peers 1..4, every D dividing N: %d cases agree (%d bad)", cases,
	   bad);
}

int main(void)
{
	peers_are(2, 1, 0, 0, "1");
	peers_are(2, 1, 0, 1, "0");
	peers_are(2, 2, 0, 0, "1");
	peers_are(3, 1, 0, 2, "");
	peers_are(3, 2, 0, 2, "0");
	peers_are(8, 1, 0, 5, "4");
	peers_are(8, 2, 0, 0, "1,4");
	peers_are(8, 2, 0, 5, "4,1");
	peers_are(8, 3, 0, 0, "1,2,4");
	peers_are(8, 3, 0, 7, "6,1,3");
	peers_are(8, 4, 0, 2, "3,4,6,0");
	peers_are(64, 4, 0, 63, "62,15,31,47");
	peers_are(64, 1, 0, 32, "33");
	peers_are(8, 1, 2, 1, "5");
	peers_are(8, 2, 2, 1, "5");
	peers_are(8, 2, 4, 1, "7,3");
	peers_are(8, 4, 4, 0, "6,2,4");
	peers_are(64, 3, 8, 10, "2,18,58");
	peers_are(64, 4, 64, 5, "4,6,3,7");
	peers_are(4, 2, 2, 3, "1");
	peers_are(6, 2, 4, 0, "error");
	peers_are(8, 0, 0, 0, "");

	{
		int given[] = { 2, 0, 2, 5, 3 }, out[8];
		struct mtc_peer_params p = { 0, 4, 0, 0, given, 5 };
		int n = mtc_peers(&p, out, 8);
		ok(n == 2 && out[0] == 2 && out[1] == 3,
		   "explicit peer-ranks: self, duplicates and out-of-range dropped, order kept");
	}
	{
		struct mtc_peer_params p = { 4, 4, 1, 0, NULL, 0 };
		int out[4];
		ok(mtc_peers(&p, out, 4) < 0, "rank outside [0, N) is an error");
	}
	sweep();
	char *u = mtc_peer_url("http://job-0-{rank}.job:7070", 12);
	is_str(u, "http://job-0-12.job:7070", "a URL template names the rank");
	free(u);
	u = mtc_peer_url("{rank}-{rank}", 3);
	is_str(u, "3-3", "every {rank} is replaced");
	free(u);
	u = mtc_peer_url("http://fixed:7070", 3);
	is_str(u, "http://fixed:7070", "a template without {rank} stays");
	free(u);
	return done();
}
