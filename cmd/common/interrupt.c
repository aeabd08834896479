#include "interrupt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static char line[256];
static volatile sig_atomic_t len;

static void on_sigint(int sig)
{
	ssize_t rc;

	(void)sig;
	if (mtc_log_progress_is_drawn())
		rc = write(2, "\n", 1);
	rc = write(2, line, (size_t)len);
	(void)rc;
	_exit(128 + SIGINT);
}

void mtc_cli_on_interrupt(int can_continue)
{
	struct sigaction sa;
	int n = snprintf(line, sizeof line, "%s: interrupted%s\n", mtc_prog(),
			 can_continue ? "; run the same command to continue" : "");

	len = n < 0 ? 0 : n >= (int)sizeof line ? (int)sizeof line - 1 : n;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}
