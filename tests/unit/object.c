/* The one publish path (lib/object.h): checks, never replacing, the manifest kept beside. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "fsutil.h"
#include "object.h"
#include "tap.h"
#include "walk.h"
#include "xalloc.h"

static char root[] = "/tmp/mtc-unit-object-XXXXXX";

static void put(const char *rel, const char *text)
{
	char *path = xasprintf("%s/%s", root, rel);
	ok(mtc_write_atomic(path, text, strlen(text)) == 0, "wrote %s", rel);
	free(path);
}

static char *at(const char *rel) { return xasprintf("%s/%s", root, rel); }

/* A tree a/ with a file and a subdirectory: its digest and manifest. */
static void tree(const char *rel, const char *weights, char digest[MTC_DIGEST_LEN],
		 struct mtc_manifest *m)
{
	char *dir = at(rel), *sub = xasprintf("%s/sub", dir), *w = xasprintf("%s/sub/weights", rel);
	mkdir(dir, 0755);
	mkdir(sub, 0755);
	put(w, weights);
	mtc_manifest_init(m);
	ok(mtc_digest_path(dir, 1, digest, m) == 0, "digest of %s", rel);
	free(dir);
	free(sub);
	free(w);
}

static char *read_text(const char *rel)
{
	char *path = at(rel), *text = NULL;
	mtc_read_file(path, 1 << 20, &text, NULL);
	free(path);
	return text;
}

int main(void)
{
	struct mtc_manifest want, other;
	char d[MTC_DIGEST_LEN], d2[MTC_DIGEST_LEN], why[512];

	if (!mkdtemp(root))
		return 1;
	tree("good", "the weights", d, &want);
	tree("bad", "the weightz", d2, &other);

	/* a file that differs is named, not the directories above it that sort first */
	ok(mtc_manifest_compare(&want, &other, why, sizeof why) == 1, "different trees differ");
	ok(strstr(why, "'sub/weights' has digest") != NULL, "the file is named: %s", why);
	ok(mtc_manifest_compare(&want, &want, why, sizeof why) == 0, "a manifest matches itself");

	char *bad = at("bad"), *good = at("good");
	ok(mtc_object_verify(bad, d, &want, 1, why, sizeof why) == 1,
	   "data that is not what its manifest says is refused");
	ok(strstr(why, "sub/weights") != NULL, "and the file is named: %s", why);
	ok(mtc_object_verify(bad, d, NULL, 1, why, sizeof why) == 1,
	   "without a manifest, the name alone refuses it");
	ok(mtc_object_verify(good, d, &want, 1, why, sizeof why) == 0, "the right data passes");

	/* published once, with its manifest beside it; never over what is there */
	struct mtc_object_manifest m = { .text = "[]", .len = 2 };
	char *name = xasprintf("%s.data", d), *mname = xasprintf("%s.manifest", d);
	is_int(mtc_object_publish(good, root, d, &m), 0, "published");
	char *kept = read_text(mname);
	is_str(kept, "[]", "its manifest is kept beside it");
	free(kept);
	mtc_manifest_free(&other);
	tree("again", "the weights", d2, &other);
	char *again = at("again");
	is_int(mtc_object_publish(again, root, d, &m), 1, "a second copy is not published");
	struct stat st;
	ok(stat(again, &st) == 0, "and stays where it was");

	/* a file, and a staged manifest file renamed in */
	put("f", "bytes");
	put("f.m", "[1]");
	char *f = at("f"), *fm = at("f.m");
	is_int(mtc_object_publish(f, root, "file1", &(struct mtc_object_manifest){ .file = fm }), 0,
	       "a file is published");
	kept = read_text("file1.manifest");
	is_str(kept, "[1]", "its staged manifest is renamed in");
	free(kept);
	put("g", "other bytes");
	char *g = at("g"), *f1 = at("file1.data");
	is_int(mtc_publish(g, f1), 1, "a file is never replaced");
	kept = read_text("file1.data");
	is_str(kept, "bytes", "the first one stays");
	free(kept);

	mtc_manifest_free(&want);
	mtc_manifest_free(&other);
	mtc_remove_tree(root);
	free(bad);
	free(good);
	free(again);
	free(name);
	free(mname);
	free(f);
	free(fm);
	free(g);
	free(f1);
	return done();
}
