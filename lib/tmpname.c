/* Temporaries: named, locked and judged here only; the rule is in tmpname.h. */
#include "tmpname.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "walk.h"
#include "xalloc.h"

#define PREFIX ".mtc-"
#define SUFFIX ".tmp"
#define LABEL_KEEP 64
#define HOST_LEN 8
#define CREATE_TRIES 8

static char host[HOST_LEN + 1];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static atomic_uint seq;

long long mtc_tmp_stale_s(void)
{
	const char *env = getenv("MTC_TMP_STALE_S");
	char *end;
	long long v = env && *env ? strtoll(env, &end, 10) : -1;

	return env && *env && !*end && v >= 0 ? v : MTC_TMP_STALE_S;
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return 0;
	return 1;
}

/* This kernel's boot id: every process that can see a lock taken here shares it. */
static void read_host(void)
{
	char buf[64] = "", name[256] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n >= HOST_LEN && is_hex(buf, HOST_LEN)) {
			memcpy(host, buf, HOST_LEN);
			return;
		}
	}
	uint32_t h = 2166136261u;
	gethostname(name, sizeof name - 1);
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(host, sizeof host, "%08x", (unsigned)h);
}

static const char *this_host(void)
{
	pthread_once(&host_once, read_host);
	return host;
}

int mtc_tmp_is_name(const char *name)
{
	size_t n = strlen(name);
	return n > strlen(PREFIX) + strlen(SUFFIX) && !strncmp(name, PREFIX, strlen(PREFIX)) &&
	       !strcmp(name + n - strlen(SUFFIX), SUFFIX);
}

/* 1 when name was made by a process of this kernel (its lock is seen here for certain). */
static int made_here(const char *name)
{
	const char *h = name + strlen(PREFIX);
	return !strncmp(h, this_host(), HOST_LEN) && h[HOST_LEN] == '-';
}

/* flock, waiting: 0 locked, 1 the filesystem has no locks, -1 failed. */
static int lock_wait(int fd)
{
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL ||
		    errno == EBADF)
			return 1;
		return -1;
	}
	return 0;
}

static void fail_close(int fd)
{
	int e = errno;
	close(fd);
	errno = e;
}

int mtc_tmp_create(const char *dir, const char *label, int is_dir, struct mtc_tmp *t)
{
	t->path = NULL;
	t->fd = -1;
	for (int i = 0; i < CREATE_TRIES; i++) {
		char *p = xasprintf("%s/" PREFIX "%s-%ld-%u.%.*s" SUFFIX, dir, this_host(),
				    (long)getpid(), atomic_fetch_add(&seq, 1), LABEL_KEEP, label);
		int fd;
		struct stat st;

		if (is_dir)
			fd = mkdir(p, 0700) < 0
				     ? -1
				     : open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			int e = errno;
			free(p);
			if (e == EEXIST || e == ENOENT)
				continue;
			errno = e;
			return -1;
		}
		if (lock_wait(fd) < 0) {
			fail_close(fd);
			is_dir ? rmdir(p) : unlink(p);
			free(p);
			return -1;
		}
		/* a sweeper that judged it before it was locked removed it: take another name */
		if (fstat(fd, &st) == 0 && st.st_nlink > 0) {
			t->path = p;
			t->fd = fd;
			return 0;
		}
		close(fd);
		free(p);
	}
	errno = EAGAIN;
	return -1;
}

int mtc_tmp_beside(const char *path, struct mtc_tmp *t)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xasprintf("%.*s", slash == path ? 1 : (int)(slash - path), path)
			  : xstrdup(".");
	int rc = mtc_tmp_create(dir, slash ? slash + 1 : path, 0, t);
	int e = errno;

	free(dir);
	errno = e;
	return rc;
}

static pthread_once_t tmpdir_once = PTHREAD_ONCE_INIT;

static const char *tmpdir(void)
{
	const char *env = getenv("TMPDIR");
	return env && *env ? env : "/tmp";
}

/* Once a process: a program that reads many backups would read $TMPDIR as often. */
static void sweep_tmpdir(void) { mtc_tmp_sweep(tmpdir(), 1, 1, NULL, NULL); }

int mtc_tmp_private_dir(const char *label, struct mtc_tmp *t)
{
	pthread_once(&tmpdir_once, sweep_tmpdir);
	return mtc_tmp_create(tmpdir(), label, 1, t);
}

