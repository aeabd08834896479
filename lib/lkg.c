/*
 * The last known good step (mtc(7) §7); the rule and both JSON
 * shapes are in lkg.h. Invariant: a plan names a step only when every node x
 * worker of it has a hash that the chosen source holds. Copies of a meta that
 * disagree are reported and never make a step invalid; a column whose
 * replicas disagree is skipped (nothing inferred in it), as the reference
 * does.
 */
#include "lkg.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "naming.h"
#include "peers.h"
#include "xalloc.h"

#define NO_HASH (-1)

struct meta {
	long long step;
	int node, worker, hash, reporter; /* reporter: the rank that holds it, -1 in a backup */
};

struct backup {
	const char *name;
	struct meta *metas;
	size_t n_metas;
	int *data;
	size_t n_data;
};

struct holding {
	int hash, rank;
};

struct lkg {
	int nodes, workers, dp, peers_per_node;
	const char *job, *restore_version;

	const void **key; /* a hash's text, or its MTC_LKG_HASH_BYTES with a listing */
	int bin;	  /* the keys are bytes (mtc_lkg_plan_listed) */
	const struct mtc_lkg_listing *listing;
	char text[4][MTC_HASH_MAX + 1]; /* hstr's last four */
	int next_text;
	int n_hash, cap_hash;
	int *table;
	size_t table_mask;

	json_t **rank_obj;
	struct meta *metas;
	size_t n_metas, cap_metas;
	struct holding *hold;
	size_t n_hold, cap_hold;
	int *hold_start, *hold_rank;

	struct backup *backups;
	size_t n_backups;

	int *cell;
	unsigned char *inferred, *skipped; /* skipped: by column, its replicas disagree */
	int conflicts;			   /* of the step judged last */
	unsigned char *avail_buf, *avail;  /* avail: NULL while judging the cluster */
	json_t *errors, *rejected;
	char *err;
	size_t errlen;
};

static int fail(struct lkg *L, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L->err, L->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t hash_key(const struct lkg *L, const void *k)
{
	return mtc_hash(k, L->bin ? MTC_LKG_HASH_BYTES : strlen(k), 0);
}

static int same_key(const struct lkg *L, const void *a, const void *b)
{
	return a == b || (L->bin ? !memcmp(a, b, MTC_LKG_HASH_BYTES) : !strcmp(a, b));
}

/* Hash h as text; the last four stay valid. */
static const char *hstr(struct lkg *L, int h)
{
	char *t;
	if (!L->bin)
		return L->key[h];
	t = L->text[L->next_text++ & 3];
	mtc_lkg_hash_text(L->key[h], t);
	return t;
}

int mtc_lkg_hash_pack(const char *text, unsigned char out[MTC_LKG_HASH_BYTES])
{
	static const char hex[] = "0123456789abcdef";
	if (!text || !mtc_is_hash(text))
		return -1;
	out[0] = text[0] == 'D' ? 'D' : 0;
	text += text[0] == 'D';
	for (int i = 0; i < 32; i++)
		out[1 + i] = (unsigned char)((strchr(hex, text[2 * i]) - hex) << 4 |
					     (strchr(hex, text[2 * i + 1]) - hex));
	return 0;
}

void mtc_lkg_hash_text(const unsigned char in[MTC_LKG_HASH_BYTES], char out[MTC_HASH_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;
	if (in[0] == 'D')
		*p++ = 'D';
	for (int i = 0; i < 32; i++) {
		*p++ = hex[in[1 + i] >> 4];
		*p++ = hex[in[1 + i] & 15];
	}
	*p = '\0';
}

static void table_init(struct lkg *L, size_t expected)
{
	size_t cap = 64;
	while (cap < expected + expected / 3) /* at most 3/4 full */
		cap <<= 1;
	L->table = xmalloc(cap * sizeof *L->table);
	memset(L->table, 0xff, cap * sizeof *L->table);
	L->table_mask = cap - 1;
	L->cap_hash = (int)(cap / 4 * 3);
	L->key = xcalloc((size_t)L->cap_hash, sizeof *L->key);
}

/*
 * The id of a hash (its text, or its bytes with a listing), interned on first
 * sight; -1 when it is not in the grammar.
 */
static int intern(struct lkg *L, const void *s)
{
	size_t i;
	if (!s)
		return -1;
	for (i = hash_key(L, s) & L->table_mask; L->table[i] >= 0; i = (i + 1) & L->table_mask)
		if (same_key(L, L->key[L->table[i]], s))
			return L->table[i];
	if (L->bin ? *(const unsigned char *)s != 0 && *(const unsigned char *)s != 'D'
		   : !mtc_is_hash(s))
		return -1;
	if (L->n_hash == L->cap_hash) {
		int *old = L->table;
		size_t old_cap = L->table_mask + 1;
		L->table_mask = old_cap * 2 - 1;
		L->table = xmalloc((L->table_mask + 1) * sizeof *L->table);
		memset(L->table, 0xff, (L->table_mask + 1) * sizeof *L->table);
		for (size_t k = 0; k < old_cap; k++) {
			size_t j;
			if (old[k] < 0)
				continue;
			for (j = hash_key(L, L->key[old[k]]) & L->table_mask; L->table[j] >= 0;
			     j = (j + 1) & L->table_mask)
				;
			L->table[j] = old[k];
		}
		free(old);
		L->cap_hash *= 2;
		L->key = xrealloc(L->key, (size_t)L->cap_hash * sizeof *L->key);
		for (i = hash_key(L, s) & L->table_mask; L->table[i] >= 0; i = (i + 1) & L->table_mask)
			;
	}
	L->key[L->n_hash] = s;
	L->table[i] = L->n_hash;
	return L->n_hash++;
}

static int get_int(json_t *obj, const char *key, long long *out, int required)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return -1;
		return 0;
	}
	if (!json_is_integer(v))
		return -1;
	*out = json_integer_value(v);
	return 1;
}

