#include "object.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_name.h"
#include "fault.h"
#include "fsutil.h"
#include "local_dir.h"
#include "log.h"
#include "naming.h"
#include "xalloc.h"

int mtc_object_check(const char *path, const char *name, const struct mtc_manifest *expected,
		     const struct mtc_manifest *got, const char *merkle, int threads, char *err,
		     size_t errlen)
{
	if (expected && got && mtc_manifest_compare(expected, got, err, errlen))
		return 1;
	return mtc_data_name_check(path, name, merkle, threads, err, errlen);
}

int mtc_object_verify(const char *path, const char *name, const struct mtc_manifest *expected,
		      int threads, char *err, size_t errlen)
{
	struct mtc_manifest got;
	char merkle[MTC_DIGEST_LEN];
	int rc;

	mtc_manifest_init(&got);
	if (mtc_digest_path(path, threads, merkle, expected ? &got : NULL) < 0) {
		int e = errno;
		mtc_manifest_free(&got);
		errno = e;
		return -1;
	}
	rc = mtc_object_check(path, name, expected, &got, merkle, threads, err, errlen);
	mtc_manifest_free(&got);
	return rc;
}

/* A file's bytes by fsync; a tree, which lives on final's filesystem, by one syncfs. */
static int make_durable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc, e;
	struct stat st;

	if (fd < 0)
		return -1;
	rc = fstat(fd, &st) < 0 ? -1 : S_ISDIR(st.st_mode) ? syncfs(fd) : fsync(fd);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

int mtc_publish(const char *path, const char *final)
{
	if (make_durable(path) < 0)
		return -1;
	if (renameat2(AT_FDCWD, path, AT_FDCWD, final, RENAME_NOREPLACE) < 0)
		return errno == EEXIST || errno == ENOTEMPTY ? 1 : -1;
	if (mtc_fsync_parent(final) < 0)
		mtc_warn("'%s' is in place, but its directory cannot be synced:", final);
	return 0;
}

/* Keeps m at path in dir, the data's manifest: by rename or by an atomic write; a warning if not. */
static void keep_manifest(const char *dir, const char *path, const struct mtc_object_manifest *m)
{
	int rc;

	if (m->file) {
		rc = rename(m->file, path) < 0 ? -1 : mtc_fsync_dir(dir);
	} else {
		rc = mtc_write_atomic(path, m->text, m->len);
	}
	if (rc < 0)
		mtc_warn("cannot keep '%s' (it is recomputed when asked for):", path);
}

int mtc_object_publish(const char *path, const char *dir, const char *name,
		       const struct mtc_object_manifest *m)
{
	char *final = xasprintf("%s/%s.data", dir, name);
	char *kept = xasprintf("%s/%s.manifest", dir, name);
	int rc = mtc_publish(path, final);

	if (rc == 0)
		mtc_fault_pause("object-published", name);
	if (rc == 0 && m && (m->file || m->text))
		keep_manifest(dir, kept, m);
	/*
	 * The data is here: a manifest a peer sent ahead of it is of no more use.
	 * Data that was here already leaves it to its publisher until that one has
	 * kept its manifest: the pending one may be the very file it keeps.
	 */
	if (rc == 0 || (rc > 0 && access(kept, F_OK) == 0)) {
		char *pending = xasprintf("%s/" MTC_PENDING_MANIFEST "%s", dir, name);
		if (unlink(pending) == 0)
			mtc_fsync_dir(dir);
		free(pending);
	}
	free(kept);
	free(final);
	return rc;
}
