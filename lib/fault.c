#include "fault.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

void mtc_fault_stall(const char *point)
{
	const char *f = getenv("MTC_FAULT_STALL");
	size_t n = strlen(point);
	char pid[32];
	int fd;

	if (!f || strncmp(f, point, n) || f[n] != ':' || !f[n + 1])
		return;
	fd = open(f + n + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (mtc_write_all(fd, pid, strlen(pid)) < 0 || close(fd) < 0)
		return;
	for (int i = 0; i < 3600; i++)
		sleep(1);
}
