/*
 * The steady-state loop (steady.h). Invariant: local GC never drops the
 * agreed step, a step newer than it, or the step a running backup reads.
 */
#include "steady.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backups.h"
#include "clock.h"
#include "local_dir.h"
#include "commit.h"
#include "json_out.h"
#include "coord/coord.h"
#include "coord/coord_client.h"
#include "dirwatch.h"
#include "exitcode.h"
#include "fault.h"
#include "fsutil.h"
#include "gc.h"
#include "inventory.h"
#include "local_dir.h"
#include "log.h"
#include "naming.h"
#include "node_status.h"
#include "peer/peer_auth.h"
#include "peer/peer_client.h"
#include "prehash.h"
#include "store/store.h"
#include "threads.h"
#include "xalloc.h"

/* A .data a peer just pushed is safe from gc this long, until its .meta lands (gc.h). */
#define GC_GRACE_S 10

#define SAFETY_STEPS 32

/* How long the syncs wait for the last backup to be read at the start. */
#define SEED_WAIT_S 10

struct loop {
	const struct mtc_steady_opts *o;
	struct mtc_peer_client pc;
	struct mtc_coord_client cc;
	int coordinated;
	long long committed, pushed, replicated;
	double next_push_try;
	/* One push at a time, in its own thread: a dark peer never holds up commits and syncs. */
	struct push {
		pthread_t thread;
		int running;
		atomic_int done;
		long long step;
		json_t *sum;
		int failed;
		double ended; /* UTC */
	} push;
	/* A sync waits for the other ranks in its own thread: a late rank never holds up commits. */
	struct sync {
		pthread_t thread;
		int running;
		atomic_int done;
		json_t *report, *answer;
		long long step; /* the replicated step the last report gave */
		int rc;
		char err[1024];
	} sync;
	pid_t child;
	int child_out; /* the read end of the child's stdout (its --json summary); -1: none */
	char child_name[17];
	long long child_step;
	long long last_backup_time, last_backup_step;
	char last_backup_name[17];
	struct seed *seed; /* the last backup, being read (seed_start) */
	double seed_started;
	int seed_late;
	double sync_failing_since, sync_error_logged;
	char attempted[17];			/* the last backup this process started or found done */
	struct mtc_node_status status, written; /* for the daemon's metrics (node_status.h) */
	struct safety {
		long long step;
		double appeared, committed; /* UTC seconds; committed 0: not yet */
	} safe[SAFETY_STEPS];		    /* the newest committed steps, by step */
};

/* The loop after a phase (commit, push, sync, backup): a point of lib/fault.c. */
static void phase_done(const char *phase)
{
	mtc_fault_kill(phase, NULL);
	mtc_fault_stall(phase, NULL);
}

/* The newest valid backup becomes the last one, so a restart does not repeat it at once. */
/*
 * The newest valid backup, read once at the start in a detached thread of its
 * own: a bucket that does not answer (its retries last minutes) never holds up
 * the loop. The thread and the loop hand it over by state; whichever of them
 * is done with it last frees it.
 */
enum { SEED_RUNNING, SEED_DONE, SEED_ORPHANED };

struct seed {
	char *url, *token_file, *s3_endpoint;
	int nodes, workers;
	enum mtc_background background;
	atomic_int state;
	int found;
	long long step, when;
	char name[17];
};

static void seed_free(struct seed *sd)
{
	free(sd->url);
	free(sd->token_file);
	free(sd->s3_endpoint);
	free(sd);
}

/* The calling thread becomes background work, named name (threads.h). */
static void background(enum mtc_background b, const char *name)
{
	pthread_setname_np(pthread_self(), name);
	if (mtc_background_enter(b) < 0)
		mtc_debug("%s stays at normal priority: %s", name, strerror(errno));
}

