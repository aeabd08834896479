/* Fault injection for the tests (fault.h). */
#include "fault.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "xalloc.h"

/* 1 when a spec of env names point for subject and, with a FILE, this process is the first. */
static int armed(const char *env, const char *point, const char *subject)
{
	const char *f = getenv(env);
	size_t n = strlen(point);

	while (f && *f) {
		const char *end = strchrnul(f, ','), *colon = memchr(f, ':', (size_t)(end - f));
		const char *name_end = colon ? colon : end;
		const char *eq = memchr(f, '=', (size_t)(name_end - f));
		size_t len = (size_t)((eq ? eq : name_end) - f);

		if (len == n && !strncmp(f, point, n)) {
			char *glob = eq ? xasprintf("%.*s", (int)(name_end - eq - 1), eq + 1) : NULL;
			int match = !glob || (subject && fnmatch(glob, subject, 0) == 0);
			free(glob);
			if (match && !colon)
				return 1;
			if (match) {
				char *file = xasprintf("%.*s", (int)(end - colon - 1), colon + 1),
				     pid[32];
				int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
				free(file);
				if (fd >= 0) {
					int k = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
					ssize_t w = write(fd, pid, (size_t)k);
					close(fd);
					return w == k;
				}
			}
		}
		f = *end ? end + 1 : end;
	}
	return 0;
}

void mtc_fault_stall(const char *point, const char *subject)
{
	if (!armed("MTC_FAULT_STALL", point, subject))
		return;
	mtc_info("fault injection: stalled at %s", point);
	for (int i = 0; i < 3600; i++)
		sleep(1);
}

void mtc_fault_kill(const char *point, const char *subject)
{
	if (!armed("MTC_FAULT_KILL", point, subject))
		return;
	mtc_info("fault injection: killed at %s", point);
	raise(SIGKILL);
}

void mtc_fault_pause(const char *point, const char *subject)
{
	if (armed("MTC_FAULT_PAUSE", point, subject))
		raise(SIGSTOP);
}