/* Appends the metas of a "meta-files" array; those of nodes or workers out of range are ignored. */
static int parse_metas(struct lkg *L, json_t *arr, const char *where, int reporter, struct meta **metas,
		       size_t *n, size_t *cap)
{
	size_t i;
	json_t *m;

	if (!json_is_array(arr))
		return fail(L, "%s: \"meta-files\" is not a list", where);
	json_array_foreach (arr, i, m) {
		json_t *s = json_array_get(m, 0), *nd = json_array_get(m, 1), *w = json_array_get(m, 2);
		int h;
		if (!json_is_array(m) || json_array_size(m) != 4 || !json_is_integer(s) ||
		    !json_is_integer(nd) || !json_is_integer(w) || json_integer_value(s) < 0)
			return fail(L, "%s: meta-files[%zu] is not [step, node, worker, hash]", where,
				    i);
		h = intern(L, json_string_value(json_array_get(m, 3)));
		if (h < 0)
			return fail(L, "%s: meta-files[%zu]: not a hash", where, i);
		if (json_integer_value(nd) < 0 || json_integer_value(nd) >= L->nodes ||
		    json_integer_value(w) < 0 || json_integer_value(w) >= L->workers)
			continue;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*metas = xrealloc(*metas, *cap * sizeof **metas);
		}
		(*metas)[(*n)++] = (struct meta){ .step = json_integer_value(s),
						  .node = (int)json_integer_value(nd),
						  .worker = (int)json_integer_value(w),
						  .hash = h,
						  .reporter = reporter };
	}
	return 0;
}

static int parse_data(struct lkg *L, json_t *arr, const char *where, int rank, struct backup *b)
{
	size_t i;
	json_t *d;

	if (!json_is_array(arr))
		return fail(L, "%s: \"data-files\" is not a list", where);
	if (b)
		b->data = xmalloc((json_array_size(arr) + 1) * sizeof *b->data);
	json_array_foreach (arr, i, d) {
		int h = intern(L, json_string_value(d));
		if (h < 0)
			return fail(L, "%s: data-files[%zu]: not a hash", where, i);
		if (b) {
			b->data[b->n_data++] = h;
			continue;
		}
		if (L->n_hold == L->cap_hold) {
			L->cap_hold = L->cap_hold ? L->cap_hold * 2 : 256;
			L->hold = xrealloc(L->hold, L->cap_hold * sizeof *L->hold);
		}
		L->hold[L->n_hold++] = (struct holding){ h, rank };
	}
	return 0;
}

