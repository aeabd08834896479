#include "fault.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

void mtc_fault_stall(const char *point, const char *subject)
{
	const char *f = getenv("MTC_FAULT_STALL"), *file = f ? strchr(f, ':') : NULL;
	size_t n = strlen(point);
	char pid[32], *glob;
	int fd, match;

	if (!file || strncmp(f, point, n) || (f[n] != ':' && f[n] != '=') || !file[1])
		return;
	glob = f[n] == '=' ? strndup(f + n + 1, (size_t)(file - f - (long)n - 1)) : NULL;
	match = !glob || (subject && fnmatch(glob, subject, 0) == 0);
	free(glob);
	if (!match)
		return;
	fd = open(file + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (mtc_write_all(fd, pid, strlen(pid)) < 0 || close(fd) < 0)
		return;
	for (int i = 0; i < 3600; i++)
		sleep(1);
}
