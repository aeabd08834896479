#include "interrupt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static struct mtc_log_prepared line;

static void on_sigint(int sig)
{
	ssize_t rc;

	(void)sig;
	if (mtc_log_progress_is_drawn())
		rc = write(2, "\n", 1);
	(void)rc;
	mtc_log_write_prepared(&line);
	_exit(128 + SIGINT);
}

void mtc_cli_on_interrupt(int can_continue)
{
	struct sigaction sa;

	mtc_log_prepare(&line, MTC_LOG_ERROR,
			can_continue ? "interrupted; run the same command to continue" : "interrupted");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}
