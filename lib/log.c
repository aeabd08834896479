#include "log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <jansson.h>

#include "local_dir.h"

static const char *prog = "mtc";
static int level = MTC_LOG_WARN;
static int format = MTC_LOG_TEXT;
static volatile sig_atomic_t progress_drawn; /* read by a signal handler */
static char status_dir[4096];
static char status_context[512] = "init";

void mtc_log_init(const char *name)
{
	const char *slash = strrchr(name, '/');
	prog = slash ? slash + 1 : name;
}

const char *mtc_prog(void) { return prog; }
void mtc_log_set_level(int l) { level = l < MTC_LOG_ERROR ? MTC_LOG_ERROR : l; }
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

static const char *level_names[] = { "critical", "error", "warning", "info", "debug" };
#define level_name (level_names + 1)

void mtc_log_progress_drawn(int drawn) { progress_drawn = drawn; }
int mtc_log_progress_is_drawn(void) { return progress_drawn; }

void mtc_log_status_dir(const char *dir, const char *context)
{
	snprintf(status_dir, sizeof status_dir, "%s", dir ? dir : "");
	if (context)
		snprintf(status_context, sizeof status_context, "%s", context);
}

static void append_line(const char *name, const char *line, size_t len)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof path, "%s/%s", status_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, len) < 0 || fsync(fd) < 0)
		fprintf(stderr, "%s: cannot write '%s': %s\n", prog, path, strerror(errno));
	close(fd);
}

/* One O_APPEND write per line, so concurrent writers never interleave within a line. */
static void write_status(int l, const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32], line[4800];
	const char *module = strncmp(prog, "mtc-", 4) ? prog : prog + 4;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
	n = snprintf(line, sizeof line, "%s.%03ld %04X:%04X %s [%s] %s.main(0): %s\n", stamp,
		     ts.tv_nsec / 1000000, (unsigned)getpid(), (unsigned)syscall(SYS_gettid),
		     status_context, l == MTC_LOG_CRITICAL ? "CRI" : "ERR", module, msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	append_line(MTC_ERRORS_FILE, line, (size_t)n);
	if (l == MTC_LOG_CRITICAL)
		append_line(MTC_FAILED_FILE, line, (size_t)n);
}

void mtc_log_keep_error(const char *msg)
{
	const char *path = getenv("MTC_ERROR_FILE");
	char line[4200];
	int fd, n;

	if (!path || !*path)
		return;
	n = snprintf(line, sizeof line, "%s: %s\n", prog, msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line)
		n = sizeof line - 1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		fprintf(stderr, "%s: cannot write '%s': %s\n", prog, path, strerror(errno));
	close(fd);
}

/*
 * A log line is one record: control characters in it (a value from a config
 * or a peer may hold a newline) are written as \n, \t, \r or \xHH, so no
 * one can forge a second line in replicator.errors or on a terminal.
 */
static void escape_controls(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	for (; *src && n + 5 < len; src++) {
		unsigned char c = (unsigned char)*src;
		if (c >= 0x20 && c != 0x7f)
			dst[n++] = (char)c;
		else if (c == '\n' || c == '\t' || c == '\r')
			n += (size_t)snprintf(dst + n, len - n, "\\%c",
					      c == '\n'	  ? 'n'
					      : c == '\t' ? 't'
							  : 'r');
		else
			n += (size_t)snprintf(dst + n, len - n, "\\x%02x", c);
	}
	dst[n] = '\0';
}

void mtc_vlog(int l, const char *fmt, va_list ap)
{
	int saved = errno;
	char raw[4096], msg[4096];
	size_t n;

	if (l > level && !(l <= MTC_LOG_ERROR && status_dir[0]))
		return; /* neither printed nor kept: not worth formatting */
	vsnprintf(raw, sizeof raw, fmt, ap);
	n = strlen(raw);
	if (n && raw[n - 1] == ':')
		snprintf(raw + n, sizeof raw - n, " %s", strerror(saved));
	escape_controls(msg, sizeof msg, raw);
	if (l <= MTC_LOG_ERROR && status_dir[0])
		write_status(l, msg);
	if (l <= MTC_LOG_ERROR)
		mtc_log_keep_error(msg);
	if (l > level)
		return;
	if (progress_drawn) {
		fputs("\r\033[K", stderr);
		progress_drawn = 0;
	}

	if (format == MTC_LOG_JSON) {
		struct timespec ts;
		char stamp[40];
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);
		json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "ts", stamp, "level", level_name[l], "prog",
				      prog, "msg", msg);
		char *line = json_dumps(o, JSON_COMPACT);
		fprintf(stderr, "%s\n", line);
		free(line);
		json_decref(o);
	} else if (l <= MTC_LOG_ERROR) {
		fprintf(stderr, "%s: %s\n", prog, msg);
	} else {
		fprintf(stderr, "%s: %s: %s\n", prog, level_name[l], msg);
	}
	errno = saved;
}

