/*
 * The pre-hash thread (see prehash.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "digest.h"
#include "log.h"
#include "naming.h"
#include "prehash.h"
#include "walk.h"
#include "xalloc.h"

struct mtc_prehash {
	const char *dir;
	const struct mtc_config *cfg;
	int threads;
	struct mtc_digest_cache *cache;
	int threaded; /* a thread of its own, which stop ends */
	enum mtc_background bg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;
};

struct pass {
	struct mtc_prehash *p;
	long long bytes;
	double looking; /* seconds spent walking and looking up, not hashing */
};

static int prefixed_step(const char *name, const char *rest)
{
	size_t n = strspn(name, "0123456789");
	return n > 0 && !strncmp(name + n, rest, strlen(rest));
}

/* What a framework writes, or has just saved, in the local dir. */
static int in_the_making(const struct mtc_prehash *p, const char *name)
{
	struct mtc_ckpt_name n;
	long long step;
	if (mtc_parse_step_dir(name, &step) == 0 || prefixed_step(name, ".orbax-checkpoint-tmp"))
		return 1;
	if (!strncmp(name, "step=", 5) && prefixed_step(name + 5, ""))
		return 1;
	return mtc_parse_ckpt_name(name, &n) == 0 && n.ext == MTC_EXT_SAVE &&
	       !strcmp(n.job, p->cfg->job_name) && n.rank == p->cfg->node_rank;
}

static int stopping(struct mtc_prehash *p)
{
	pthread_mutex_lock(&p->lock);
	int stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

/* A commit that holds the cache takes over at once; so does a stop. */
static int give_up(void *arg)
{
	struct mtc_prehash *p = arg;
	return mtc_digest_cache_held(p->cache) || (p->threaded && stopping(p));
}

/* Before each piece of hashing: in the idle class, a CPU nothing else wants (threads.h). */
static int may_go(void *arg)
{
	struct mtc_prehash *p = arg;
	if (give_up(p))
		return 0;
	return p->bg != MTC_BG_IDLE || mtc_spare_cpu_wait(MTC_PREHASH_SPARE_WAIT_S, give_up, p);
}

/*
 * An OCDBT data file (<store>/d/<32 hex>): tensorstore appends to it and
 * never writes its bytes again, so its start can be hashed while it grows.
 */
static int appended_only(const struct mtc_prehash *p, const char *path)
{
	const char *name = strrchr(path, '/');
	return p->cfg->framework == MTC_FW_ORBAX && name && name - path >= 2 &&
	       !strncmp(name - 2, "/d", 2) && strlen(name + 1) == 32 &&
	       strspn(name + 1, "0123456789abcdef") == 32;
}

/* Hashes the next segments of a growing file that are whole and not its last. */
static void extend_prefix(struct pass *ps, int fd, const struct stat *st)
{
	struct mtc_prehash *p = ps->p;
	uint8_t *cvs;
	struct mtc_digest_gate gate = { may_go, p };
	size_t from = mtc_digest_cache_prefix(p->cache, st, fd, NULL, &cvs);
	size_t to = st->st_size > 0 ? (size_t)((st->st_size - 1) / MTC_DIGEST_SEG_BYTES) : 0;
	if (to > from + MTC_PREHASH_BATCH)
		to = from + MTC_PREHASH_BATCH;
	if (to > from && mtc_digest_cache_begin(p->cache)) {
		cvs = xrealloc(cvs, 32 * to);
		long long end = mtc_digest_fd_segments(fd, from, to, p->threads, cvs, &gate);
		if (end > (long long)from) {
			mtc_digest_cache_put_prefix(p->cache, st, fd, from, (size_t)end, cvs);
			ps->bytes += (end - (long long)from) * MTC_DIGEST_SEG_BYTES;
		}
		mtc_digest_cache_end(p->cache);
	}
	free(cvs);
}

/*
 * A walk's visit (walk.h): a quiet regular file whose digest is not known is
 * hashed; of a growing one that is only appended to, what is written.
 */
static int consider(const struct mtc_walk_entry *e, void *arg)
{
	struct pass *ps = arg;
	struct mtc_prehash *p = ps->p;
	struct stat before, after;
	struct mtc_digest_gate gate = { may_go, p };
	char hex[MTC_DIGEST_LEN];
	if (e->error || !S_ISREG(e->st.st_mode) || mtc_digest_cache_get(p->cache, &e->st, hex))
		return 0;
	if (p->threaded && stopping(p))
		return -1;
	/* Read through one descriptor: the step's renames under it change nothing. */
	double since = mtc_wall_now();
	int fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &before) < 0) {
		;
	} else if (mtc_digest_cache_quiet(&before, since)) {
		if (mtc_digest_cache_begin(p->cache)) {
			if (mtc_digest_fd_read(fd, &before, p->threads, p->cache, &gate, hex) == 0 &&
			    fstat(fd, &after) == 0) {
				mtc_digest_cache_put(p->cache, since, &before, &after, hex);
				ps->bytes += before.st_size;
			}
			mtc_digest_cache_end(p->cache);
		}
	} else if (S_ISREG(before.st_mode) && appended_only(p, e->path)) {
		extend_prefix(ps, fd, &before);
	}
	close(fd);
	ps->looking -= mtc_wall_now() - since;
	return 0;
}

