/*
 * Table test of the LKG plan: every .json file in tests/lkg is one case,
 *   {"about": "...", "inventory": {...}, "expect": {...} | "invalid": "text",
 *    "views": [{"rank": R, "expect": {...}}]?}
 * A string "#word" anywhere stands for a hash (the word's bytes in hex, padded
 * with 0 to 64 digits; "D#word" a directory hash). "expect" is matched as a
 * subset: objects by their given keys, arrays element by element with the same
 * length ({} matches anything), strings starting with '~' as substrings.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lkg.h"
#include "tap.h"

#define CASES "tests/lkg"

static json_t *hash_of(const char *s)
{
	char out[70] = "";
	size_t n = 0, len = 64;
	if (s[0] == 'D') {
		out[n++] = 'D';
		len++;
		s++;
	}
	s++;
	for (; *s && n + 2 <= len; s++)
		n += (size_t)sprintf(out + n, "%02x", (unsigned char)*s);
	while (n < len)
		out[n++] = '0';
	out[n] = '\0';
	return json_string(out);
}

static int is_shorthand(const char *s) { return s && (s[0] == '#' || (s[0] == 'D' && s[1] == '#')); }

static void expand(json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach (v, k, x) {
			if (json_is_string(x) && is_shorthand(json_string_value(x)))
				json_object_set_new(v, k, hash_of(json_string_value(x)));
			else
				expand(x);
		}
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, x) {
			if (json_is_string(x) && is_shorthand(json_string_value(x)))
				json_array_set_new(v, i, hash_of(json_string_value(x)));
			else
				expand(x);
		}
	}
}

/* 1 when got matches want; otherwise 0 with the path of the first difference in why. */
static int match(json_t *want, json_t *got, const char *path, char *why, size_t len)
{
	char sub[512];
	const char *k;
	json_t *x;
	size_t i;

	if (json_is_object(want)) {
		if (!json_is_object(got))
			return snprintf(why, len, "%s: not an object", path), 0;
		json_object_foreach (want, k, x) {
			snprintf(sub, sizeof sub, "%s.%s", path, k);
			if (!json_object_get(got, k) && !json_is_null(x))
				return snprintf(why, len, "%s: missing", sub), 0;
			if (!match(x, json_object_get(got, k), sub, why, len))
				return 0;
		}
		return 1;
	}
	if (json_is_array(want)) {
		if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) {
			char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
			snprintf(why, len, "%s: want %zu elements, got %s", path, json_array_size(want),
				 g ? g : "nothing");
			free(g);
			return 0;
		}
		json_array_foreach (want, i, x) {
			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			if (!match(x, json_array_get(got, i), sub, why, len))
				return 0;
		}
		return 1;
	}
	if (json_is_string(want) && json_string_value(want)[0] == '~') {
		if (json_is_string(got) && strstr(json_string_value(got), json_string_value(want) + 1))
			return 1;
	} else if (json_is_null(want) ? !got || json_is_null(got) : json_equal(want, got))
		return 1;
	{
		char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		snprintf(why, len, "%s: want %s, got %s", path, w, g ? g : "nothing");
		free(w);
		free(g);
	}
	return 0;
}

/* holder's lists packed into l and removed from it; -1 when they are not lists of the right form. */
static int pack(json_t *holder, struct mtc_lkg_list *l)
{
	json_t *metas = json_object_get(holder, "meta-files"),
	       *data = json_object_get(holder, "data-files"), *m;
	size_t i;

	if (!json_is_array(metas) || !json_is_array(data))
		return -1;
	l->metas = calloc(json_array_size(metas) + 1, sizeof *l->metas);
	l->data = calloc(json_array_size(data) + 1, sizeof *l->data);
	json_array_foreach (metas, i, m) {
		struct mtc_lkg_meta *p = &l->metas[l->n_metas++];
		if (!json_is_array(m) || json_array_size(m) != 4 ||
		    !json_is_integer(json_array_get(m, 0)) || !json_is_integer(json_array_get(m, 1)) ||
		    !json_is_integer(json_array_get(m, 2)) ||
		    json_integer_value(json_array_get(m, 0)) < 0 ||
		    mtc_lkg_hash_pack(json_string_value(json_array_get(m, 3)), p->hash) < 0)
			return -1;
		p->step = json_integer_value(json_array_get(m, 0));
		p->node = (int)json_integer_value(json_array_get(m, 1));
		p->worker = (int)json_integer_value(json_array_get(m, 2));
	}
	json_array_foreach (data, i, m)
		if (mtc_lkg_hash_pack(json_string_value(m), l->data[l->n_data++]) < 0)
			return -1;
	json_object_del(holder, "meta-files");
	json_object_del(holder, "data-files");
	return 0;
}

