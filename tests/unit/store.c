/*
 * The store interface against any location. Without arguments: the TAP
 * suite on a fresh directory. "store URL selftest" runs the same suite on
 * URL; "store URL put|get|cat|list|stat|rm|rmprefix|range|puttree|gettree ..." is a small
 * client for the bats tests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "http.h"
#include "store/store.h"
#include "store/store_tree.h"
#include "tap.h"
#include "walk.h"
#include "xalloc.h"

static struct mtc_store *open_or_die(const char *url)
{
	struct mtc_store *s;
	char err[256];
	const char *par = getenv("TEST_PARALLEL"), *dl = getenv("TEST_DEADLINE");
	const char *th = getenv("TEST_SLICE_THRESHOLD"), *sl = getenv("TEST_SLICES");
	struct mtc_store_options o = { .token_file = getenv("TEST_TOKEN_FILE"),
				       .parallel = par ? atoi(par) : 0,
				       .deadline = dl ? atof(dl) : 60,
				       .slices = sl ? atoi(sl) : 0 };
	if (th && mtc_store_parse_size(th, &o.slice_threshold) < 0) {
		fprintf(stderr, "store: bad TEST_SLICE_THRESHOLD '%s'\n", th);
		exit(2);
	}

	if (mtc_store_open(url, &o, &s, err, sizeof err) < 0) {
		fprintf(stderr, "store: %s\n", err);
		exit(1);
	}
	return s;
}

static int has_object(const struct mtc_store_list *l, const char *name, long long size)
{
	for (size_t i = 0; i < l->n_objects; i++)
		if (!strcmp(l->objects[i].name, name))
			return l->objects[i].size == size;
	return 0;
}

static int has_prefix(const struct mtc_store_list *l, const char *name)
{
	for (size_t i = 0; i < l->n_prefixes; i++)
		if (!strcmp(l->prefixes[i], name))
			return 1;
	return 0;
}

static void suite(struct mtc_store *s, const char *scratch)
{
	struct mtc_store_list l;
	struct mtc_store_object st;
	char *buf, *src = xasprintf("%s/src", scratch), *dst = xasprintf("%s/dst", scratch);
	char range[5];
	size_t len;
	static const char *bad[] = { "", "/a", "a//b", "a/../b", "..", "./x", "a/./b", "a\tb" };
	static const char *good[] = { "a", "a/b", "a/b/", "job/2025-06-30_14-30/x.meta", "a b/c%d?e#f" };

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(!mtc_store_valid_key(bad[i]), "key '%s' is rejected", bad[i]);
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		ok(mtc_store_valid_key(good[i]), "key '%s' is accepted", good[i]);

	ok(mtc_store_put_buf(s, "t/a/one", "hello", 5, 0) == 0, "put a buffer: %s", mtc_store_error(s));
	ok(mtc_store_put_buf(s, "t/a/one", "other", 5, 0) < 0 && errno == EEXIST,
	   "a second put of the same key is EEXIST");
	ok(mtc_store_get_buf(s, "t/a/one", 100, &buf, &len) == 0 && len == 5 && !memcmp(buf, "hello", 5),
	   "the first content stays");
	free(buf);
	ok(mtc_store_put_buf(s, "t/a/one", "newer", 5, MTC_STORE_REPLACE) == 0,
	   "MTC_STORE_REPLACE overwrites");
	ok(mtc_store_get_buf(s, "t/a/one", 100, &buf, &len) == 0 && !memcmp(buf, "newer", 5),
	   "and the new content is read back");
	free(buf);
	ok(mtc_store_get_buf(s, "t/a/one", 3, &buf, &len) < 0 && errno == EFBIG,
	   "get_buf past max is EFBIG");
	free(buf);
	ok(mtc_store_get_buf(s, "t/a/none", 3, &buf, &len) < 0 && errno == ENOENT,
	   "a missing object is ENOENT");
	free(buf);
	ok(mtc_store_get_range(s, "t/a/one", 1, range, 3) == 0 && !memcmp(range, "ewe", 3),
	   "a range read");
	ok(mtc_store_get_range(s, "t/a/one", 3, range, 4) < 0, "a range past the end fails");
	ok(mtc_store_stat(s, "t/a/one", &st) == 0 && st.size == 5, "stat gives the size");
	ok(mtc_store_stat(s, "t/a/nope", &st) < 0 && errno == ENOENT, "stat of nothing is ENOENT");

	mtc_write_atomic(src, "0123456789", 10);
	ok(mtc_store_put_file(s, "t/a/b/file", src, 0) == 0, "put a file: %s", mtc_store_error(s));
	ok(mtc_store_put_buf(s, "t/a/b/c/deep", "", 0, 0) == 0, "put an empty object");
	ok(mtc_store_put_buf(s, "t/a/emptydir/", "", 0, 0) == 0, "put an empty directory");
	ok(mtc_store_put_buf(s, "t/odd name %?#", "x", 1, 0) == 0, "a name that needs escaping");
	ok(mtc_store_get_file(s, "t/a/b/file", dst) == 0, "get a file");
	ok(mtc_read_file(dst, 100, &buf, &len) == 0 && len == 10 && !memcmp(buf, "0123456789", 10),
	   "same bytes");
	free(buf);

	ok(mtc_store_list(s, "t/", NULL, &l) == 0, "list recursively");
	is_int(l.n_objects, 5, "five objects");
	ok(has_object(&l, "t/a/b/c/deep", 0) && has_object(&l, "t/a/b/file", 10) &&
		   has_object(&l, "t/a/emptydir/", 0) && has_object(&l, "t/odd name %?#", 1),
	   "with their names and sizes");
	is_int(l.n_prefixes, 0, "and no prefixes");
	mtc_store_list_free(&l);

	ok(mtc_store_list(s, "t/a/", "/", &l) == 0, "list one level");
	is_int(l.n_objects, 1, "one object");
	ok(has_object(&l, "t/a/one", 5), "t/a/one");
	is_int(l.n_prefixes, 2, "two prefixes");
	ok(has_prefix(&l, "t/a/b/") && has_prefix(&l, "t/a/emptydir/"), "b/ and emptydir/");
	mtc_store_list_free(&l);

	ok(mtc_store_list(s, "t/a/o", "/", &l) == 0 && l.n_objects == 1 && l.n_prefixes == 0,
	   "a prefix that ends inside a name");
	mtc_store_list_free(&l);
	ok(mtc_store_list(s, "nothing/", "/", &l) == 0 && l.n_objects == 0 && l.n_prefixes == 0,
	   "listing nothing is empty, not an error");
	mtc_store_list_free(&l);

	struct mtc_store_xfer x[3] = { { .key = "t/many/1", .path = src },
				       { .key = "t/many/2", .path = src },
				       { .key = "t/a/one", .path = src } };
	ok(mtc_store_put_many(s, x, 3, 0) < 0 && x[0].err == 0 && x[1].err == 0 && x[2].err == EEXIST,
	   "put_many reports each failure");
	is_int(x[0].size, 10, "and the sizes");
	char *d1 = xasprintf("%s/m1", scratch), *d2 = xasprintf("%s/m2", scratch);
	struct mtc_store_xfer y[2] = { { .key = "t/many/1", .path = d1 },
				       { .key = "t/many/2", .path = d2 } };
	ok(mtc_store_get_many(s, y, 2) == 0 && y[1].size == 10, "get_many");

	ok(mtc_store_delete(s, "t/a/one") == 0, "delete");
	ok(mtc_store_delete(s, "t/a/one") < 0 && errno == ENOENT, "deleting again is ENOENT");
	ok(mtc_store_put_buf(s, "t/a/x.meta", "h", 1, 0) == 0, "a meta");
	ok(mtc_store_delete_prefix(s, "t/a/") == 0, "delete a prefix: %s", mtc_store_error(s));
	ok(mtc_store_list(s, "t/", "/", &l) == 0 && l.n_prefixes == 1 && has_prefix(&l, "t/many/") &&
		   l.n_objects == 1,
	   "only the others remain");
	mtc_store_list_free(&l);
	ok(mtc_store_delete_prefix(s, "t/") == 0, "delete everything");
	ok(mtc_store_list(s, "", NULL, &l) == 0 && l.n_objects == 0, "nothing is left");
	mtc_store_list_free(&l);
	unlink(src);
	unlink(dst);
	unlink(d1);
	unlink(d2);
	free(d1);
	free(d2);
	free(src);
	free(dst);
}

static int client(struct mtc_store *s, int argc, char **argv)
{
	const char *op = argv[0];
	struct mtc_store_list l;
	struct mtc_store_object st;
	int rc = -1;

	if (!strcmp(op, "put") && argc == 3)
		rc = mtc_store_put_file(s, argv[1], argv[2], 0);
	else if (!strcmp(op, "get") && argc == 3)
		rc = mtc_store_get_file(s, argv[1], argv[2]);
	else if (!strcmp(op, "cat") && argc == 2) {
		char *buf;
		size_t len;
		rc = mtc_store_get_buf(s, argv[1], 1 << 30, &buf, &len);
		if (rc == 0)
			fwrite(buf, 1, len, stdout);
		free(buf);
	} else if (!strcmp(op, "list") && (argc == 2 || argc == 3)) {
		rc = mtc_store_list(s, argv[1], argc == 3 ? argv[2] : NULL, &l);
		for (size_t i = 0; rc == 0 && i < l.n_prefixes; i++)
			printf("%s\n", l.prefixes[i]);
		for (size_t i = 0; rc == 0 && i < l.n_objects; i++)
			printf("%s %lld\n", l.objects[i].name, l.objects[i].size);
		mtc_store_list_free(&l);
	} else if (!strcmp(op, "puttree") && argc == 3) {
		struct mtc_tree t = { 0 };
		char err[256];
		if (mtc_tree_collect(argv[2], argv[1], &t, err, sizeof err) < 0) {
			fprintf(stderr, "store: %s\n", err);
			return 1;
		}
		rc = mtc_store_put_many(s, t.x, t.n, 0);
		mtc_tree_free(&t);
	} else if (!strcmp(op, "gettree") && argc == 3) {
		struct mtc_tree t;
		rc = mtc_tree_download(s, argv[1], argv[2], &t);
		mtc_tree_free(&t);
	} else if (!strcmp(op, "fetch") && argc == 3) {
		/* the resumable fetch of every object under a prefix into a staging dir */
		struct mtc_fetch f = { 0 };
		long long already = 0;
		rc = mtc_fetch_add_prefix(s, argv[1], "d", &f);
		if (rc == 0)
			rc = mtc_fetch_prepare(s, argv[2], &f, &already);
		if (rc == 0) {
			printf("already %lld\n", already);
			fflush(stdout);
			rc = mtc_fetch_run(s, argv[2], &f);
		}
		mtc_fetch_free(&f);
	} else if (!strcmp(op, "stat") && argc == 2) {
		rc = mtc_store_stat(s, argv[1], &st);
		if (rc == 0)
			printf("%lld %lld\n", st.size, st.generation);
	} else if (!strcmp(op, "rm") && argc == 2)
		rc = mtc_store_delete(s, argv[1]);
	else if (!strcmp(op, "rmprefix") && argc == 2)
		rc = mtc_store_delete_prefix(s, argv[1]);
	else if (!strcmp(op, "range") && argc == 4) {
		long long off = atoll(argv[2]);
		size_t len = (size_t)atoll(argv[3]);
		char *buf = xmalloc(len + 1);
		rc = mtc_store_get_range(s, argv[1], off, buf, len);
		if (rc == 0)
			fwrite(buf, 1, len, stdout);
		free(buf);
	} else {
		fprintf(stderr, "store: bad command\n");
		return 2;
	}
	if (rc < 0) {
		fprintf(stderr, "store: %s: %s\n", op, mtc_store_error(s));
		return errno == ENOENT	    ? 4
		       : errno == EIO	    ? 5
		       : errno == EEXIST    ? 6
		       : errno == ETIMEDOUT ? 3
		       : errno == EACCES    ? 7
					    : 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char scratch[] = "/tmp/mtc-store-XXXXXX";
	struct mtc_store *s;
	int rc;

	mtc_http_init();
	if (argc > 2 && strcmp(argv[2], "selftest")) {
		s = open_or_die(argv[1]);
		rc = client(s, argc - 2, argv + 2);
		mtc_store_close(s);
		return rc;
	}
	if (!mkdtemp(scratch))
		return 1;
	if (argc > 1) {
		s = open_or_die(argv[1]);
	} else {
		char *root = xasprintf("%s/root", scratch);
		char *url = xasprintf("file://%s", root);
		s = open_or_die(url);
		free(url);
		free(root);
	}
	suite(s, scratch);
	mtc_store_close(s);
	if (argc <= 1) {
		char err[128];
		ok(mtc_store_open("ftp://x", NULL, &s, err, sizeof err) < 0 && errno == EINVAL,
		   "an unknown scheme is refused: %s", err);
		ok(mtc_store_open("gs://", NULL, &s, err, sizeof err) < 0, "gs:// needs a bucket");
	}
	mtc_remove_tree(scratch);
	return done();
}