static void *seed_main(void *arg)
{
	struct seed *sd = arg;
	struct mtc_store_options so = { .token_file = sd->token_file, .s3_endpoint = sd->s3_endpoint };
	struct mtc_backup_entry *list = NULL;
	struct mtc_store *s;
	char err[512];
	size_t n = 0;

	background(sd->background, "mtc-seed");
	if (mtc_store_open(sd->url, &so, &s, err, sizeof err) < 0) {
		mtc_warn("cannot open '%s': %s", sd->url, err);
	} else {
		if (mtc_backups_list(s, &list, &n) == 0)
			for (size_t i = 0; i < n && i < 8 && !sd->found; i++) {
				struct mtc_backup_info info;
				if (mtc_backup_inspect(s, list[i].name, sd->nodes, sd->workers, &info) <
				    0)
					continue;
				if ((sd->found = info.state == MTC_BACKUP_VALID)) {
					sd->step = info.step;
					sd->when = (long long)list[i].when;
					snprintf(sd->name, sizeof sd->name, "%s", list[i].name);
				}
				mtc_backup_info_free(&info);
			}
		mtc_backups_free_list(list, n);
		mtc_store_close(s);
	}
	if (atomic_exchange(&sd->state, SEED_DONE) == SEED_ORPHANED)
		seed_free(sd);
	return NULL;
}

static void seed_start(struct loop *l)
{
	const struct mtc_steady_opts *o = l->o;
	struct seed *sd;
	pthread_attr_t attr;
	pthread_t t;

	if (!o->backup)
		return;
	sd = xcalloc(1, sizeof *sd);
	sd->url = xasprintf("%s/%s", o->backup, o->cfg->job_name);
	sd->token_file = o->store_token_file ? xstrdup(o->store_token_file) : NULL;
	sd->s3_endpoint = o->store_s3_endpoint ? xstrdup(o->store_s3_endpoint) : NULL;
	sd->nodes = o->cfg->nodes;
	sd->workers = o->cfg->workers_per_node;
	sd->background = o->background;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, seed_main, sd) == 0) {
		l->seed = sd;
		l->seed_started = mtc_now();
	} else {
		seed_free(sd);
	}
	pthread_attr_destroy(&attr);
}

/* Takes backup name (at when, of step) as the last one when it is newer: 1, else 0. */
static int remember_backup(struct loop *l, const char *name, long long when, long long step)
{
	if (l->last_backup_time >= 0 && strcmp(name, l->last_backup_name) <= 0)
		return 0;
	l->last_backup_time = when;
	l->last_backup_step = step;
	snprintf(l->last_backup_name, sizeof l->last_backup_name, "%s", name);
	return 1;
}

/*
 * 1 while the last backup is still being read, for at most SEED_WAIT_S (the
 * syncs wait for it: they report it); then the loop goes on without it and
 * takes it whenever it comes.
 */
static int seed_pending(struct loop *l)
{
	struct seed *sd = l->seed;

	if (!sd)
		return 0;
	if (atomic_load(&sd->state) == SEED_DONE) {
		if (sd->found && remember_backup(l, sd->name, sd->when, sd->step)) {
			l->status.backup_step = sd->step;
			l->status.backup_time = sd->when;
			mtc_info("last backup: '%s' of step %lld", sd->name, sd->step);
		}
		seed_free(sd);
		l->seed = NULL;
		return 0;
	}
	if (mtc_now() - l->seed_started < SEED_WAIT_S)
		return 1;
	if (!l->seed_late) {
		mtc_warn("the backups in '%s' cannot be read yet: going on without the last one",
			 sd->url);
		l->seed_late = 1;
	}
	return 0;
}

/* At the end: a seed still running frees itself when it is done. */
static void seed_stop(struct loop *l)
{
	if (l->seed && atomic_exchange(&l->seed->state, SEED_ORPHANED) == SEED_DONE)
		seed_free(l->seed);
	l->seed = NULL;
}

