#include "handshake.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirwatch.h"
#include "fsutil.h"
#include "local_dir.h"
#include "log.h"
#include "naming.h"
#include "walk.h"
#include "xalloc.h"

#define POLL_MS 1000
#define SETTLE_S 1.0

static int exists(const char *dir, const char *name, struct stat *st)
{
	char *path = xasprintf("%s/%s", dir, name);
	int rc = lstat(path, st) == 0;
	free(path);
	return rc;
}

static int settled(const struct stat *st)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double age = (double)(now.tv_sec - st->st_mtim.tv_sec) +
		     (double)(now.tv_nsec - st->st_mtim.tv_nsec) / 1e9;
	return age >= SETTLE_S;
}

/*
 * Whether no process has dir/name open for writing, so that what it holds is
 * whole: a read lease is granted only then (fcntl(2) F_SETLEASE), and given
 * back at once. It needs the file's owner, CAP_FOWNER or CAP_LEASE, and a
 * file system with leases; elsewhere this says no and the caller waits for
 * an event or the file to settle. A writer opening it meanwhile breaks the
 * lease, which signals SIGIO: ignored for that moment.
 */
static int unwritten(const char *dir, const char *name)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc = 0;

	free(path);
	if (fd < 0)
		return 0;
	sigaction(SIGIO, &ign, &old);
	if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
		rc = 1;
		fcntl(fd, F_SETLEASE, F_UNLCK);
	} else {
		mtc_debug("'%s' may still be written (no read lease: %s)", name, strerror(errno));
	}
	close(fd);
	sigaction(SIGIO, &old, NULL);
	return rc;
}

int mtc_wait_config(const char *dir, double deadline)
{
	struct mtc_dirwatch w;
	struct stat st;
	uint32_t mask = 0;
	int rc;

	if (mtc_dirwatch_open(&w, dir) < 0)
		return -1;
	for (;;) {
		int there = exists(dir, MTC_CONFIG_FILE, &st), present = there && S_ISREG(st.st_mode);
		if (there && !present) {
			rc = 1;
			break;
		}
		if (present && ((mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) || settled(&st) ||
				unwritten(dir, MTC_CONFIG_FILE))) {
			rc = 0;
			break;
		}
		mask = 0;
		rc = mtc_dirwatch_wait(&w, deadline, present ? 250 : POLL_MS, MTC_CONFIG_FILE, &mask);
		if (rc < 0)
			break;
	}
	int e = errno;
	mtc_dirwatch_close(&w);
	errno = e;
	return rc;
}

/* A <hash>.manifest file whose <hash>.data is there: the data's, not the job's. */
static int manifest_of_data(const char *dir, const char *name)
{
	char hash[MTC_HASH_MAX + 1], *path, *data;
	struct stat st;
	int kept;

	if (mtc_parse_manifest_name(name, hash) < 0)
		return 0;
	path = xasprintf("%s/%s", dir, name);
	data = xasprintf("%s/%s.data", dir, hash);
	kept = lstat(path, &st) == 0 && S_ISREG(st.st_mode) && access(data, F_OK) == 0;
	free(data);
	free(path);
	return kept;
}

static int keep(const char *dir, const char *name)
{
	return !fnmatch("*.meta", name, FNM_PERIOD) || !fnmatch("*.data", name, FNM_PERIOD) ||
	       !fnmatch(MTC_SHAPE_PREFIX "*" MTC_SHAPE_SUFFIX, name, FNM_PERIOD) ||
	       !strcmp(name, MTC_JAX_INIT_INFO) || !strcmp(name, MTC_CONFIG_FILE) ||
	       manifest_of_data(dir, name);
}

int mtc_clean_local_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || keep(dir, de->d_name))
			continue;
		char *path = xasprintf("%s/%s", dir, de->d_name);
		mtc_debug("deleting '%s'", path);
		if (mtc_remove_tree(path) < 0) {
			mtc_error("cannot delete '%s':", path);
			rc = -1;
		}
		free(path);
	}
	closedir(d);
	if (rc == 0)
		rc = mtc_fsync_dir(dir);
	return rc;
}

int mtc_wait_gone(const char *dir, const char *name, double deadline)
{
	struct mtc_dirwatch w;
	struct stat st;
	int rc = 0;

	if (mtc_dirwatch_open(&w, dir) < 0)
		return -1;
	while (exists(dir, name, &st))
		if ((rc = mtc_dirwatch_wait(&w, deadline, 200, name, NULL)) < 0)
			break;
	int e = errno;
	mtc_dirwatch_close(&w);
	errno = e;
	return rc < 0 ? -1 : 0;
}