/* parse_metas and parse_data for a listing's list. */
static int listed(struct lkg *L, const struct mtc_lkg_list *l, const char *where, int reporter,
		  struct meta **metas, size_t *n, size_t *cap, struct backup *b)
{
	if (*n + l->n_metas > *cap) {
		*cap = *n + l->n_metas;
		*metas = xrealloc(*metas, *cap * sizeof **metas);
	}
	for (size_t i = 0; i < l->n_metas; i++) {
		const struct mtc_lkg_meta *m = &l->metas[i];
		int h = intern(L, m->hash);
		if (h < 0 || m->step < 0)
			return fail(L, "%s: meta %zu is not [step, node, worker, hash]", where, i);
		if (m->node < 0 || m->node >= L->nodes || m->worker < 0 || m->worker >= L->workers)
			continue;
		(*metas)[(*n)++] = (struct meta){ .step = m->step,
						  .node = m->node,
						  .worker = m->worker,
						  .hash = h,
						  .reporter = reporter };
	}
	if (b)
		b->data = xmalloc((l->n_data + 1) * sizeof *b->data);
	else if (L->n_hold + l->n_data > L->cap_hold) {
		L->cap_hold = L->n_hold + l->n_data + L->cap_hold / 2;
		L->hold = xrealloc(L->hold, L->cap_hold * sizeof *L->hold);
	}
	for (size_t i = 0; i < l->n_data; i++) {
		int h = intern(L, l->data[i]);
		if (h < 0)
			return fail(L, "%s: data %zu: not a hash", where, i);
		if (b)
			b->data[b->n_data++] = h;
		else
			L->hold[L->n_hold++] = (struct holding){ h, reporter };
	}
	return 0;
}

static size_t count_entries(json_t *list)
{
	size_t i, total = 0;
	json_t *r;
	json_array_foreach (list, i, r) {
		total += json_array_size(json_object_get(r, "meta-files"));
		total += json_array_size(json_object_get(r, "data-files"));
	}
	return total;
}

static int parse_ranks(struct lkg *L, json_t *ranks)
{
	size_t i;
	json_t *r;

	if (!json_is_array(ranks))
		return fail(L, "\"ranks\" is not a list");
	json_array_foreach (ranks, i, r) {
		long long rank;
		char where[64];
		json_t *addr = json_object_get(r, "node-address");
		if (!json_is_object(r) || get_int(r, "node-rank", &rank, 1) < 0)
			return fail(L, "ranks[%zu]: no integer \"node-rank\"", i);
		if (rank < 0 || rank >= L->nodes)
			return fail(L, "ranks[%zu]: node-rank %lld is out of range (nodes: %d)", i, rank,
				    L->nodes);
		if (L->rank_obj[rank])
			return fail(L, "ranks[%zu]: node-rank %lld is reported twice", i, rank);
		if (addr && !json_is_null(addr) && !json_is_string(addr))
			return fail(L, "rank %lld: \"node-address\" is not a string", rank);
		L->rank_obj[rank] = r;
		snprintf(where, sizeof where, "rank %lld", rank);
		if (L->listing) {
			if (listed(L, &L->listing->ranks[rank], where, (int)rank, &L->metas, &L->n_metas,
				   &L->cap_metas, NULL) < 0)
				return -1;
			continue;
		}
		if (parse_metas(L, json_object_get(r, "meta-files"), where, (int)rank, &L->metas,
				&L->n_metas, &L->cap_metas) < 0 ||
		    parse_data(L, json_object_get(r, "data-files"), where, (int)rank, NULL) < 0)
			return -1;
	}
	return 0;
}

static int cmp_backup(const void *a, const void *b)
{
	return strcmp(((const struct backup *)b)->name, ((const struct backup *)a)->name);
}

static int parse_backups(struct lkg *L, json_t *list)
{
	size_t i;
	json_t *b;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return fail(L, "\"backups\" is not a list");
	L->backups = xcalloc(json_array_size(list) + 1, sizeof *L->backups);
	json_array_foreach (list, i, b) {
		struct backup *bk = &L->backups[L->n_backups];
		const char *name = json_string_value(json_object_get(b, "name"));
		size_t cap = 0;
		time_t when;
		char where[64];
		if (!name)
			return fail(L, "backups[%zu]: no \"name\"", i);
		if (mtc_parse_backup_name(name, &when) < 0) {
			json_array_append_new(L->errors,
					      json_sprintf("backup '%s': not a backup name, ignored",
							   name));
			continue;
		}
		for (size_t k = 0; k < L->n_backups; k++)
			if (!strcmp(L->backups[k].name, name))
				return fail(L, "backup '%s' is listed twice", name);
		bk->name = name;
		L->n_backups++;
		snprintf(where, sizeof where, "backup '%s'", name);
		if (L->listing) {
			if (listed(L, &L->listing->backups[i], where, -1, &bk->metas, &bk->n_metas, &cap,
				   bk) < 0)
				return -1;
			continue;
		}
		if (parse_metas(L, json_object_get(b, "meta-files"), where, -1, &bk->metas, &bk->n_metas,
				&cap) < 0 ||
		    parse_data(L, json_object_get(b, "data-files"), where, -1, bk) < 0)
			return -1;
	}
	if (L->n_backups)
		qsort(L->backups, L->n_backups, sizeof *L->backups, cmp_backup);
	return 0;
}