void mtc_log_prepare(struct mtc_log_prepared *p, int l, const char *msg)
{
	char clean[900], *rest = NULL;
	int n;

	escape_controls(clean, sizeof clean, msg);
	p->stamped = format == MTC_LOG_JSON;
	if (p->stamped) {
		json_t *o = json_pack("{s:s,s:s,s:s}", "level", level_name[l], "prog", prog, "msg",
				      clean);
		rest = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		/* what follows the time: `","level":...}` */
		n = snprintf(p->tail, sizeof p->tail, "\",%s\n", rest ? rest + 1 : "}");
		free(rest);
	} else if (l <= MTC_LOG_ERROR) {
		n = snprintf(p->tail, sizeof p->tail, "%s: %s\n", prog, clean);
	} else {
		n = snprintf(p->tail, sizeof p->tail, "%s: %s: %s\n", prog, level_name[l], clean);
	}
	p->len = n < 0 ? 0 : (size_t)n < sizeof p->tail ? (size_t)n : sizeof p->tail - 1;
}

static char *put_digits(char *at, long v, int width)
{
	for (int i = width - 1; i >= 0; i--, v /= 10)
		at[i] = (char)('0' + v % 10);
	return at + width;
}

/* The time as mtc_vlog's JSON records give it, with no call that is not async-signal-safe. */
static size_t utc_stamp(char *out)
{
	struct timespec ts;
	long days, secs, y, m, d, era, doe, yoe, doy, mp;
	char *at = out;

	clock_gettime(CLOCK_REALTIME, &ts);
	days = (long)(ts.tv_sec / 86400);
	secs = (long)(ts.tv_sec % 86400);
	/* civil_from_days (H. Hinnant): the proleptic Gregorian date of days since 1970-01-01 */
	days += 719468;
	era = (days >= 0 ? days : days - 146096) / 146097;
	doe = days - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = yoe + era * 400 + (m <= 2);
	at = put_digits(at, y, 4);
	*at++ = '-';
	at = put_digits(at, m, 2);
	*at++ = '-';
	at = put_digits(at, d, 2);
	*at++ = 'T';
	at = put_digits(at, secs / 3600, 2);
	*at++ = ':';
	at = put_digits(at, secs / 60 % 60, 2);
	*at++ = ':';
	at = put_digits(at, secs % 60, 2);
	*at++ = '.';
	at = put_digits(at, ts.tv_nsec / 1000000, 3);
	*at++ = 'Z';
	return (size_t)(at - out);
}

void mtc_log_write_prepared(const struct mtc_log_prepared *p)
{
	char line[sizeof p->tail + 48];
	size_t n = 0;
	ssize_t rc;

	if (p->stamped) {
		memcpy(line, "{\"ts\":\"", 7);
		n = 7 + utc_stamp(line + 7);
	}
	memcpy(line + n, p->tail, p->len);
	rc = write(2, line, n + p->len);
	(void)rc;
}

#define DEFINE_LOG(name, l)             \
	void name(const char *fmt, ...) \
	{                               \
		va_list ap;             \
		va_start(ap, fmt);      \
		mtc_vlog(l, fmt, ap);   \
		va_end(ap);             \
	}
DEFINE_LOG(mtc_critical, MTC_LOG_CRITICAL)
DEFINE_LOG(mtc_error, MTC_LOG_ERROR)
DEFINE_LOG(mtc_warn, MTC_LOG_WARN)
DEFINE_LOG(mtc_info, MTC_LOG_INFO)
DEFINE_LOG(mtc_debug, MTC_LOG_DEBUG)

int mtc_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}
