#include "step_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "fault.h"
#include "fsutil.h"
#include "strset.h"
#include "tmpname.h"
#include "walk.h"
#include "xalloc.h"

static int archive_file(struct archive *a, const char *path, const char *name, struct stat *st)
{
	struct archive_entry *e = archive_entry_new();
	int rc = 0;

	archive_entry_set_pathname(e, name);
	archive_entry_set_mtime(e, st->st_mtime, 0);
	if (S_ISDIR(st->st_mode)) {
		archive_entry_set_filetype(e, AE_IFDIR);
		archive_entry_set_perm(e, 0755);
		rc = archive_write_header(a, e) == ARCHIVE_OK ? 0 : -1;
	} else {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		char *buf = xmalloc(1 << 20);
		ssize_t got;
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, st->st_size);
		if (fd < 0 || archive_write_header(a, e) != ARCHIVE_OK)
			rc = -1;
		while (rc == 0 && (got = read(fd, buf, 1 << 20)) > 0)
			if (archive_write_data(a, buf, (size_t)got) != got)
				rc = -1;
		if (fd >= 0)
			close(fd);
		free(buf);
	}
	archive_entry_free(e);
	return rc;
}

/* mtc_walk's argument while a tree goes into the archive under name. */
struct archiving {
	struct archive *a;
	const char *name;
};

/* A walk's visit (walk.h): each entry below the tree, named below its name. */
static int archive_entry_of(const struct mtc_walk_entry *e, void *arg)
{
	struct archiving *g = arg;
	struct stat st = e->st;
	char *name;
	int rc;

	if (e->error) {
		errno = e->error;
		return -1;
	}
	name = xasprintf("%s/%s", g->name, e->rel);
	rc = archive_file(g->a, e->path, name, &st);
	free(name);
	return rc;
}

static int archive_tree(struct archive *a, const char *path, const char *name)
{
	struct stat st;
	struct archiving g = { a, name };
	struct mtc_walk w = { .root = path,
			      .flags = MTC_WALK_SORTED | MTC_WALK_PHYS,
			      .max_depth = INT_MAX,
			      .visit = archive_entry_of,
			      .arg = &g };

	if (lstat(path, &st) < 0 || archive_file(a, path, name, &st) < 0)
		return -1;
	return S_ISDIR(st.st_mode) ? mtc_walk(&w) : 0;
}

static int archive_meta(struct archive *a, const struct mtc_step_part *p)
{
	struct archive_entry *e = archive_entry_new();
	size_t len = strlen(p->hash);
	int rc;

	archive_entry_set_pathname(e, p->meta);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)len);
	rc = archive_write_header(a, e) != ARCHIVE_OK || archive_write_data(a, p->hash, len) < 0 ? -1
												 : 0;
	archive_entry_free(e);
	return rc;
}

const char *mtc_archive_filter_of(const char *path)
{
	/* GNU tar's -a suffixes, and bsdtar's .lz4 */
	static const char *const suffixes[][2] = {
		{ ".zst", "zstd" },	{ ".tzst", "zstd" }, { ".gz", "gzip" },	   { ".tgz", "gzip" },
		{ ".taz", "gzip" },	{ ".bz2", "bzip2" }, { ".tbz2", "bzip2" }, { ".tbz", "bzip2" },
		{ ".tz2", "bzip2" },	{ ".xz", "xz" },     { ".txz", "xz" },	   { ".lzma", "lzma" },
		{ ".tlz", "lzma" },	{ ".lz", "lzip" },   { ".lzo", "lzop" },   { ".Z", "compress" },
		{ ".taZ", "compress" }, { ".lz4", "lz4" },
	};
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return NULL;
	for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
		if (!strcmp(dot, suffixes[i][0]))
			return suffixes[i][1];
	return NULL;
}

/* The entries of the archive: the step's trees under their names, then the .meta files. */
static int archive_parts(struct archive *a, long long step, const char *dir,
			 const struct mtc_step_part *parts, size_t n)
{
	struct mtc_strset seen = { 0 };
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		char *src = xasprintf("%s/%s.data", dir, parts[i].hash);
		char *name = step < 0 ? xasprintf("%s.data", parts[i].hash)
			     : n == 1 ? xasprintf("%lld", step)
				      : xasprintf("w%d/%lld", parts[i].worker, step);
		if ((step >= 0 || !mtc_strset_add(&seen, parts[i].hash)) &&
		    archive_tree(a, src, name) < 0)
			rc = -1;
		mtc_fault_kill("archive", name);
		free(src);
		free(name);
	}
	for (size_t i = 0; i < n && rc == 0 && step < 0; i++)
		if (archive_meta(a, &parts[i]) < 0)
			rc = -1;
	mtc_strset_free(&seen);
	return rc;
}

/* What killed writers of archives (or anything else) left beside path: theirs to remove. */
static void sweep_beside(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = !slash	    ? xstrdup(".")
		    : slash == path ? xstrdup("/")
				    : xasprintf("%.*s", (int)(slash - path), path);

	mtc_tmp_sweep(dir, 1, 1, NULL, NULL);
	free(dir);
}

int mtc_step_archive(const char *path, const char *filter, long long step, const char *dir,
		     const struct mtc_step_part *parts, size_t n, char *err, size_t errlen)
{
	struct archive *a = archive_write_new();
	struct mtc_tmp t = { NULL, -1 };
	int to_file = strcmp(path, "-") != 0, rc = -1;
	const char *why = NULL;

	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (filter && archive_write_add_filter_by_name(a, filter) != ARCHIVE_OK) {
		snprintf(err, errlen, "cannot write archive '%s': no %s compression here", path, filter);
		archive_write_free(a);
		return -1;
	}
	if (to_file)
		sweep_beside(path);
	if (to_file && mtc_tmp_beside(path, &t) < 0) {
		snprintf(err, errlen, "cannot write archive '%s': %s", path, strerror(errno));
		archive_write_free(a);
		return -1;
	}
	if (archive_write_open_fd(a, to_file ? t.fd : STDOUT_FILENO) != ARCHIVE_OK ||
	    archive_parts(a, step, dir, parts, n) < 0 || archive_write_close(a) != ARCHIVE_OK)
		why = archive_errno(a) > 0	? strerror(archive_errno(a))
		      : archive_error_string(a) ? archive_error_string(a)
						: strerror(errno);
	else if (to_file && (fsync(t.fd) < 0 || rename(t.path, path) < 0))
		why = strerror(errno);
	else
		rc = 0;
	if (rc < 0)
		snprintf(err, errlen, "cannot write archive '%s': %s", path, why);
	archive_write_free(a); /* before the temporary's fd closes: it may still flush */
	if (rc < 0 && t.path) {
		mtc_tmp_discard(&t);
	} else if (t.path) {
		mtc_tmp_release(&t);
		if (mtc_fsync_parent(path) < 0) {
			snprintf(err, errlen, "cannot write archive '%s': %s", path, strerror(errno));
			rc = -1;
		}
	}
	return rc;
}