/* Time to safety (node_status.h): the slot of step, or NULL when it is not known. */
static struct safety *safety_of(struct loop *l, long long step)
{
	for (int i = 0; i < SAFETY_STEPS; i++)
		if (l->safe[i].appeared > 0 && l->safe[i].step == step)
			return &l->safe[i];
	return NULL;
}

/* A step committed: keep its appearance (a step's first worker's), in the slot of the oldest. */
static void safety_committed(struct loop *l, const struct mtc_commit_result *r)
{
	struct safety *s = safety_of(l, r->step);
	double now = mtc_wall_now();

	if (r->appeared <= 0)
		return;
	if (!s) {
		s = &l->safe[0];
		for (int i = 1; i < SAFETY_STEPS; i++)
			if (l->safe[i].appeared <= 0 || l->safe[i].step < s->step)
				s = &l->safe[i];
		*s = (struct safety){ r->step, r->appeared, now };
	} else if (r->appeared < s->appeared) {
		s->appeared = r->appeared;
	}
	s->committed = now;
	mtc_histogram_observe(&l->status.safe[MTC_SAFE_COMMIT], now - r->appeared);
}

/* The step reached a stage at now (UTC): observed, logged, and with --json one line on stdout. */
static void safety_reached(struct loop *l, long long step, enum mtc_safe_stage stage, double now)
{
	struct safety *s = safety_of(l, step);
	json_t *j;

	if (!s)
		return;
	mtc_histogram_observe(&l->status.safe[stage], now - s->appeared);
	mtc_info("step %lld %s %.1f s after it appeared", step,
		 stage == MTC_SAFE_PEERS ? "is on every peer" : "is in a backup", now - s->appeared);
	if (!l->o->json)
		return;
	j = json_pack("{s:I, s:o}", "step", (json_int_t)step, "to-commit",
		      mtc_json_seconds(s->committed - s->appeared));
	json_object_set_new(j, stage == MTC_SAFE_PEERS ? "to-peers" : "to-backup",
			    mtc_json_seconds(now - s->appeared));
	mtc_json_print(j);
}

static void on_commit(const struct mtc_commit_result *r, void *arg)
{
	struct loop *l = arg;
	if (r->step > l->committed)
		l->committed = r->step;
	safety_committed(l, r);
}

/* Steps with a .meta of this node (any_node: of any node) in the dir, ascending; count or -1. */
static int steps_in_dir(struct loop *l, int any_node, long long **steps, char (*hash)[MTC_HASH_MAX + 1],
			long long for_step)
{
	struct mtc_inventory inv;
	int n = 0;

	*steps = NULL;
	if (mtc_inventory_scan(l->o->dir, &inv) < 0)
		return -1;
	*steps = xcalloc(inv.n_metas + 1, sizeof **steps);
	for (size_t i = 0; i < inv.n_metas; i++) {
		const struct mtc_inv_meta *m = &inv.metas[i];
		if (strcmp(m->job, l->o->cfg->job_name) ||
		    (!any_node && m->node != l->o->cfg->node_rank))
			continue;
		if (hash && m->step == for_step && m->worker == 0 && m->node == l->o->cfg->node_rank)
			snprintf(*hash, sizeof *hash, "%s", m->hash);
		(*steps)[n++] = m->step;
	}
	mtc_inventory_free(&inv);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && (*steps)[j - 1] > (*steps)[j]; j--) {
			long long t = (*steps)[j];
			(*steps)[j] = (*steps)[j - 1];
			(*steps)[j - 1] = t;
		}
	{
		int u = 0;
		for (int i = 0; i < n; i++)
			if (!u || (*steps)[u - 1] != (*steps)[i])
				(*steps)[u++] = (*steps)[i];
		n = u;
	}
	return n;
}

static long long newest_own_step(struct loop *l)
{
	long long *steps, best = -1;
	int n = steps_in_dir(l, 0, &steps, NULL, -1);
	if (n > 0)
		best = steps[n - 1];
	free(steps);
	return best;
}