static int cmp_holding(const void *a, const void *b)
{
	const struct holding *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* hold_rank[hold_start[h] .. hold_start[h+1]) are the ranks holding h, ascending. */
static void index_holdings(struct lkg *L)
{
	size_t k = 0;
	if (L->n_hold)
		qsort(L->hold, L->n_hold, sizeof *L->hold, cmp_holding);
	L->hold_start = xcalloc((size_t)L->n_hash + 1, sizeof *L->hold_start);
	L->hold_rank = xmalloc((L->n_hold + 1) * sizeof *L->hold_rank);
	for (size_t i = 0; i < L->n_hold; i++) {
		if (i && L->hold[i].hash == L->hold[i - 1].hash &&
		    L->hold[i].rank == L->hold[i - 1].rank)
			continue;
		L->hold_rank[k++] = L->hold[i].rank;
		L->hold_start[L->hold[i].hash + 1]++;
	}
	for (int h = 0; h < L->n_hash; h++)
		L->hold_start[h + 1] += L->hold_start[h];
}

static int n_holders(const struct lkg *L, int h) { return L->hold_start[h + 1] - L->hold_start[h]; }

static int rank_holds(const struct lkg *L, int rank, int h)
{
	int lo = L->hold_start[h], hi = L->hold_start[h + 1];
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (L->hold_rank[mid] == rank)
			return 1;
		if (L->hold_rank[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Newest step first; within a node x worker the node's own copy first. */
static int cmp_meta(const void *a, const void *b)
{
	const struct meta *x = a, *y = b;
	int xo = x->reporter != x->node, yo = y->reporter != y->node;
	if (x->step != y->step)
		return x->step > y->step ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->worker != y->worker)
		return x->worker < y->worker ? -1 : 1;
	if (xo != yo)
		return xo - yo;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->reporter > y->reporter) - (x->reporter < y->reporter);
}

static const char *holder_name(int reporter, char *buf, size_t len)
{
	if (reporter < 0)
		return "the backup";
	snprintf(buf, len, "rank %d", reporter);
	return buf;
}

static int available(const struct lkg *L, int h) { return L->avail ? L->avail[h] : n_holders(L, h) > 0; }

static void conflict(struct lkg *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void conflict(struct lkg *L, const char *fmt, ...)
{
	va_list ap;
	char line[768];
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	json_array_append_new(L->errors, json_string(line));
	L->conflicts++;
}

/*
 * A node x worker's hash from its group of metas m[i..j) (own copy first):
 * the node's own meta stands; without one, the first copy whose data is
 * available (copies that disagree are reported, never fatal).
 */
static int cell_of_copies(struct lkg *L, const struct meta *m, size_t i, size_t j, const char *where)
{
	size_t pick = i;
	char a[32], b[32];

	if (m[i].reporter == m[i].node || m[i].hash == m[j - 1].hash)
		return m[i].hash;
	for (size_t k = i; k < j; k++)
		if (available(L, m[k].hash)) {
			pick = k;
			break;
		}
	conflict(L, "%s: node %d worker %d: its copies disagree: %s on %s, %s on %s; using %s", where,
		 m[i].node, m[i].worker, hstr(L, m[i].hash), holder_name(m[i].reporter, a, sizeof a),
		 hstr(L, m[j - 1].hash), holder_name(m[j - 1].reporter, b, sizeof b),
		 hstr(L, m[pick].hash));
	return m[pick].hash;
}

/*
 * With data parallelism, a column (the reference's rule): when two of its
 * replicas' metas of one worker differ, the column is skipped with an error:
 * nothing of it is inferred, so a node of it with no meta
 * makes the step invalid. Otherwise a node x worker with no meta takes the
 * column's hash of that worker. A node's data held nowhere makes the step
 * invalid: a column-mate's of another hash would be a disagreeing column.
 */
static void infer_column(struct lkg *L, int col, const char *where)
{
	int P = L->nodes / L->dp, W = L->workers;

	for (int w = 0; w < W; w++) {
		int first = NO_HASH, fnode = -1;
		for (int r = 0; r < L->dp; r++) {
			int node = r * P + col, x = L->cell[node * W + w];
			if (x == NO_HASH)
				continue;
			if (first == NO_HASH) {
				first = x;
				fnode = node;
			} else if (x != first) {
				conflict(L,
					 "%s: column %d worker %d: replicas disagree: node %d has %s, "
					 "node %d has %s; the column is skipped, none of its metas is "
					 "inferred",
					 where, col, w, fnode, hstr(L, first), node, hstr(L, x));
				L->skipped[col] = 1;
				return;
			}
		}
	}
	for (int w = 0; w < W; w++) {
		int fill = NO_HASH;
		for (int r = 0; r < L->dp && fill == NO_HASH; r++)
			fill = L->cell[(r * P + col) * W + w];
		for (int r = 0; fill != NO_HASH && r < L->dp; r++) {
			int c = (r * P + col) * W + w;
			if (L->cell[c] == NO_HASH) {
				L->cell[c] = fill;
				L->inferred[c] = 1;
			}
		}
	}
}

/* Fills the cells of one step (copies merged, columns inferred); 1 when it is valid. */
static int judge_step(struct lkg *L, const struct meta *m, size_t n, const char *where, char *why,
		      size_t len)
{
	size_t cells = (size_t)L->nodes * (size_t)L->workers;
	int W = L->workers;

	L->conflicts = 0;
	for (size_t c = 0; c < cells; c++)
		L->cell[c] = NO_HASH;
	memset(L->inferred, 0, cells);
	memset(L->skipped, 0, (size_t)L->nodes);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && m[j].node == m[i].node && m[j].worker == m[i].worker; j++)
			;
		L->cell[m[i].node * W + m[i].worker] = cell_of_copies(L, m, i, j, where);
	}
	if (L->dp > 1)
		for (int col = 0; col < L->nodes / L->dp; col++)
			infer_column(L, col, where);
	for (int node = 0; node < L->nodes; node++)
		for (int w = 0; w < W; w++) {
			int x = L->cell[node * W + w];
			if (x == NO_HASH) {
				snprintf(why, len, "node %d worker %d: no meta%s", node, w,
					 L->dp > 1 && L->skipped[node % (L->nodes / L->dp)]
						 ? " (its column's replicas disagree)"
						 : "");
				return 0;
			}
			if (!available(L, x)) {
				snprintf(why, len, "node %d worker %d: %s.data is %s", node, w,
					 hstr(L, x), L->avail ? "not in the backup" : "held by no rank");
				return 0;
			}
		}
	return 1;
}

/* The newest valid step among metas (sorted here), -1 when none; rejected steps are noted. */
static long long newest_valid(struct lkg *L, struct meta *m, size_t n, const char *backup, char *why,
			      size_t len)
{
	if (n)
		qsort(m, n, sizeof *m, cmp_meta);
	*why = '\0';
	for (size_t i = 0, j; i < n; i = j) {
		char where[128];
		for (j = i + 1; j < n && m[j].step == m[i].step; j++)
			;
		if (backup)
			snprintf(where, sizeof where, "backup '%s' step %lld", backup, m[i].step);
		else
			snprintf(where, sizeof where, "step %lld", m[i].step);
		if (judge_step(L, m + i, j - i, where, why, len))
			return m[i].step;
		json_t *r = json_pack("{s:s, s:I, s:s}", "source", backup ? "backup" : "cluster", "step",
				      (json_int_t)m[i].step, "reason", why);
		if (backup)
			json_object_set_new(r, "backup", json_string(backup));
		json_array_append_new(L->rejected, r);
	}
	if (!*why)
		snprintf(why, len, "no meta at all");
	return -1;
}

static long long judge_backup(struct lkg *L, struct backup *b, char *why, size_t len)
{
	long long step;
	L->avail = L->avail_buf;
	for (size_t i = 0; i < b->n_data; i++)
		L->avail[b->data[i]] = 1;
	step = newest_valid(L, b->metas, b->n_metas, b->name, why, len);
	if (step < 0) {
		for (size_t i = 0; i < b->n_data; i++)
			L->avail[b->data[i]] = 0;
		L->avail = NULL;
	}
	return step;
}

static int cyclic_after(int x, int rank, int n) { return ((x - rank - 1) % n + n) % n; }

/*
 * Up to MTC_LKG_MAX_SOURCES holders of h for rank, the least loaded first
 * (ties: the first after rank on the ring); the first one is charged.
 */
static json_t *sources(const struct lkg *L, int rank, int h, int *load, int *picked)
{
	json_t *from = json_array();
	int lo = L->hold_start[h], hi = L->hold_start[h + 1], n = 0;

	while (n < MTC_LKG_MAX_SOURCES && n < hi - lo) {
		int best = -1;
		for (int k = lo; k < hi; k++) {
			int x = L->hold_rank[k], taken = 0;
			for (int q = 0; q < n && !taken; q++)
				taken = picked[q] == x;
			if (taken)
				continue;
			if (best < 0 || load[x] < load[best] ||
			    (load[x] == load[best] &&
			     cyclic_after(x, rank, L->nodes) < cyclic_after(best, rank, L->nodes)))
				best = x;
		}
		picked[n++] = best;
		json_array_append_new(from, json_integer(best));
	}
	if (n)
		load[picked[0]]++;
	return from;
}

static json_t *replication_peers(const struct lkg *L, int rank)
{
	json_t *given = L->rank_obj[rank] ? json_object_get(L->rank_obj[rank], "peer-ranks") : NULL;
	struct mtc_peer_params p = { .rank = rank,
				     .nodes = L->nodes,
				     .peers_per_node = L->peers_per_node,
				     .data_parallelism = L->dp };
	int given_ranks[64], out[64], n;
	json_t *arr;

	if (json_is_array(given)) {
		size_t i;
		json_t *v;
		json_array_foreach (given, i, v) {
			if (i < 64 && json_is_integer(v))
				given_ranks[p.n_peer_ranks++] = (int)json_integer_value(v);
		}
		p.peer_ranks = given_ranks;
	} else if (L->peers_per_node <= 0)
		return NULL;
	n = mtc_peers(&p, out, 64);
	if (n < 0)
		return NULL;
	arr = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(arr, json_integer(out[i]));
	return arr;
}

/* Up to MTC_LKG_MAX_SOURCES ranks holding h, the first after rank on the ring first. */
static json_t *holders(const struct lkg *L, int rank, int h)
{
	json_t *from = json_array();
	for (int d = 1; d <= L->nodes && json_array_size(from) < MTC_LKG_MAX_SOURCES; d++) {
		int x = (rank + d) % L->nodes;
		if (rank_holds(L, x, h))
			json_array_append_new(from, json_integer(x));
	}
	return from;
}

/*
 * With data parallelism, the other data of rank's column for worker w that
 * the source holds, in row order: what a restore falls back to when every
 * copy of its own fails verification.
 */
static json_t *alternatives(struct lkg *L, int rank, int w)
{
	int P = L->nodes / L->dp, W = L->workers, own = L->cell[rank * W + w];
	json_t *alts = json_array();

	for (int r = 0; r < L->dp; r++) {
		int x = L->cell[(r * P + rank % P) * W + w], dup = x == own;
		for (int q = 0; q < r && !dup; q++)
			dup = L->cell[(q * P + rank % P) * W + w] == x;
		if (dup || x < 0 || !available(L, x))
			continue;
		json_array_append_new(alts,
				      json_pack("{s:s, s:o, s:b}", "hash", hstr(L, x), "from",
						holders(L, rank, x), "backup", L->avail && L->avail[x]));
	}
	return alts;
}

static json_t *rank_plan(struct lkg *L, int rank, long long step, int *load, int *picked)
{
	json_t *obj = L->rank_obj[rank];
	json_t *addr = obj ? json_object_get(obj, "node-address") : NULL;
	json_t *metas = json_array(), *fetch = json_array(), *peers = replication_peers(L, rank);
	json_t *r = json_pack("{s:i, s:O, s:b}", "node-rank", rank, "node-address",
			      json_is_string(addr) ? addr : json_null(), "reported", obj != NULL);
	int W = L->workers;

	if (peers)
		json_object_set_new(r, "replication-peers", peers);
	for (int w = 0; step >= 0 && w < W; w++) {
		int c = rank * W + w, h = L->cell[c], dup = 0;
		json_t *meta = json_pack("{s:i, s:s, s:b}", "worker", w, "hash", hstr(L, h), "inferred",
					 L->inferred[c]);
		json_array_append_new(metas, meta);
		for (int v = 0; v < w && !dup; v++)
			dup = L->cell[rank * W + v] == h;
		if (dup || rank_holds(L, rank, h))
			continue;
		json_t *f = json_pack("{s:s, s:o, s:i, s:b}", "hash", hstr(L, h), "from",
				      sources(L, rank, h, load, picked), "holders", n_holders(L, h),
				      "backup", L->avail && L->avail[h]);
		if (L->dp > 1)
			json_object_set_new(f, "alternatives", alternatives(L, rank, w));
		json_array_append_new(fetch, f);
	}
	json_object_set_new(r, "metas", metas);
	json_object_set_new(r, "fetch", fetch);
	return r;
}

static json_t *build_plan(struct lkg *L, long long step, const char *source, const char *backup,
			  const char *reason)
{
	json_t *plan = json_pack("{s:s?, s:i, s:i, s:o, s:s}", "job-name", L->job, "nodes", L->nodes,
				 "workers-per-node", L->workers, "step",
				 step >= 0 ? json_integer(step) : json_null(), "source", source);
	json_t *ranks = json_array();
	int *load = xcalloc((size_t)L->nodes, sizeof *load);
	int picked[MTC_LKG_MAX_SOURCES];

	if (backup)
		json_object_set_new(plan, "backup", json_string(backup));
	if (L->restore_version)
		json_object_set_new(plan, "restore-version", json_string(L->restore_version));
	if (reason)
		json_object_set_new(plan, "reason", json_string(reason));
	json_object_set_new(plan, "conflicts", json_integer(step >= 0 ? L->conflicts : 0));
	json_object_set(plan, "errors", L->errors);
	json_object_set(plan, "rejected", L->rejected);
	for (int r = 0; r < L->nodes; r++)
		json_array_append_new(ranks, rank_plan(L, r, step, load, picked));
	json_object_set_new(plan, "ranks", ranks);
	free(load);
	return plan;
}

static int parse_header(struct lkg *L, json_t *inv)
{
	long long nodes, workers = 1, dp = 0, ppn = 0;
	json_t *job = json_object_get(inv, "job-name"), *rv = json_object_get(inv, "restore-version");

	if (!json_is_object(inv))
		return fail(L, "the inventory is not a JSON object");
	if (get_int(inv, "nodes", &nodes, 1) < 0 || nodes <= 0 || nodes > 1 << 20)
		return fail(L, "\"nodes\" is not a positive integer");
	if (get_int(inv, "workers-per-node", &workers, 0) < 0 || workers <= 0 || workers > 4096)
		return fail(L, "\"workers-per-node\" is not a positive integer");
	if (nodes * workers > 1 << 24)
		return fail(L, "%lld nodes x %lld workers is more than this planner takes", nodes,
			    workers);
	if (get_int(inv, "assume-data-parallelism", &dp, 0) < 0 || dp < 0)
		return fail(L, "\"assume-data-parallelism\" is not a positive integer");
	if (get_int(inv, "peers-per-node", &ppn, 0) < 0 || ppn < 0)
		return fail(L, "\"peers-per-node\" is not a positive integer");
	if (job && !json_is_null(job) && !json_is_string(job))
		return fail(L, "\"job-name\" is not a string");
	if (rv && !json_is_null(rv) && !json_is_string(rv))
		return fail(L, "\"restore-version\" is not a string");
	L->nodes = (int)nodes;
	L->workers = (int)workers;
	L->peers_per_node = (int)ppn;
	L->job = json_string_value(job);
	L->restore_version = json_string_value(rv);
	if (dp > 1 && nodes % dp == 0)
		L->dp = (int)dp;
	else if (dp > 1)
		json_array_append_new(L->errors,
				      json_sprintf("assume-data-parallelism %lld does not divide "
						   "%lld nodes: no meta inference",
						   dp, nodes));
	return 0;
}

static json_t *choose(struct lkg *L)
{
	char why[512], reason[768];
	long long step;

	if (L->restore_version) {
		struct backup *b = NULL;
		for (size_t i = 0; i < L->n_backups && !b; i++)
			if (!strcmp(L->backups[i].name, L->restore_version))
				b = &L->backups[i];
		if (!b) {
			snprintf(reason, sizeof reason,
				 "restore.version names backup '%s', which does not exist",
				 L->restore_version);
			return build_plan(L, -1, "none", NULL, reason);
		}
		if ((step = judge_backup(L, b, why, sizeof why)) >= 0)
			return build_plan(L, step, "backup", b->name, NULL);
		snprintf(reason, sizeof reason,
			 "restore.version names backup '%s', which is not valid: %s", L->restore_version,
			 why);
		return build_plan(L, -1, "none", NULL, reason);
	}
	if ((step = newest_valid(L, L->metas, L->n_metas, NULL, why, sizeof why)) >= 0)
		return build_plan(L, step, "cluster", NULL, NULL);
	for (size_t i = 0; i < L->n_backups; i++)
		if ((step = judge_backup(L, &L->backups[i], why, sizeof why)) >= 0)
			return build_plan(L, step, "backup", L->backups[i].name, NULL);
	snprintf(reason, sizeof reason,
		 L->n_metas || L->n_backups
			 ? "no valid step: none of the cluster's steps nor any of %zu backups is complete"
			 : "no checkpoint: the cluster holds no meta and there are %zu backups",
		 L->n_backups);
	return build_plan(L, -1, "none", NULL, reason);
}

/* The entries of a listing's n lists. */
static size_t count_listed(const struct mtc_lkg_list *l, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += l[i].n_metas + l[i].n_data;
	return total;
}

static json_t *plan_of(json_t *inventory, const struct mtc_lkg_listing *listing, char *err,
		       size_t errlen)
{
	struct lkg L = { .err = err, .errlen = errlen, .listing = listing, .bin = listing != NULL };
	json_t *plan = NULL;
	size_t cells;

	L.errors = json_array();
	L.rejected = json_array();
	if (parse_header(&L, inventory) < 0)
		goto out;
	if (listing && (json_array_size(json_object_get(inventory, "backups")) != listing->n_backups ||
			!listing->ranks)) {
		fail(&L, "the listing does not match the inventory");
		goto out;
	}
	table_init(&L, listing ? count_listed(listing->ranks, (size_t)L.nodes) +
					 count_listed(listing->backups, listing->n_backups)
			       : count_entries(json_object_get(inventory, "ranks")) +
					 count_entries(json_object_get(inventory, "backups")));
	L.rank_obj = xcalloc((size_t)L.nodes, sizeof *L.rank_obj);
	if (parse_ranks(&L, json_object_get(inventory, "ranks")) < 0 ||
	    parse_backups(&L, json_object_get(inventory, "backups")) < 0)
		goto out;
	index_holdings(&L);
	cells = (size_t)L.nodes * (size_t)L.workers;
	L.cell = xmalloc(cells * sizeof *L.cell);
	L.inferred = xcalloc(cells, 1);
	L.skipped = xcalloc((size_t)L.nodes, 1);
	L.avail_buf = xcalloc((size_t)L.n_hash + 1, 1);
	plan = choose(&L);
out:
	json_decref(L.errors);
	json_decref(L.rejected);
	free(L.table);
	free(L.key);
	free(L.rank_obj);
	free(L.metas);
	free(L.hold);
	free(L.hold_start);
	free(L.hold_rank);
	for (size_t i = 0; i < L.n_backups; i++) {
		free(L.backups[i].metas);
		free(L.backups[i].data);
	}
	free(L.backups);
	free(L.cell);
	free(L.inferred);
	free(L.skipped);
	free(L.avail_buf);
	return plan;
}

json_t *mtc_lkg_plan(json_t *inventory, char *err, size_t errlen)
{
	return plan_of(inventory, NULL, err, errlen);
}

json_t *mtc_lkg_plan_listed(json_t *inventory, const struct mtc_lkg_listing *listing, char *err,
			    size_t errlen)
{
	return plan_of(inventory, listing, err, errlen);
}

static json_t *address_of(json_t *ranks, json_int_t rank)
{
	json_t *r = json_array_get(ranks, (size_t)rank);
	return json_object_get(r, "node-address");
}

static json_t *addresses(json_t *ranks, json_t *list)
{
	json_t *out = json_array(), *v;
	size_t i;
	json_array_foreach (list, i, v) {
		json_t *a = address_of(ranks, json_integer_value(v));
		if (json_is_string(a))
			json_array_append(out, a);
	}
	return out;
}

json_t *mtc_lkg_rank_view(json_t *plan, int rank)
{
	json_t *ranks = json_object_get(plan, "ranks"), *r, *view, *metas, *fetch, *m;
	size_t i;

	if (rank < 0 || !(r = json_array_get(ranks, (size_t)rank)))
		return NULL;
	view = json_pack("{s:O, s:O, s:O}", "step", json_object_get(plan, "step"), "source",
			 json_object_get(plan, "source"), "errors", json_object_get(plan, "errors"));
	if (json_object_get(plan, "backup"))
		json_object_set(view, "backup", json_object_get(plan, "backup"));
	if (json_object_get(plan, "reason"))
		json_object_set(view, "reason", json_object_get(plan, "reason"));
	json_object_set_new(view, "replication-peers",
			    addresses(ranks, json_object_get(r, "replication-peers")));
	metas = json_array();
	json_array_foreach (json_object_get(r, "metas"), i, m) {
		json_t *v = json_pack("{s:O, s:O}", "worker", json_object_get(m, "worker"), "hash",
				      json_object_get(m, "hash"));
		json_array_append_new(metas, v);
	}
	json_object_set_new(view, "metas", metas);
	fetch = json_array();
	json_array_foreach (json_object_get(r, "fetch"), i, m) {
		json_t *f = json_pack("{s:O, s:o, s:O}", "hash", json_object_get(m, "hash"), "peers",
				      addresses(ranks, json_object_get(m, "from")), "backup",
				      json_object_get(m, "backup"));
		json_t *alts = json_object_get(m, "alternatives"), *a, *va;
		size_t k;
		if (alts) {
			va = json_array();
			json_array_foreach (alts, k, a) {
				json_array_append_new(va,
						      json_pack("{s:O, s:o, s:O}", "hash",
								json_object_get(a, "hash"), "peers",
								addresses(ranks,
									  json_object_get(a, "from")),
								"backup", json_object_get(a, "backup")));
			}
			json_object_set_new(f, "alternatives", va);
		}
		json_array_append_new(fetch, f);
	}
	json_object_set_new(view, "fetch", fetch);
	return view;
}
