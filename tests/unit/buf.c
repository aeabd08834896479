#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tap.h"

int main(void)
{
	struct mtc_buf b = MTC_BUF_INIT(8);
	char *s;

	is_str(mtc_buf_str(&b), "", "empty reads as an empty string");
	is_int(mtc_buf_append(&b, "abc", 3), 0, "an append within the cap");
	is_int(mtc_buf_appendf(&b, "%d", 42), 0, "a formatted append within the cap");
	is_str(b.p, "abc42", "appends are joined and NUL-terminated");
	errno = 0;
	is_int(mtc_buf_append(&b, "defgh", 5), -1, "an append past the cap fails");
	is_int(errno, EFBIG, "with EFBIG");
	is_str(b.p, "abc42def", "what fits is kept: a prefix of what was appended");
	is_int(mtc_buf_append(&b, "i", 1), -1, "a full buffer refuses a later small append");
	is_str(b.p, "abc42def", "without leaving a gap in the contents");
	is_int(mtc_buf_append(&b, "", 0), 0, "an empty append always fits");
	mtc_buf_reset(&b);
	is_int(b.len, 0, "reset empties");
	is_int(mtc_buf_append(&b, "xy", 2), 0, "and keeps the cap usable");
	s = mtc_buf_take(&b);
	is_str(s, "xy", "take hands the contents over");
	ok(b.p == NULL && b.len == 0 && b.max == 8, "and leaves an empty buffer with its cap");
	free(s);

	struct mtc_buf big = MTC_BUF_INIT(1 << 20);
	for (int i = 0; i < 1000; i++)
		mtc_buf_appendf(&big, "line %04d\n", i);
	is_int(big.len, 10000, "many small appends grow the buffer");
	ok(!memcmp(big.p + 9990, "line 0999\n", 10), "in order");
	mtc_buf_free(&big);
	mtc_buf_free(&b);
	return done();
}