static void *push_main(void *arg)
{
	struct loop *l = arg;
	const struct mtc_steady_opts *o = l->o;

	l->push.sum = mtc_peer_push_step(&l->pc, o->dir, o->cfg->job_name, l->push.step,
					 o->cfg->node_rank, o->peers, o->n_peers, &l->push.failed);
	l->push.ended = mtc_wall_now();
	atomic_store(&l->push.done, 1);
	return NULL;
}

/* The push's own thread: background work (the loop runs push_main itself when it cannot start). */
static void *push_thread(void *arg)
{
	struct loop *l = arg;
	background(l->o->background, "mtc-push");
	return push_main(arg);
}

/* What a finished push means: the step is replicated, or an ERROR per peer and a later try. */
static void push_done(struct loop *l)
{
	const struct mtc_steady_opts *o = l->o;
	long long step = l->push.step;
	json_t *sum = l->push.sum, *p;
	size_t i;

	if (l->push.failed < 0) {
		mtc_error("cannot push step %lld: no .meta of node %d in '%s'", step, o->cfg->node_rank,
			  o->dir);
		l->next_push_try = mtc_now() + (o->sync_s > 0 ? o->sync_s : 10);
	} else if (l->push.failed == 0) {
		mtc_info("pushed step %lld to %d peer%s in %.2f s", step, o->n_peers,
			 o->n_peers == 1 ? "" : "s", json_real_value(json_object_get(sum, "seconds")));
		l->pushed = l->replicated = step;
		safety_reached(l, step, MTC_SAFE_PEERS, l->push.ended);
		phase_done("push");
	} else {
		json_array_foreach (json_object_get(sum, "peers"), i, p)
			if (!json_is_true(json_object_get(p, "ok")))
				mtc_error("cannot push step %lld to '%s': %s", step,
					  json_string_value(json_object_get(p, "peer")) ?: "?",
					  json_string_value(json_object_get(p, "error")) ?: "failed");
		l->next_push_try = mtc_now() + (o->sync_s > 0 ? o->sync_s : 10);
	}
	json_decref(sum);
	l->push.sum = NULL;
}

/* Waits for a running push (block) or takes one that finished; 1 while one still runs. */
static int push_reap(struct loop *l, int block)
{
	if (!l->push.running)
		return 0;
	if (!block && !atomic_load(&l->push.done))
		return 1;
	pthread_join(l->push.thread, NULL);
	l->push.running = 0;
	push_done(l);
	return 0;
}

/* Starts the push of the newest committed step once the last push ended. */
static void push_new(struct loop *l)
{
	long long newest = newest_own_step(l);

	if (newest > l->committed)
		l->committed = newest;
	if (push_reap(l, 0) || l->committed <= l->pushed || mtc_now() < l->next_push_try)
		return;
	if (!l->o->n_peers) {
		l->pushed = l->replicated = l->committed;
		safety_reached(l, l->committed, MTC_SAFE_PEERS, mtc_wall_now());
		return;
	}
	l->push.step = l->committed;
	atomic_store(&l->push.done, 0);
	if (pthread_create(&l->push.thread, NULL, push_thread, l) == 0) {
		l->push.running = 1;
		return;
	}
	push_main(l);
	push_done(l);
}

/* The child's --json summary as one log line; its pipe is closed. */
static void log_backup_done(struct loop *l)
{
	char buf[4096];
	ssize_t n = l->child_out >= 0 ? read(l->child_out, buf, sizeof buf - 1) : -1;
	json_t *j;

	buf[n > 0 ? n : 0] = '\0';
	j = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	if (json_is_object(j))
		mtc_info("backup '%s' of step %lld done: %lld bytes, %lld objects (%lld skipped) "
			 "in %.3f s",
			 l->child_name, l->child_step,
			 (long long)json_integer_value(json_object_get(j, "bytes")),
			 (long long)json_integer_value(json_object_get(j, "objects")),
			 (long long)json_integer_value(json_object_get(j, "skipped")),
			 json_number_value(json_object_get(j, "seconds")));
	else
		mtc_info("backup '%s' of step %lld done", l->child_name, l->child_step);
	json_decref(j);
}

