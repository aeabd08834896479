#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "tap.h"
#include "walk.h"

struct seen {
	char list[1024];
	int errors;
};

static int note(const struct mtc_walk_entry *e, void *arg)
{
	struct seen *s = arg;
	char one[128];
	snprintf(one, sizeof one, "%s%s%s%s ", e->post ? "post:" : "", *e->rel ? e->rel : ".",
		 e->error ? "!" : "", e->post ? (e->kids ? "+" : "-") : "");
	strncat(s->list, one, sizeof s->list - strlen(s->list) - 1);
	s->errors += e->error != 0;
	return 0;
}

static void touch(const char *root, const char *rel)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	close(open(path, O_WRONLY | O_CREAT, 0644));
}

static void dir(const char *root, const char *rel)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	mkdir(path, 0755);
}

static const char *walk(const char *root, int flags, int max_depth, struct seen *s)
{
	struct mtc_walk w = {
		.root = root, .flags = flags, .max_depth = max_depth, .visit = note, .arg = s
	};
	memset(s, 0, sizeof *s);
	if (flags & MTC_WALK_BENEATH)
		w.rootfd = open(root, O_RDONLY | O_DIRECTORY);
	if (mtc_walk(&w) < 0)
		snprintf(s->list, sizeof s->list, "failed: %s", strerror(errno));
	if (flags & MTC_WALK_BENEATH)
		close(w.rootfd);
	return s->list;
}

int main(void)
{
	char root[] = "/tmp/mtc-unit-walk.XXXXXX";
	char link[600];
	struct seen s;

	if (!mkdtemp(root))
		return 1;
	dir(root, "b");
	dir(root, "b/e");
	touch(root, "b/c");
	touch(root, "a");
	touch(root, "B");
	is_str(walk(root, MTC_WALK_SORTED, 8, &s), "B a b b/c b/e ",
	       "sorted by strcmp, a directory before its contents");
	is_str(walk(root, MTC_WALK_SORTED | MTC_WALK_POST, 8, &s),
	       "B a b b/c b/e post:b/e- post:b+ post:.+ ",
	       "the visit after a directory's contents knows whether it held any");
	is_str(walk(root, MTC_WALK_SORTED, 0, &s), "B a b b! ",
	       "a directory deeper than max_depth is an error entry");
	snprintf(link, sizeof link, "%s/b/up", root);
	symlink("..", link);
	is_str(walk(root, MTC_WALK_SORTED | MTC_WALK_PHYS, 8, &s), "B a b b/c b/e b/up ",
	       "with MTC_WALK_PHYS a symlink is an entry, not followed");
	walk(root, MTC_WALK_SORTED, 3, &s);
	ok(strstr(s.list, " b/up/b/up b/up/b/up! ") != NULL && s.errors == 2,
	   "followed, a loop stops at max_depth");
	unlink(link);
	symlink("/", link);
	walk(root, MTC_WALK_SORTED | MTC_WALK_BENEATH, 8, &s);
	ok(strstr(s.list, "b/up! ") != NULL && s.errors == 1,
	   "beneath the root, a symlink that leads out is an error entry");
	ok(mtc_remove_tree(root) == 0 && access(root, F_OK) < 0, "rm -rf walks depth first");
	return done();
}