int mtc_tmp_claim(const char *dir, const char *label, struct mtc_tmp *t)
{
	char *p = xasprintf("%s/" PREFIX "%s" SUFFIX, dir, label);

	t->path = NULL;
	t->fd = -1;
	for (int i = 0; i < CREATE_TRIES; i++) {
		struct stat st;
		int fd;

		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			break;
		fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno != ENOLCK && errno != EOPNOTSUPP &&
		    errno != ENOSYS && errno != EINVAL) {
			if (errno == EWOULDBLOCK)
				errno = EBUSY;
			fail_close(fd);
			break;
		}
		if (fstat(fd, &st) == 0 && st.st_nlink > 0) {
			t->path = p;
			t->fd = fd;
			return 0;
		}
		close(fd);
	}
	int e = errno;
	free(p);
	errno = e ? e : EAGAIN;
	return -1;
}

void mtc_tmp_release(struct mtc_tmp *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	free(t->path);
	t->path = NULL;
}

void mtc_tmp_discard(struct mtc_tmp *t)
{
	int e = errno;
	if (t->path)
		mtc_remove_tree(t->path);
	mtc_tmp_release(t);
	errno = e;
}

struct tree_age {
	long long bytes;
	time_t newest;
};

static time_t touched(const struct stat *st)
{
	return st->st_mtim.tv_sec > st->st_ctim.tv_sec ? st->st_mtim.tv_sec : st->st_ctim.tv_sec;
}

/* A walk's visit (walk.h): a directory's bytes and its newest change. */
static int add_age(const struct mtc_walk_entry *e, void *arg)
{
	struct tree_age *a = arg;
	if (e->error)
		return 0;
	if (S_ISREG(e->st.st_mode))
		a->bytes += e->st.st_size;
	if (touched(&e->st) > a->newest)
		a->newest = touched(&e->st);
	return 0;
}

/*
 * 1 with *fd holding its lock when path's writer is gone (then the caller
 * removes it before closing *fd), 0 when it may live, -1 when it is gone.
 */
static int writer_gone(const char *path, const char *name, const struct stat *st, int *fd,
		       struct tree_age *age)
{
	struct mtc_walk w = {
		.root = path, .flags = MTC_WALK_PHYS, .max_depth = 64, .visit = add_age, .arg = age
	};
	int locked;

	age->bytes = S_ISREG(st->st_mode) ? st->st_size : 0;
	age->newest = touched(st);
	if (S_ISDIR(st->st_mode))
		*fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	else if (S_ISREG(st->st_mode) &&
		 (*fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 && errno != ENOENT)
		*fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	else if (!S_ISREG(st->st_mode))
		*fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0)
		return errno == ENOENT ? -1 : 0;
	locked = flock(*fd, LOCK_EX | LOCK_NB) == 0;
	if (!locked && errno == EWOULDBLOCK) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	if (S_ISDIR(st->st_mode))
		mtc_walk(&w);
	if (locked && made_here(name))
		return 1;
	if (time(NULL) - age->newest >= mtc_tmp_stale_s())
		return 1;
	close(*fd);
	*fd = -1;
	return 0;
}

struct sweep {
	int remove;
	mtc_tmp_found *found;
	void *arg;
	long n;
};

/* A walk's visit (walk.h): each temporary judged, never entered. */
static int sweep_entry(const struct mtc_walk_entry *e, void *arg)
{
	struct sweep *s = arg;
	struct tree_age age;
	int fd = -1, rc;

	if (e->error || !e->depth)
		return 0;
	if (!mtc_tmp_is_name(e->name))
		return 0;
	rc = writer_gone(e->path, e->name, &e->st, &fd, &age);
	if (rc == 1) {
		s->n++;
		if (s->found)
			s->found(e->path, age.bytes, s->arg);
		if (s->remove)
			mtc_remove_tree(e->path);
		close(fd);
	}
	return 1;
}

long mtc_tmp_sweep(const char *dir, int depth, int remove, mtc_tmp_found *found, void *arg)
{
	struct sweep s = { remove, found, arg, 0 };
	struct mtc_walk w = { .root = dir,
			      .flags = MTC_WALK_PHYS,
			      .max_depth = depth > 0 ? depth - 1 : 0,
			      .visit = sweep_entry,
			      .arg = &s };
	struct stat st;

	if (lstat(dir, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (mtc_walk(&w) < 0)
		return -1;
	return s.n;
}
