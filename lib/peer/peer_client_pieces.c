#include "peer_client_int.h"

static void *piece_main(void *arg)
{
	struct piece *p = arg;
	p->rc = pcli_attempt(p->pc, &p->c, p->deadline, p->err, sizeof p->err);
	return NULL;
}

/* k empty pieces, each to be given its call; n is k until a split says otherwise. */
void pcli_pieces_init(struct piece_set *ps, int k, const struct mtc_peer_client *pc, double deadline)
{
	ps->k = ps->n = k;
	ps->bins = xcalloc((size_t)k, sizeof *ps->bins);
	ps->counts = xcalloc((size_t)k, sizeof *ps->counts);
	ps->p = xcalloc((size_t)k, sizeof *ps->p);
	for (int i = 0; i < k; i++)
		ps->p[i] = (struct piece){ .pc = pc, .deadline = deadline };
}

void pcli_pieces_split(struct piece_set *ps, const struct mtc_manifest *m, int k, int ranges,
		       const struct mtc_peer_client *pc, double deadline)
{
	pcli_pieces_init(ps, k, pc, deadline);
	ps->n = mtc_manifest_split(m, k, ranges, ps->bins, ps->counts);
}

/* Runs the calls of the pieces at once; 0, or the first failure (a 422 first) with err. */
int pcli_pieces_run(struct piece_set *ps, char *err, size_t errlen)
{
	int n = ps->n, rc = 0;
	pthread_t *th = xcalloc((size_t)n + 1, sizeof *th);

	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, piece_main, &ps->p[i]))
			piece_main(&ps->p[i]), th[i] = 0;
	for (int i = 0; i < n; i++) {
		if (th[i])
			pthread_join(th[i], NULL);
		if (ps->p[i].rc && (!rc || ps->p[i].c.code == 422)) {
			rc = ps->p[i].rc;
			snprintf(err, errlen, "%s", ps->p[i].err);
		}
	}
	free(th);
	return rc;
}

void pcli_pieces_free(struct piece_set *ps)
{
	for (int i = 0; i < ps->k; i++) {
		free(ps->bins[i]);
		pcli_free_call(&ps->p[i].c);
	}
	free(ps->bins);
	free(ps->counts);
	free(ps->p);
}

/*
 * One try of a tree's GET as c->pieces pieces over as many connections,
 * extracted side by side into c->down_path: the daemon splits the
 * manifest into the same pieces (peer_manifest.h).
 */
static int get_pieces(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		      size_t errlen)
{
	struct piece_set ps;
	int rc;

	c->bytes = 0;
	c->code = 0;
	mtc_wire_list_free(&c->got_list);
	pcli_pieces_split(&ps, c->expected, c->pieces, 1, pc, deadline);
	if (mtc_remove_tree(c->down_path) < 0 || mkdir(c->down_path, 0755) < 0) {
		snprintf(err, errlen, "'%s': %s", c->down_path, strerror(errno));
		pcli_pieces_free(&ps);
		return MTC_FAILURE;
	}
	for (int i = 0; i < ps.n; i++)
		ps.p[i].c = (struct call){ .method = "GET",
					   .url = xasprintf("%s?piece=%d&pieces=%d&ranges=1", c->url, i,
							    ps.k),
					   .down_path = c->down_path,
					   .down_tree = 1,
					   .down_shared = 1,
					   .expected = c->expected,
					   .limits = c->limits };
	rc = pcli_pieces_run(&ps, err, errlen);
	for (int i = 0; i < ps.n; i++) {
		struct call *p = &ps.p[i].c;
		c->bytes += p->bytes;
		c->code = rc && p->code == 422 ? 422 : c->code;
		mtc_wire_list_take(&c->got_list, &p->got_list);
	}
	if (!rc)
		c->code = 200;
	pcli_pieces_free(&ps);
	return rc;
}

/*
 * How many byte ranges a file of size bytes crosses in, one connection
 * each: 1 when one stream is enough for it.
 */
