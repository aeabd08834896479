#include "verbs.h"

/* b3sum escapes a name holding a newline or backslash and marks the line with a leading '\'. */
static void print_b3sum_line(const char *digest, const char *path)
{
	if (!strpbrk(path, "\n\\")) {
		printf("%s  %s\n", digest, path);
		return;
	}
	printf("\\%s  ", digest);
	for (const char *p = path; *p; p++)
		fputs(*p == '\n' ? "\\n" : *p == '\\' ? "\\\\" : (char[]){ *p, 0 }, stdout);
	putchar('\n');
}

/*
 * The digest of one path: with --framework orbax the logical digest of its
 * OCDBT store (orbax_digest.h), else, or when it has none, the merkle digest.
 * Returns an exit code; m is filled only for a merkle digest.
 */
/* "-": the BLAKE3 of standard input, as b3sum gives it. */
static int digest_stdin(int threads, char d[MTC_DIGEST_LEN], long long *bytes)
{
	static struct mtc_blake3 h;
	size_t cap = 1 << 20;
	char *buf = xmalloc(cap);
	uint8_t out[MTC_BLAKE3_OUT_LEN];
	ssize_t n;

	mtc_blake3_init(&h);
	mtc_blake3_set_threads(&h, threads > 0 ? threads : 1);
	*bytes = 0;
	while ((n = read(STDIN_FILENO, buf, cap)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			mtc_error("cannot read standard input:");
			free(buf);
			return MTC_EXIT_FAILURE;
		}
		mtc_blake3_update(&h, buf, (size_t)n);
		*bytes += n;
	}
	free(buf);
	mtc_blake3_final(&h, out, sizeof out);
	mtc_hex(out, sizeof out, d);
	return MTC_EXIT_OK;
}

static int digest_one(const char *path, int threads, int orbax, char d[MTC_DIGEST_LEN],
		      struct mtc_manifest *m, long long *bytes)
{
	char err[1024];
	int r;

	if (!strcmp(path, "-"))
		return digest_stdin(threads, d, bytes);
	r = orbax ? mtc_orbax_digest(path, threads, d, err, sizeof err) : 0;
	if (r < 0) {
		mtc_error("integrity failure: %s", err);
		return MTC_EXIT_INTEGRITY;
	}
	if (r == 0 && mtc_digest_path(path, threads, d, m) < 0) {
		int rc = errno == ENOENT ? MTC_EXIT_NOTFOUND : MTC_EXIT_FAILURE;
		mtc_error("cannot digest '%s':", path);
		return rc;
	}
	*bytes = mtc_manifest_bytes(m);
	return MTC_EXIT_OK;
}

int mtc_replicate_digest(int argc, const char **argv)
{
	int json = 0, threads = 0, manifest = 0;
	char *framework = NULL;
	struct poptOption opts[] = {
		MTC_POPT_JSON(json, "one JSON object per line"),
		MTC_POPT_THREADS(threads),
		{ "manifest", '\0', POPT_ARG_NONE, &manifest, 0,
		  "with --json, add the manifest (path, type, size, digest of every entry)", NULL },
		{ "framework", '\0', POPT_ARG_STRING, &framework, 0,
		  "orbax: the logical digest of the step's OCDBT store (default and pytorch: merkle)",
		  "orbax|pytorch|pytorch.distributed" },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	poptContext ctx;
	int rc;
	if (mtc_replicate_parse(argc, argv, opts, DIGEST_USAGE, &ctx, &rc) < 0)
		goto out;
	if (threads < 0) {
		rc = mtc_usage_error("--threads must be 0 or more");
		goto out;
	}
	int orbax = framework && !strcmp(framework, "orbax");
	if (framework && !orbax && strcmp(framework, "pytorch") &&
	    strcmp(framework, "pytorch.distributed")) {
		rc = mtc_usage_error("--framework must be orbax, pytorch or pytorch.distributed");
		goto out;
	}
	const char **paths = poptGetArgs(ctx);
	if (!paths || !*paths) {
		rc = mtc_usage_error("digest needs a PATH");
		goto out;
	}
	rc = MTC_EXIT_OK;
	for (; *paths; paths++) {
		char d[MTC_DIGEST_LEN];
		struct mtc_manifest m;
		mtc_manifest_init(&m);
		double t0 = mtc_now();
		long long bytes = 0;
		int r = digest_one(*paths, threads, orbax, d, &m, &bytes);
		if (r != MTC_EXIT_OK) {
			rc = r;
			mtc_manifest_free(&m);
			continue;
		}
		if (json) {
			json_t *o = json_pack("{s:s, s:s, s:I, s:o}", "path", *paths, "digest", d,
					      "bytes", (json_int_t)bytes, "seconds",
					      mtc_json_seconds(mtc_now() - t0));
			if (manifest)
				json_object_set_new(o, "manifest", mtc_manifest_to_json(&m));
			if (mtc_json_print(o) < 0)
				rc = MTC_EXIT_FAILURE;
		} else {
			print_b3sum_line(d, *paths);
		}
		mtc_manifest_free(&m);
	}
	if (fflush(stdout) != 0)
		rc = MTC_EXIT_FAILURE;
out:
	free(framework);
	poptFreeContext(ctx);
	return rc;
}
