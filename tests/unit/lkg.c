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

static int is_shorthand(const char *s)
{
	return s && (s[0] == '#' || (s[0] == 'D' && s[1] == '#'));
}

static void expand(json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach(v, k, x)
		{
			if (json_is_string(x) && is_shorthand(json_string_value(x)))
				json_object_set_new(v, k, hash_of(json_string_value(x)));
			else
				expand(x);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
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
		json_object_foreach(want, k, x)
		{
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
			snprintf(why, len, "%s: want %zu elements, got %s", path,
				 json_array_size(want), g ? g : "nothing");
			free(g);
			return 0;
		}
		json_array_foreach(want, i, x)
		{
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
	json_array_foreach(json_object_get(c, "views"), i, view)
	{
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

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

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
