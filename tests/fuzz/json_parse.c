/*
 * libFuzzer target: mtc_json_parse against jansson's json_loadb, the reader it
 * stands in for on the coordinator. Invariants: both accept the same inputs
 * and give equal values, except that jansson skips a NUL byte after a number
 * or a literal (its stream mistakes the byte for the end of its look-ahead)
 * and this refuses a NUL anywhere; read again with the first value's atoms
 * shared, the value is the same; a refusal always says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_atoms.h"
#include "json_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[160];
	json_t *want = memchr(data, 0, size) ? NULL : json_loadb((const char *)data, size, 0, NULL);
	json_t *got = mtc_json_parse((const char *)data, size, NULL, err, sizeof err);

	if (!want != !got || (got && !json_equal(want, got)) || (!got && !err[0]))
		abort();
	if (got) {
		struct mtc_json_atoms *a = mtc_json_atoms_new();
		json_t *again;
		mtc_json_share(a, got);
		again = mtc_json_parse((const char *)data, size, a, err, sizeof err);
		if (!again || !json_equal(want, again))
			abort();
		json_decref(again);
		mtc_json_atoms_free(a);
	}
	json_decref(want);
	json_decref(got);
	return 0;
}
