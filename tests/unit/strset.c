#include <stdio.h>

#include "strset.h"
#include "tap.h"

int main(void)
{
	struct mtc_strset s = { 0 };
	char key[32];

	ok(!mtc_strset_has(&s, "a"), "an empty set holds nothing");
	is_int(mtc_strset_add(&s, "a"), 0, "a new string is added");
	is_int(mtc_strset_add(&s, "a"), 1, "the same string is seen before");
	is_int(mtc_strset_add(&s, ""), 0, "the empty string is a string");
	is_int(mtc_strset_add(&s, ""), 1, "and is seen before");
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof key, "k%d", i);
		mtc_strset_add(&s, key);
	}
	is_int((int)s.n, 10002, "ten thousand more, each once, through every growth");
	int all = 1;
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof key, "k%d", i);
		all &= mtc_strset_has(&s, key) && mtc_strset_add(&s, key) == 1;
	}
	ok(all, "every one is still there");
	ok(!mtc_strset_has(&s, "k10000"), "a string never added is not");
	mtc_strset_free(&s);
	ok(s.n == 0 && !mtc_strset_has(&s, "a"), "a freed set is empty");
	return done();
}