/*
 * The plan of inv with its lists packed, as the coordinator plans
 * (mtc_lkg_plan_listed); *skip when its lists cannot be packed.
 */
static json_t *plan_listed(json_t *inv, char *err, size_t len, int *skip)
{
	json_t *copy = json_deep_copy(inv), *r;
	json_int_t nodes = json_integer_value(json_object_get(copy, "nodes"));
	size_t i, nb = json_array_size(json_object_get(copy, "backups"));
	struct mtc_lkg_list *ranks, *backups;
	struct mtc_lkg_listing l;
	json_t *plan = NULL;

	*skip = nodes <= 0 || nodes > 4096;
	if (*skip) {
		json_decref(copy);
		return NULL;
	}
	ranks = calloc((size_t)nodes, sizeof *ranks);
	backups = calloc(nb + 1, sizeof *backups);
	json_array_foreach (json_object_get(copy, "ranks"), i, r) {
		json_int_t rank = json_integer_value(json_object_get(r, "node-rank"));
		if (rank < 0 || rank >= nodes || ranks[rank].metas || pack(r, &ranks[rank]) < 0)
			*skip = 1;
	}
	json_array_foreach (json_object_get(copy, "backups"), i, r)
		if (pack(r, &backups[i]) < 0)
			*skip = 1;
	l = (struct mtc_lkg_listing){ .ranks = ranks, .backups = backups, .n_backups = nb };
	if (!*skip)
		plan = mtc_lkg_plan_listed(copy, &l, err, len);
	for (json_int_t k = 0; k < nodes; k++) {
		free(ranks[k].metas);
		free(ranks[k].data);
	}
	for (i = 0; i < nb; i++) {
		free(backups[i].metas);
		free(backups[i].data);
	}
	free(ranks);
	free(backups);
	json_decref(copy);
	return plan;
}

static void run_case(const char *file)
{
	char path[512], err[512] = "", why[1024] = "";
	json_error_t jerr;
	json_t *c, *plan, *view;
	const char *invalid;
	size_t i;

	snprintf(path, sizeof path, "%s/%s", CASES, file);
	if (!(c = json_load_file(path, 0, &jerr))) {
		ok(0, "%s: %s (line %d)", file, jerr.text, jerr.line);
		return;
	}
	expand(c);
	plan = mtc_lkg_plan(json_object_get(c, "inventory"), err, sizeof err);
	invalid = json_string_value(json_object_get(c, "invalid"));
	if (invalid) {
		ok(!plan && strstr(err, invalid), "%s: rejected (%s)", file, err);
	} else {
		int good = plan && match(json_object_get(c, "expect"), plan, "plan", why, sizeof why);
		ok(good, "%s: %s", file, json_string_value(json_object_get(c, "about")));
		if (!plan)
			printf("#   no plan: %s\n", err);
		else if (!good)
			printf("#   %s\n", why);
	}
	if (plan) {
		int skip;
		json_t *listed = plan_listed(json_object_get(c, "inventory"), err, sizeof err, &skip);
		if (!skip)
			ok(listed && json_equal(plan, listed), "%s: the same plan from packed lists",
			   file);
		json_decref(listed);
	}
	json_array_foreach (json_object_get(c, "views"), i, view) {
		int rank = (int)json_integer_value(json_object_get(view, "rank"));
		json_t *v = plan ? mtc_lkg_rank_view(plan, rank) : NULL;
		int good = v && match(json_object_get(view, "expect"), v, "view", why, sizeof why);
		ok(good, "%s: the view of rank %d", file, rank);
		if (!good)
			printf("#   %s\n", v ? why : "no view");
		json_decref(v);
	}
	json_decref(plan);
	json_decref(c);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void)
{
	DIR *d = opendir(CASES);
	struct dirent *e;
	char *names[512];
	size_t n = 0;

	if (!d) {
		ok(0, "cannot open %s (run from the top of the tree)", CASES);
		return done();
	}
	while ((e = readdir(d)) && n < 512)
		if (strlen(e->d_name) > 5 && !strcmp(e->d_name + strlen(e->d_name) - 5, ".json"))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		run_case(names[i]);
		free(names[i]);
	}
	ok(n >= 30, "%zu cases", n);
	return done();
}