int pcli_range_count(const struct mtc_peer_client *pc, long long size)
{
	if (pc->streams <= 1 || size < 2 * MTC_RANGE_MIN)
		return 1;
	return size / MTC_RANGE_MIN < pc->streams ? (int)(size / MTC_RANGE_MIN) : pc->streams;
}

/* A file of size bytes as k ranges into l: whole units (peer_wire.h) but the last. */
void pcli_split_ranges(struct mtc_wire_list *l, long long size, int k)
{
	long long per = (size + k - 1) / k;

	per = (per + MTC_WIRE_UNIT - 1) / MTC_WIRE_UNIT * MTC_WIRE_UNIT;
	for (long long off = 0; off < size; off += per) {
		struct mtc_wire_entry *w = mtc_wire_list_add(l, "", 0,
							     off + per < size ? per : size - off);
		w->off = off;
		w->file_size = size;
	}
}

/*
 * One try of a file's GET as c->file_ranges byte ranges over as many
 * connections, each written into its place in c->down_path and hashed
 * there; their units join into the file's digest (c->got).
 */
static int get_ranges(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		      size_t errlen)
{
	struct mtc_wire_list got = { 0 };
	struct piece_set ps;
	char why[512];
	int fd, rc;

	c->bytes = 0;
	c->code = 0;
	c->got[0] = '\0';
	if ((fd = open(c->down_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(err, errlen, "'%s': %s", c->down_path, strerror(errno));
		return MTC_FAILURE;
	}
	close(fd);
	pcli_split_ranges(&got, c->file_size, c->file_ranges);
	pcli_pieces_init(&ps, (int)got.n, pc, deadline);
	for (size_t i = 0; i < got.n; i++)
		ps.p[i].c = (struct call){ .method = "GET",
					   .url = xstrdup(c->url),
					   .down_path = c->down_path,
					   .range = &got.e[i],
					   .limits = c->limits };
	rc = pcli_pieces_run(&ps, err, errlen);
	for (int i = 0; i < ps.n; i++) {
		c->bytes += ps.p[i].c.bytes;
		c->code = rc && ps.p[i].c.code == 422 ? 422 : c->code;
	}
	pcli_pieces_free(&ps);
	if (!rc && mtc_wire_join(&got, why, sizeof why) < 0) {
		snprintf(err, errlen, "'%s': %s", c->url, why);
		c->code = 422;
		rc = RETRY;
	}
	if (!rc) {
		memcpy(c->got, got.e[0].digest, sizeof c->got);
		c->code = 200;
	}
	mtc_wire_list_free(&got);
	return rc;
}

/* check: after a 2xx, 0, RETRY or a result (verification of what arrived). */
int pcli_run(const struct mtc_peer_client *pc, struct call *c,
	     int (*check)(const struct mtc_peer_client *, struct call *, void *, char *, size_t),
	     void *arg, char *err, size_t errlen)
{
	double deadline = mtc_now() + (pc->deadline_s > 0 ? pc->deadline_s : 1e9);
	struct mtc_retry retry;
	int integrity = 0;

	mtc_retry_init(&retry, MTC_BACKOFF_PEER, deadline);
	for (;;) {
		int rc = c->pieces > 1	      ? get_pieces(pc, c, deadline, err, errlen)
			 : c->file_ranges > 1 ? get_ranges(pc, c, deadline, err, errlen)
					      : pcli_attempt(pc, c, deadline, err, errlen);
		if (rc == 0 && check)
			rc = check(pc, c, arg, err, errlen);
		if (rc != RETRY)
			return rc;
		integrity = c->code == 422;
		if (retry.attempt >= pc->retries)
			return integrity ? MTC_INTEGRITY : MTC_FAILURE;
		mtc_debug("retrying: %s", err);
		if (mtc_retry_wait(&retry) < 0)
			return MTC_TIMEOUT;
	}
}

size_t pcli_files_in(const struct mtc_manifest *m)
{
	size_t files = 0;
	for (size_t i = 0; i < m->n; i++)
		files += m->entries[i].type == MTC_ENTRY_FILE;
	return files;
}
