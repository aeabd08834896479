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

#include "strset.h"
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
	rc = archive_write_header(a, e) != ARCHIVE_OK || archive_write_data(a, p->hash, len) < 0
		     ? -1
		     : 0;
	archive_entry_free(e);
	return rc;
}

int mtc_step_archive(const char *path, int zstd, const char *dir, const struct mtc_step_part *parts,
		     size_t n, char *err, size_t errlen)
{
	struct archive *a = archive_write_new();
	struct mtc_strset seen = { 0 };
	int rc = -1;

	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (zstd && archive_write_add_filter_zstd(a) != ARCHIVE_OK)
		goto out;
	if ((strcmp(path, "-") ? archive_write_open_filename(a, path) : archive_write_open_fd(a, 1)) !=
	    ARCHIVE_OK)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char *src = xasprintf("%s/%s.data", dir, parts[i].hash);
		char *name = xasprintf("%s.data", parts[i].hash);
		int bad = !mtc_strset_add(&seen, parts[i].hash) && archive_tree(a, src, name) < 0;
		free(src);
		free(name);
		if (bad)
			goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (archive_meta(a, &parts[i]) < 0)
			goto out;
	if (archive_write_close(a) == ARCHIVE_OK)
		rc = 0;
out:
	if (rc < 0)
		snprintf(err, errlen, "cannot write archive '%s': %s", path,
			 archive_error_string(a) ? archive_error_string(a) : strerror(errno));
	archive_write_free(a);
	mtc_strset_free(&seen);
	return rc;
}
