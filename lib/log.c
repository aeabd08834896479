#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

static const char *prog = "mtc";
static int level = MTC_LOG_WARN;
static int format = MTC_LOG_TEXT;

void mtc_log_init(const char *name)
{
	const char *slash = strrchr(name, '/');
	prog = slash ? slash + 1 : name;
}

const char *mtc_prog(void) { return prog; }
void mtc_log_set_level(int l) { level = l < MTC_LOG_ERROR ? MTC_LOG_ERROR - 1 : l; }
int mtc_log_level(void) { return level; }

int mtc_log_set_format(const char *name)
{
	if (!strcmp(name, "text"))
		format = MTC_LOG_TEXT;
	else if (!strcmp(name, "json"))
		format = MTC_LOG_JSON;
	else
		return -1;
	return 0;
}

static const char *level_name[] = { "error", "warning", "info", "debug" };

void mtc_vlog(int l, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[4096];
	size_t n;

	if (l > level)
		return;
	vsnprintf(msg, sizeof msg, fmt, ap);
	n = strlen(msg);
	if (n && msg[n - 1] == ':')
		snprintf(msg + n, sizeof msg - n, " %s", strerror(saved));

	if (format == MTC_LOG_JSON) {
		struct timespec ts;
		char stamp[40];
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);
		json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "ts", stamp, "level", level_name[l],
				      "prog", prog, "msg", msg);
		char *line = json_dumps(o, JSON_COMPACT);
		fprintf(stderr, "%s\n", line);
		free(line);
		json_decref(o);
	} else if (l == MTC_LOG_ERROR) {
		fprintf(stderr, "%s: %s\n", prog, msg);
	} else {
		fprintf(stderr, "%s: %s: %s\n", prog, level_name[l], msg);
	}
	errno = saved;
}

#define DEFINE_LOG(name, l)                        \
	void name(const char *fmt, ...)            \
	{                                          \
		va_list ap;                        \
		va_start(ap, fmt);                 \
		mtc_vlog(l, fmt, ap);              \
		va_end(ap);                        \
	}
DEFINE_LOG(mtc_error, MTC_LOG_ERROR)
DEFINE_LOG(mtc_warn, MTC_LOG_WARN)
DEFINE_LOG(mtc_info, MTC_LOG_INFO)
DEFINE_LOG(mtc_debug, MTC_LOG_DEBUG)
