#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_atoms.h"
#include "json_parse.h"
#include "tap.h"

/* Read by both readers: 1 when each accepts s and the values are equal, 0 when both refuse it. */
static int agree(const char *s, size_t n, int *accepted)
{
	char err[160];
	json_t *want = json_loadb(s, n, 0, NULL), *got = mtc_json_parse(s, n, NULL, err, sizeof err);
	int same = want ? got && json_equal(want, got) : !got && err[0];
	*accepted = got != NULL;
	json_decref(want);
	json_decref(got);
	return same;
}

/* s as a TAP line can hold it: bytes outside printable ASCII as \xNN. */
static const char *shown(const char *s)
{
	static char buf[512];
	size_t o = 0;
	for (; *s && o + 5 < sizeof buf; s++)
		o += (size_t)snprintf(buf + o, sizeof buf - o,
				      *s >= 0x20 && *s < 0x7f ? "%c" : "\\x%02x", (unsigned char)*s);
	buf[o] = '\0';
	return buf;
}

static void case_of(const char *s, int accept)
{
	int accepted;
	ok(agree(s, strlen(s), &accepted) && accepted == accept, "%s: %s as jansson does", shown(s),
	   accept ? "accepted" : "refused");
}

static char *nested(int depth)
{
	char *s = malloc(2 * (size_t)depth + 1);
	memset(s, '[', (size_t)depth);
	memset(s + depth, ']', (size_t)depth);
	s[2 * depth] = '\0';
	return s;
}

int main(void)
{
	static const char *accepted[] = {
		"[]",
		"{}",
		" \t\r\n[ ] \n",
		"[0]",
		"[-0]",
		"[1.5e-3, 1E+2, -0.0]",
		"[9223372036854775807]",
		"[-9223372036854775808]",
		"[1e-400]",
		"[true, false, null]",
		"[\"\"]",
		"[\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"]",
		"[\"\\u00e9\\uD83D\\uDE00\"]",
		"[\"\xc3\xa9\xf0\x9f\x98\x80\x7f\"]",
		"{\"a\": 1, \"a\": [2]}",
		"{\"\\u00e9\": {\"b\": []}}",
		"[[[[]]], {\"x\": [{}]}]",
	};
	static const char *refused[] = {
		"",
		" ",
		"1",
		"\"a\"",
		"null",
		"[",
		"]",
		"[1,]",
		"[,1]",
		"{\"a\":1,}",
		"{\"a\" 1}",
		"{1: 2}",
		"{\"a\"}",
		"[] x",
		"[][]",
		"[01]",
		"[-]",
		"[-a]",
		"[1.]",
		"[.5]",
		"[1e]",
		"[1e+]",
		"[+1]",
		"[9223372036854775808]",
		"[-9223372036854775809]",
		"[1e400]",
		"[-1e400]",
		"[tru]",
		"[truex]",
		"[True]",
		"[nul]",
		"[\"\\u0000\"]",
		"{\"\\u0000\": 1}",
		"[\"\\ud800\"]",
		"[\"\\udc00\"]",
		"[\"\\ud800\\u0041\"]",
		"[\"\\u12\"]",
		"[\"\\x\"]",
		"[\"\t\"]",
		"[\"\n\"]",
		"[\"abc]",
		"[\"\xc0\x80\"]",
		"[\"\xc2\"]",
		"[\"\xed\xa0\x80\"]",
		"[\"\xf4\x90\x80\x80\"]",
		"[\"\xf5\x80\x80\x80\"]",
		"[\"\x80\"]",
		"[\xc3\xa9]",
		"['a']",
	};
	char err[160];
	json_t *a, *b, *v;
	int n;

	for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++)
		case_of(accepted[i], 1);
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
		case_of(refused[i], 0);

	char *deep = nested(2048), *deeper = nested(2049);
	ok(agree(deep, strlen(deep), &n) && n, "arrays nested 2048 deep are accepted, as jansson does");
	ok(agree(deeper, strlen(deeper), &n) && !n, "2049 deep are refused, as jansson does");
	free(deep);
	free(deeper);
	ok(!mtc_json_parse("[1\0, 2]", 7, NULL, err, sizeof err),
	   "a NUL byte after a number is refused (jansson skips it)");
	ok(!mtc_json_parse("[\"a\0\"]", 6, NULL, err, sizeof err), "a NUL byte in a string is refused");

	ok(!mtc_json_parse("{\"rank\": 1,, \"x\": 2}", 20, NULL, err, sizeof err),
	   "a bad report is refused");
	is_str(err, "invalid JSON at byte 11: a string key expected", "and the reason names the byte");
	ok(!mtc_json_parse("[1, 2", 5, NULL, err, sizeof err) && strstr(err, "at byte 5:"),
	   "input that ends early says where: %s", err);

	const char *report =
		"{\"rank\": 3, \"session\": \"s\", \"meta-files\": [[5, 3, 0, \"ab\"], [5, 2, 0, \"cd\"]], "
		"\"data-files\": [\"ab\", \"cd\"], \"wait\": 0.5}";
	struct mtc_json_atoms *atoms = mtc_json_atoms_new();
	a = mtc_json_parse(report, strlen(report), atoms, err, sizeof err);
	ok(a != NULL, "a report is read with an empty set of atoms");
	mtc_json_share(atoms, json_object_get(a, "meta-files"));
	mtc_json_share(atoms, json_object_get(a, "data-files"));
	v = json_object_get(a, "data-files");
	ok(json_array_get(v, 0) ==
		   json_array_get(json_array_get(json_object_get(a, "meta-files"), 0), 3),
	   "sharing makes a hash listed twice in one report one value");
	b = mtc_json_parse(report, strlen(report), atoms, err, sizeof err);
	ok(b && json_equal(a, b), "read again with the atoms, the report is the same");
	ok(json_array_get(json_object_get(b, "data-files"), 1) == json_array_get(v, 1),
	   "a string in an array is the shared one");
	ok(json_array_get(json_array_get(json_object_get(b, "meta-files"), 1), 0) ==
		   json_array_get(json_array_get(json_object_get(a, "meta-files"), 0), 0),
	   "an integer in an array is the shared one");
	ok(json_object_get(b, "session") != json_object_get(a, "session"),
	   "a value outside arrays is its own");
	ok(mtc_json_atom_integer(atoms, 6) == NULL && mtc_json_atom_string(atoms, "ef", 2) == NULL,
	   "values never shared are not found");
	json_decref(a);
	mtc_json_atoms_free(atoms);
	is_int((long long)json_array_get(json_array_get(json_object_get(b, "meta-files"), 1), 1)
		       ->refcount,
	       1, "freeing the atoms leaves a document's values to the document");
	json_decref(b);
	return done();
}
