#ifndef MTC_LOG_H
#define MTC_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum mtc_log_level { MTC_LOG_CRITICAL = -1, MTC_LOG_ERROR, MTC_LOG_WARN, MTC_LOG_INFO, MTC_LOG_DEBUG };
enum mtc_log_format { MTC_LOG_TEXT, MTC_LOG_JSON };

void mtc_log_init(const char *prog);
const char *mtc_prog(void);
void mtc_log_set_level(int level);
int mtc_log_level(void);
int mtc_log_set_format(const char *name);

/*
 * A message ending in ':' gets ": strerror(errno)" appended (sbase's idiom).
 * mtc_error is the one-line error of mtc(7) §9.3: "mtc-<prog>: <what>: <why>".
 */
void mtc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mtc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mtc_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mtc_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mtc_vlog(int level, const char *fmt, va_list ap);

/*
 * $MTC_ERROR_FILE: every error line ("prog: msg") also replaces that file's
 * content, so whoever ran the program (mtc-node) can tell why it ended.
 * mtc_log_keep_error does it for a line printed another way (a usage error).
 */
void mtc_log_keep_error(const char *msg);

/* Writes a one-line reason into err for a caller to report; returns -1. */
int mtc_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A progress line is drawn on stderr: the next log line first erases it. */
void mtc_log_progress_drawn(int drawn);
/* Whether one is drawn now; async-signal-safe. */
int mtc_log_progress_is_drawn(void);

/*
 * A log line made now and written later by a signal handler, in the format
 * and at the level it was made with, stamped when written (JSON records):
 * mtc_log_write_prepared is async-signal-safe.
 */
struct mtc_log_prepared {
	char tail[1024];
	size_t len;
	int stamped;
};
void mtc_log_prepare(struct mtc_log_prepared *p, int level, const char *msg);
void mtc_log_write_prepared(const struct mtc_log_prepared *p);

/*
 * The status files of the local volume (mtc(7) §3.3): once a program knows
 * its local dir, every error is also appended to <dir>/replicator.errors, and
 * a critical one to <dir>/replicator.failed too, which makes the training job
 * stop with that reason. Lines follow the reference replicator's format:
 *   2025-06-30 14:30:01.123 01A2:01A2 <context> [CRI] handshake.accept(0): <message>
 * context is "init" until the config is known, then "job=<name> node=<r>/<n>".
 */
void mtc_log_status_dir(const char *dir, const char *context);
void mtc_critical(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
