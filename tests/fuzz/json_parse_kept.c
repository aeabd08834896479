/*
 * libFuzzer target: mtc_json_parse_kept against jansson's json_loadb followed
 * by the same filter, the reading the coordinator's reports get (coord.h).
 * Invariants: when the filtered jansson value holds a list or a string longer
 * than its key allows, the kept parse refuses; when the kept parse accepts,
 * its value equals the filtered jansson value; when it refuses a document
 * jansson accepts and the filter takes, the document repeats a key (the kept
 * parse judges every copy, jansson keeps the last); a refusal says why. The
 * same NUL exception as json_parse.c's target.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_parse.h"

extern const struct mtc_json_keep top[];
static const struct mtc_json_keep inner[] = {
	{ .key = "x" },
	{ .key = "y", .max_items = 3, .max_bytes = 4 },
	{ .key = "o", .sub = top },
	{ .key = NULL },
};
const struct mtc_json_keep top[] = {
	{ .key = "a", .sub = inner, .max_items = 4 },
	{ .key = "s", .max_bytes = 5 },
	{ .key = "l", .max_items = 2, .max_bytes = 3 },
	{ .key = "", .sub = top },
	{ .key = "k\xc3\xa9" },
	{ .key = NULL },
};

struct within {
	const struct mtc_json_keep *keep;
	size_t max_items, max_bytes;
};

/* v as the kept parse reads it: a new value, or NULL when a list or string is too long. */
static json_t *filter(json_t *v, struct within in)
{
	json_t *out, *e, *f;
	const char *key;
	size_t i;

	if (json_is_string(v))
		return in.max_bytes && json_string_length(v) > in.max_bytes ? NULL : json_incref(v);
	if (json_is_array(v)) {
		if (in.max_items && json_array_size(v) > in.max_items)
			return NULL;
		out = json_array();
		json_array_foreach (v, i, e) {
			if (!(f = filter(e, in))) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, f);
		}
		return out;
	}
	if (!json_is_object(v))
		return json_incref(v);
	out = json_object();
	json_object_foreach (v, key, e) {
		const struct mtc_json_keep *k = in.keep;
		size_t n = strlen(key);
		for (; k && k->key; k++)
			if (strlen(k->key) == n && !memcmp(k->key, key, n))
				break;
		if (!k || !k->key)
			continue;
		if (!(f = filter(e, (struct within){ k->sub, k->max_items, k->max_bytes }))) {
			json_decref(out);
			return NULL;
		}
		json_object_set_new(out, key, f);
	}
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[160];
	const char *text = (const char *)data;
	json_t *loaded = memchr(data, 0, size) ? NULL : json_loadb(text, size, 0, NULL);
	json_t *want = loaded ? filter(loaded, (struct within){ top, 0, 0 }) : NULL;
	json_t *got = mtc_json_parse_kept(text, size, NULL, top, err, sizeof err);

	if (!got && !err[0])
		abort();
	if (got && (!want || !json_equal(want, got)))
		abort();
	if (!got && want) {
		json_t *strict = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
		if (strict)
			abort();
	}
	if (!loaded && got)
		abort();
	json_decref(loaded);
	json_decref(want);
	json_decref(got);
	return 0;
}