/* One look at the dir; the seconds it took, hashing aside, in *looking. */
static long long pass(struct mtc_prehash *p, double *looking)
{
	struct pass ps = { p, 0, -mtc_wall_now() };
	DIR *d = opendir(p->dir);
	struct dirent *de;
	*looking = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!in_the_making(p, de->d_name))
			continue;
		char *path = xasprintf("%s/%s", p->dir, de->d_name);
		struct mtc_walk w = { .root = path,
				      .flags = MTC_WALK_PHYS,
				      .max_depth = 64,
				      .visit = consider,
				      .arg = &ps };
		struct stat st;
		int rc = 0;
		if (lstat(path, &st) < 0)
			;
		else if (S_ISDIR(st.st_mode))
			rc = mtc_walk(&w);
		else if (S_ISREG(st.st_mode))
			rc = consider(&(struct mtc_walk_entry){ .path = path, .st = st }, &ps);
		free(path);
		if (rc < 0)
			break;
	}
	closedir(d);
	mtc_digest_cache_sweep(p->cache, MTC_DIGEST_KEEP_S);
	*looking = ps.looking + mtc_wall_now();
	return ps.bytes;
}

long long mtc_prehash_pass(const char *dir, const struct mtc_config *cfg, int threads,
			   struct mtc_digest_cache *cache)
{
	struct mtc_prehash p = {
		.dir = dir, .cfg = cfg, .threads = threads, .cache = cache, .bg = MTC_BG_NORMAL
	};
	double looking;
	return pass(&p, &looking);
}

static void *run(void *arg)
{
	struct mtc_prehash *p = arg;
	pthread_setname_np(pthread_self(), "mtc-prehash");
	if (mtc_background_enter(p->bg) < 0)
		mtc_debug("hashing before the commit stays at normal priority: %s", strerror(errno));
	for (;;) {
		double looking, wait;
		long long bytes = pass(p, &looking);
		if (bytes)
			mtc_debug("hashed %lld bytes of steps in the making", bytes);
		/* a dir of many files is looked at less often: a fifth of the time at most */
		wait = 4 * looking > MTC_PREHASH_PASS_S ? 4 * looking : MTC_PREHASH_PASS_S;
		struct timespec until = mtc_wall_after(wait);
		pthread_mutex_lock(&p->lock);
		while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
			;
		int stop = p->stop;
		pthread_mutex_unlock(&p->lock);
		if (stop)
			return NULL;
	}
}

struct mtc_prehash *mtc_prehash_start(const char *dir, const struct mtc_config *cfg, int threads,
				      enum mtc_background bg, struct mtc_digest_cache *cache)
{
	struct mtc_prehash *p = xcalloc(1, sizeof *p);
	*p = (struct mtc_prehash){
		.dir = dir, .cfg = cfg, .threads = threads, .cache = cache, .threaded = 1, .bg = bg
	};
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	int e = pthread_create(&p->thread, NULL, run, p);
	if (e) {
		errno = e;
		mtc_error("cannot start hashing steps before their commit:");
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	return p;
}

void mtc_prehash_stop(struct mtc_prehash *p)
{
	if (!p)
		return;
	mtc_thread_stop(p->thread, &p->lock, &p->wake, &p->stop);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