static int find_marker(const char *dir, char **name, long long *step)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct mtc_ckpt_name n;
	int found = 0;

	if (!d)
		return -1;
	while (!found && (de = readdir(d)))
		if (mtc_parse_ckpt_name(de->d_name, &n) == 0 && n.ext == MTC_EXT_RESTORE) {
			*name = xstrdup(de->d_name);
			*step = n.step;
			found = 1;
		}
	closedir(d);
	return found;
}

int mtc_wait_restore_marker(const char *dir, double deadline, char **name, long long *step)
{
	struct mtc_dirwatch w;
	int rc;

	if (mtc_dirwatch_open(&w, dir) < 0)
		return -1;
	while ((rc = find_marker(dir, name, step)) == 0)
		if (mtc_dirwatch_wait(&w, deadline, 500, NULL, NULL) < 0) {
			rc = -1;
			break;
		}
	int e = errno;
	mtc_dirwatch_close(&w);
	errno = e;
	return rc < 0 ? -1 : 0;
}

/* The YAML 1.1 scalars PyYAML would read back as a number, bool or null. */
static const char *const typed_scalar =
	"^([-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)"
	"|[-+]?([0-9][0-9_]*)?\\.[0-9.]*([eE][-+][0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)"
	"|~|null|Null|NULL|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$";

/* PyYAML quotes a plain string that would read back as another type or break the syntax. */
static int needs_quotes(const char *s)
{
	size_t n = strlen(s);
	regex_t re;
	int typed;

	if (!n || strchr(",[]{}#&*!|>'\"%@` ", s[0]) ||
	    (strchr("-?:", s[0]) && (s[1] == ' ' || !s[1])) || s[n - 1] == ':' || s[n - 1] == ' ' ||
	    strstr(s, ": ") || strstr(s, " #"))
		return 1;
	if (regcomp(&re, typed_scalar, REG_EXTENDED | REG_NOSUB))
		return 1;
	typed = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return typed;
}

static void append(char **buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char **buf, const char *fmt, ...)
{
	va_list ap;
	char *add, *joined;
	va_start(ap, fmt);
	if (vasprintf(&add, fmt, ap) < 0)
		add = NULL;
	va_end(ap);
	joined = xasprintf("%s%s", *buf, add ? add : "");
	free(add);
	free(*buf);
	*buf = joined;
}

static char *flow_list(const int *v, int n)
{
	char *s = xstrdup("[");
	for (int i = 0; i < n; i++)
		append(&s, "%s%d", i ? ", " : "", v[i]);
	append(&s, "]");
	return s;
}

char *mtc_render_config_yaml(const struct mtc_config *c, enum mtc_yaml_style style)
{
	char *y = xstrdup("");
	const char *fw = mtc_framework_name(c->framework);

	if (style == MTC_STYLE_ORBAX) {
		char *peers = flow_list(c->peer_ranks, c->peer_ranks ? c->n_peer_ranks : 0);
		append(&y, "job-name: %s\nframework: %s\n", c->job_name, fw);
		if (c->data_parallelism > 0)
			append(&y, "assume-data-parallelism: %d\n", c->data_parallelism);
		append(&y, "node-rank: %d\nnodes: %d\npeer-ranks: %s\n", c->node_rank, c->nodes, peers);
		free(peers);
		if (c->backup_interval_steps >= 0)
			append(&y, "backup-interval-steps: %lld\n", c->backup_interval_steps);
		if (c->backup_interval_minutes >= 0)
			append(&y, "backup-interval-minutes: %lld\n", c->backup_interval_minutes);
		if (c->workers_per_node != 1)
			append(&y, "workers-per-node: %d\n", c->workers_per_node);
		y[strlen(y) - 1] = '\0';
		return y;
	}
	append(&y, needs_quotes(c->job_name) ? "job-name: '%s'\n" : "job-name: %s\n", c->job_name);
	append(&y, "framework: %s\nnode-rank: %d\nnodes: %d\npeers-per-node: %d\n", fw, c->node_rank,
	       c->nodes, c->peers_per_node);
	if (c->data_parallelism > 0)
		append(&y, "assume-data-parallelism: %d\n", c->data_parallelism);
	if (c->backup_interval_minutes >= 0)
		append(&y, "backup-interval-minutes: %lld\n", c->backup_interval_minutes);
	if (c->backup_interval_steps >= 0)
		append(&y, "backup-interval-steps: %lld\n", c->backup_interval_steps);
	if (c->workers_per_node != 1)
		append(&y, "workers-per-node: %d\n", c->workers_per_node);
	if (c->peer_ranks && c->n_peer_ranks == 0)
		append(&y, "peer-ranks: []\n");
	else if (c->peer_ranks) {
		append(&y, "peer-ranks:\n");
		for (int i = 0; i < c->n_peer_ranks; i++)
			append(&y, "- %d\n", c->peer_ranks[i]);
	}
	return y;
}
