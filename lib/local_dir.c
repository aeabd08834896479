#include "local_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

static int usable(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return mtc_fail(err, errlen, "cannot use '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return mtc_fail(err, errlen, "cannot use '%s': not a directory", dir);
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0)
		return mtc_fail(err, errlen, "cannot write in '%s': %s", dir, strerror(errno));
	return 0;
}

/* mkdir of the last component: 1 when it made it, 0 when it was there, -1 with errno. */
static int make_leaf(const char *dir)
{
	char *copy = xstrdup(dir), *parent = dirname(copy);
	int rc = strcmp(parent, dir) && mtc_mkdir_p(parent, 0777) < 0 ? -1 : 0;

	free(copy);
	if (rc < 0)
		return -1;
	if (mkdir(dir, 0700) == 0)
		return 1;
	return errno == EEXIST ? 0 : -1;
}

int mtc_local_dir_prepare(const char *dir, int *created, char *err, size_t errlen)
{
	struct stat st;
	int made;

	*created = 0;
	if (!*dir)
		return mtc_fail(err, errlen, "the local dir is an empty path");
	if (stat(dir, &st) < 0 && errno == ENOENT) {
		if ((made = make_leaf(dir)) < 0)
			return mtc_fail(err, errlen, "cannot create '%s': %s", dir, strerror(errno));
		/* the exact mode, whatever the umask: chmod is not subject to it */
		if (made && chmod(dir, MTC_LOCAL_DIR_MODE) < 0)
			return mtc_fail(err, errlen, "cannot set the mode of '%s': %s", dir,
					strerror(errno));
		*created = made;
	}
	return usable(dir, err, errlen);
}