static void reap_backup(struct loop *l, int block)
{
	int status;
	pid_t p;

	if (l->child <= 0)
		return;
	p = waitpid(l->child, &status, block ? 0 : WNOHANG);
	if (p == 0 || (p < 0 && errno == EINTR))
		return;
	if (p > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		log_backup_done(l);
		safety_reached(l, l->child_step, MTC_SAFE_BACKUP, mtc_wall_now());
		l->status.backup_step = l->child_step;
		l->status.backup_time = (long long)time(NULL);
	} else if (p > 0 && WIFEXITED(status)) {
		l->status.backups_failed++;
		mtc_error("backup '%s' of step %lld failed (mtc-backup exit %d); it is retried at "
			  "the next interval",
			  l->child_name, l->child_step, WEXITSTATUS(status));
	} else {
		l->status.backups_failed++;
		mtc_error("backup '%s' of step %lld failed (mtc-backup killed by signal %d); it is "
			  "retried at the next interval",
			  l->child_name, l->child_step,
			  p > 0 && WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	if (l->child_out >= 0)
		close(l->child_out);
	l->child_out = -1;
	l->child = 0;
}

/*
 * Runs mtc-backup in a child: the loop never waits on the bucket. It skips
 * what the backup already holds and refuses a name bound to another step.
 */
static void start_backup(struct loop *l, const char *name, long long step)
{
	const struct mtc_steady_opts *o = l->o;
	char stepbuf[32];
	const char *argv[20];
	int n = 0;
	time_t when;
	pid_t p;
	int out[2];

	if (!o->backup || l->child > 0 || !strcmp(name, l->attempted))
		return;
	snprintf(l->attempted, sizeof l->attempted, "%s", name);
	if (mtc_parse_backup_name(name, &when) == 0)
		remember_backup(l, name, (long long)when, step);
	snprintf(stepbuf, sizeof stepbuf, "%lld", step);
	argv[n++] = o->backup_prog;
	argv[n++] = "--dir";
	argv[n++] = o->dir;
	argv[n++] = "--config";
	argv[n++] = o->config_path;
	argv[n++] = "--step";
	argv[n++] = stepbuf;
	argv[n++] = "--to";
	argv[n++] = o->backup;
	argv[n++] = "--name";
	argv[n++] = name;
	argv[n++] = "--json";
	if (o->store_token_file) {
		argv[n++] = "--gcs-token-file";
		argv[n++] = o->store_token_file;
	}
	if (o->store_s3_endpoint) {
		argv[n++] = "--s3-endpoint";
		argv[n++] = o->store_s3_endpoint;
	}
	argv[n] = NULL;
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0) {
		mtc_error("cannot start mtc-backup for '%s':", name);
		return;
	}
	p = fork();
	if (p < 0) {
		mtc_error("cannot start mtc-backup for '%s':", name);
		close(out[0]);
		close(out[1]);
		return;
	}
	if (p == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		/* its summary comes back through the pipe; a blocking write is fine for one line */
		fcntl(out[1], F_SETFL, 0);
		dup2(out[1], STDOUT_FILENO);
		mtc_background_enter(o->background); /* inherited by mtc-backup's threads */
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "%s: cannot run '%s': %s\n", mtc_prog(), argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	l->child_out = out[0];
	mtc_info("backup '%s' of step %lld started (pid %d)", name, step, (int)p);
	phase_done("backup");
	l->child = p;
	snprintf(l->child_name, sizeof l->child_name, "%s", name);
	l->child_step = step;
}

static void gc_to(struct loop *l, long long agreed)
{
	long long *steps, *keep;
	size_t nk = 0;
	int n = steps_in_dir(l, 1, &steps, NULL, -1);
	struct mtc_gc_opts g = { l->o->dir, l->o->cfg, NULL, 0, 0, 0, 0, GC_GRACE_S };
	struct mtc_gc_stats st;

	if (n < 0 || agreed < 0) {
		free(steps);
		return;
	}
	keep = xcalloc((size_t)n + 2, sizeof *keep);
	keep[nk++] = agreed;
	if (l->child > 0 && l->child_step != agreed)
		keep[nk++] = l->child_step;
	for (int i = 0; i < n; i++)
		if (steps[i] > agreed)
			keep[nk++] = steps[i];
	g.keep_steps = keep;
	g.n_keep = nk;
	if (mtc_gc(&g, &st) < 0)
		mtc_error("local gc to step %lld failed", agreed);
	else if (st.deleted_meta || st.deleted_data)
		mtc_info("gc to step %lld: %zu .meta and %zu .data deleted", agreed, st.deleted_meta,
			 st.deleted_data);
	free(keep);
	free(steps);
}

static int backup_requested(struct loop *l)
{
	long long *steps;
	char hash[MTC_HASH_MAX + 1] = "";
	int n = steps_in_dir(l, 0, &steps, &hash, l->replicated), found = 0;
	free(steps);
	if (n > 0 && *hash) {
		char *p = xasprintf("%s/%s.data/%s", l->o->dir, hash, MTC_BACKUP_REQUESTED);
		found = access(p, F_OK) == 0;
		free(p);
	}
	return found;
}

/* After a restore pinned by restore.version: once a newer step is saved, rank 0 unpins. */
static void unpin_after_new_step(struct loop *l)
{
	const struct mtc_steady_opts *o = l->o;
	char *path = xasprintf("%s/%s", o->dir, MTC_PINNED_FILE), *text = NULL, cur[256], err[512];
	json_t *j = NULL;
	long long step;
	const char *name;
	struct mtc_store *s = NULL;

	if (mtc_read_file(path, 4096, &text, NULL) < 0)
		goto out;
	j = json_loads(text, 0, NULL);
	step = json_integer_value(json_object_get(j, "step"));
	name = json_string_value(json_object_get(j, "backup"));
	if (!name || l->committed <= step)
		goto out;
	if (o->cfg->node_rank == 0 && o->backup) {
		char *url = xasprintf("%s/%s", o->backup, o->cfg->job_name);
		struct mtc_store_options so = { .token_file = o->store_token_file,
						.s3_endpoint = o->store_s3_endpoint };
		if (mtc_store_open(url, &so, &s, err, sizeof err) < 0) {
			mtc_error("cannot open '%s' to remove restore.version: %s", url, err);
			free(url);
			goto out;
		}
		free(url);
		if (mtc_backups_restore_version(s, cur, sizeof cur) == 1 && !strcmp(cur, name)) {
			if (mtc_store_delete(s, "restore.version") < 0 && errno != ENOENT) {
				mtc_error("cannot remove '%s/restore.version': %s", mtc_store_url(s),
					  mtc_store_error(s));
				goto out;
			}
			mtc_info("step %lld saved after the restore pinned to '%s': restore.version removed",
				 l->committed, name);
		}
	}
	unlink(path);
out:
	mtc_store_close(s);
	json_decref(j);
	free(text);
	free(path);
}

static void *sync_main(void *arg)
{
	struct loop *l = arg;
	l->sync.rc = mtc_coord_post(&l->cc, "sync", l->sync.report, 1, mtc_now() + 30, &l->sync.answer,
				    l->sync.err, sizeof l->sync.err);
	atomic_store(&l->sync.done, 1);
	return NULL;
}

/* Posts the report in the sync thread (or here, when it cannot start). */
static void sync_start(struct loop *l, json_t *report)
{
	l->sync.report = report;
	l->sync.answer = NULL;
	l->sync.err[0] = '\0';
	atomic_store(&l->sync.done, 0);
	if (pthread_create(&l->sync.thread, NULL, sync_main, l) == 0)
		l->sync.running = 1;
	else
		sync_main(l);
}

/* 1 with the sync's outcome taken (its report freed) once it is over; 0 while it runs. */
static int sync_reap(struct loop *l, int block)
{
	if (l->sync.running) {
		if (!block && !atomic_load(&l->sync.done))
			return 0;
		pthread_join(l->sync.thread, NULL);
		l->sync.running = 0;
	}
	json_decref(l->sync.report);
	l->sync.report = NULL;
	return 1;
}

/* One sync: 1 when answered (next sync after the interval), 0 when still waiting. */
static int sync_once(struct loop *l)
{
	const struct mtc_steady_opts *o = l->o;
	json_t *rep, *a = NULL, *b;
	char *err = l->sync.err, name[17];
	long long agreed;
	int rc;

	if (seed_pending(l))
		return 0;
	if (!l->coordinated) {
		agreed = l->sync.step = l->replicated;
		if (mtc_coord_backup_due(agreed, l->child > 0, backup_requested(l),
					 o->cfg->backup_interval_minutes, o->cfg->backup_interval_steps,
					 (long long)time(NULL), l->last_backup_time, l->last_backup_step,
					 l->last_backup_time < 0 ? NULL : l->last_backup_name, name)) {
			l->last_backup_time = (long long)time(NULL);
			l->last_backup_step = agreed;
			memcpy(l->last_backup_name, name, sizeof name);
			start_backup(l, name, agreed);
		}
		gc_to(l, agreed);
		return 1;
	}
	if (!l->sync.report) {
		l->sync.step = l->replicated;
		rep = json_pack("{s:I, s:b, s:b, s:o}", "replicated-step", (json_int_t)l->replicated,
				"backup-running", l->child > 0, "backup-requested", backup_requested(l),
				"config", mtc_config_to_json(o->cfg));
		if (l->last_backup_time >= 0)
			json_object_set_new(rep, "last-backup",
					    json_pack("{s:s, s:I}", "name", l->last_backup_name, "step",
						      (json_int_t)l->last_backup_step));
		sync_start(l, rep);
	}
	if (!sync_reap(l, 0))
		return 0;
	rc = l->sync.rc;
	a = l->sync.answer;
	if (rc == 0 && !a)
		return 0;
	if (rc != 0) {
		/* An outage is one ERROR line, repeated each minute while it lasts. */
		if (!l->sync_failing_since)
			l->sync_failing_since = mtc_now();
		if (mtc_now() - l->sync_error_logged >= 60) {
			mtc_error("sync with the coordinator failed: %s", err);
			l->sync_error_logged = mtc_now();
		}
		return 1;
	}
	if (l->sync_failing_since) {
		mtc_info("sync with the coordinator works again after %.0f s",
			 mtc_now() - l->sync_failing_since);
		l->sync_failing_since = l->sync_error_logged = 0;
	}
	agreed = json_is_integer(json_object_get(a, "agreed-step"))
			 ? json_integer_value(json_object_get(a, "agreed-step"))
			 : -1;
	if (agreed >= 0)
		phase_done("sync");
	gc_to(l, agreed);
	if ((b = json_object_get(a, "backup")) && json_is_string(json_object_get(b, "name")))
		start_backup(l, json_string_value(json_object_get(b, "name")),
			     json_integer_value(json_object_get(b, "step")));
	json_decref(a);
	return 1;
}

/* The status file, rewritten when a figure changed (node_status.h). */
static void write_status(struct loop *l)
{
	l->status.committed = l->committed;
	l->status.replicated = l->replicated;
	if (!mtc_node_status_changed(&l->status, &l->written))
		return;
	if (mtc_node_status_write(l->o->dir, &l->status) == 0)
		memcpy(&l->written, &l->status, sizeof l->written); /* figures only: its locks unused */
}

int mtc_steady_run(const struct mtc_steady_opts *o)
{
	struct loop l = { .o = o, .child_out = -1 };
	struct mtc_commit_opts co = { .dir = o->dir,
				      .cfg = o->cfg,
				      .threads = o->threads,
				      .quiet_s = o->quiet_s >= 0 ? o->quiet_s : 5,
				      .cb = on_commit,
				      .arg = &l };
	struct mtc_dirwatch w;
	struct mtc_prehash *prehash = NULL;
	double sync_s = o->sync_s > 0 ? o->sync_s : 10, next_sync = 0,
	       end = o->timeout_s >= 0 ? mtc_now() + o->timeout_s : -1;
	char *token = mtc_peer_token_for(o->token, o->cfg->job_name, o->cfg->node_rank);

	signal(SIGPIPE, SIG_IGN);
	mtc_peer_client_defaults(&l.pc);
	l.pc.token = token;
	l.pc.cancel = o->stop;
	l.last_backup_time = l.last_backup_step = -1;
	mtc_node_status_init(&l.status, o->cfg->node_rank);
	mtc_node_status_init(&l.written, -1);
	l.coordinated = o->coordinator && o->cfg->nodes > 1;
	if (mtc_dirwatch_open(&w, o->dir) < 0) {
		mtc_critical("cannot watch '%s':", o->dir);
		free(token);
		return MTC_EXIT_FAILURE;
	}
	if (l.coordinated) {
		mtc_coord_client_init(&l.cc, o->coordinator, token, o->cfg->node_rank);
		l.cc.cancel = o->stop;
		mtc_coord_client_heartbeat(&l.cc, o->heartbeat_s > 0 ? o->heartbeat_s : 5);
	}
	if (!l.coordinated || o->cfg->node_rank == 0)
		seed_start(&l);
	if (!o->no_prehash) {
		co.cache = mtc_digest_cache_new();
		prehash = mtc_prehash_start(o->dir, o->cfg, o->threads, o->background, co.cache);
	}
	/* The newest step is pushed again at the start: a kill may have cut its push. */
	l.committed = newest_own_step(&l);
	l.pushed = l.replicated = l.sync.step = -1;
	mtc_info("steady state from step %lld", l.committed);
	while (!*o->stop && (end < 0 || mtc_now() < end)) {
		double wait_until;
		if (mtc_commit_scan(&co) < 0)
			mtc_error("cannot commit the new steps in '%s'", o->dir);
		else if (l.committed >= 0)
			phase_done("commit");
		push_new(&l);
		unpin_after_new_step(&l);
		reap_backup(&l, 0);
		/* a step newly on the peers is agreed at once, so the old one's memory is freed */
		if (mtc_now() >= next_sync || (!l.sync.report && l.replicated > l.sync.step))
			next_sync = sync_once(&l) ? mtc_now() + sync_s : 0;
		write_status(&l);
		wait_until = next_sync > 0 ? next_sync : mtc_now() + 0.2;
		if (wait_until > mtc_now() + 1)
			wait_until = mtc_now() + 1;
		if (!*o->stop && mtc_dirwatch_wait(&w, wait_until, 500, NULL, NULL) < 0 &&
		    errno != ETIMEDOUT && errno != EINTR)
			mtc_warn("waiting on '%s':", o->dir);
	}
	mtc_prehash_stop(prehash);
	mtc_digest_cache_free(co.cache);
	push_reap(&l, 1);
	if (l.sync.report) {
		sync_reap(&l, 1);
		json_decref(l.sync.answer);
	}
	seed_stop(&l);
	if (l.child > 0) {
		mtc_info("stopping: waiting for backup '%s'", l.child_name);
		kill(l.child, SIGTERM);
		reap_backup(&l, 1);
	}
	if (l.coordinated)
		mtc_coord_client_close(&l.cc);
	mtc_dirwatch_close(&w);
	free(token);
	return MTC_EXIT_OK;
}
