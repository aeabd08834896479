/*
 * mtc-handshake: both sides of the replicator.yaml handshake.
 *   accept  the replicator side: wait, validate, clean the local dir, delete the yaml, print the config
 *   watch   return when a new replicator.yaml appears (the training job restarted)
 *   offer   the training side: write the yaml, wait for it to be accepted, read the status files
 *   check   validate a replicator.yaml and print the config it stands for
 *   rank    this node's process id from the rank server, into jax-init-info.txt
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "config.h"
#include "dirwatch.h"
#include "exitcode.h"
#include "fsutil.h"
#include "handshake.h"
#include "http.h"
#include "json_out.h"
#include "local_dir.h"
#include "log.h"
#include "coord/coord_client.h"
#include "walk.h"
#include "xalloc.h"
#include "mtc-handshake/rank.h"

enum verb { ACCEPT, WATCH, OFFER, CHECK, RANK, NVERBS };
static const struct {
	const char *name, *usage, *help; /* help: the name and usage errors point to */
} verbs[NVERBS + 1] = {
	[ACCEPT] = { "accept", "accept --dir DIR [--timeout SEC] [--json]", "mtc-handshake accept" },
	[WATCH] = { "watch", "watch --dir DIR [--timeout SEC] [--json]", "mtc-handshake watch" },
	[OFFER] = { "offer", "offer --dir DIR --job-name NAME --node-rank R --nodes N [OPTIONS]",
		    "mtc-handshake offer" },
	[CHECK] = { "check", "check [--json] FILE", "mtc-handshake check" },
	[RANK] = { "rank", "rank --dir DIR --coordinator-url URL --index I --host HOST [OPTIONS]",
		   "mtc-handshake rank" },
	[NVERBS] = { NULL, "accept|watch|offer|check|rank [OPTIONS] [FILE]", "mtc-handshake" },
};

static char *dir;
static double timeout_s = -1;
static int json;

/* The accepted config: one JSON line, with or without --json. */
static int print_config(const struct mtc_config *cfg)
{
	return mtc_json_print(mtc_config_to_json(cfg)) == 0 ? MTC_EXIT_OK : MTC_EXIT_FAILURE;
}

/* Every verb with --dir waits or writes there: the dir is created when missing. */
static int need_dir(void)
{
	if (!dir)
		return mtc_usage_error("--dir is required");
	return mtc_cli_local_dir(dir);
}

static int timed_out(const char *what)
{
	if (errno == ETIMEDOUT) {
		mtc_error("timed out after %g s waiting for %s", timeout_s, what);
		return MTC_EXIT_TIMEOUT;
	}
	mtc_error("cannot wait for %s:", what);
	return MTC_EXIT_FAILURE;
}

/* local: the local dir's replicator.yaml, never read through a symlink. */
static int read_config_file(const char *path, int local, struct mtc_config *cfg, char *err,
			    size_t errlen)
{
	char *text;
	size_t len;

	if (!strcmp(path, "-") ? mtc_read_fd(0, MTC_CONFIG_MAX_BYTES, &text, &len)
	    : local	       ? mtc_read_file_nofollow(path, MTC_CONFIG_MAX_BYTES, &text, &len)
			       : mtc_read_file(path, MTC_CONFIG_MAX_BYTES, &text, &len)) {
		if (errno == EFBIG)
			snprintf(err, errlen, "file is larger than %d bytes", MTC_CONFIG_MAX_BYTES);
		else if (errno == ELOOP || errno == EISDIR)
			snprintf(err, errlen, "not a regular file");
		else
			snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	int rc = mtc_config_parse_yaml(text, len, cfg, err, errlen);
	free(text);
	return rc;
}

/* What the reference accepts but an operator should hear about: error lines, not failures. */
static void warn_inconsistent(const struct mtc_config *cfg)
{
	if (cfg->data_parallelism > 1 && mtc_config_replicas(cfg) == 1)
		mtc_error("'assume-data-parallelism' %d does not divide 'nodes' %d: data-parallel "
			  "deduplication is off", cfg->data_parallelism, cfg->nodes);
	if (cfg->peers_per_node_ignored >= 0)
		mtc_error("'peers-per-node' %d does not match the %d entries of 'peer-ranks': "
			  "'peer-ranks' is used", cfg->peers_per_node_ignored, cfg->n_peer_ranks);
}

static int do_accept(void)
{
	struct mtc_config cfg;
	char err[512], *path;
	int rc;

	if ((rc = need_dir()))
		return rc;
	mtc_log_status_dir(dir, "init");
	path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	mtc_info("waiting for '%s'", path);
	if ((rc = mtc_wait_config(dir, mtc_deadline(timeout_s))) < 0) {
		char *what = xasprintf("'%s'", path);
		rc = timed_out(what);
		free(what);
		free(path);
		return rc;
	}
	if (rc == 1 ? (snprintf(err, sizeof err, "not a regular file"), -1)
		    : read_config_file(path, 1, &cfg, err, sizeof err)) {
		/* replicator.failed first: the training job reads it once the yaml is gone. */
		mtc_critical("invalid config '%s': %s", path, err);
		if (mtc_remove_tree(path) < 0)
			mtc_error("cannot delete '%s':", path);
		mtc_fsync_dir(dir);
		free(path);
		return MTC_EXIT_USAGE;
	}
	char *context = xasprintf("job=%s node=%d/%d", cfg.job_name, cfg.node_rank, cfg.nodes);
	mtc_log_status_dir(dir, context);
	free(context);

	if (mtc_clean_local_dir(dir) < 0) {
		mtc_critical("cannot clean the local dir '%s'", dir);
		unlink(path);
		rc = MTC_EXIT_FAILURE;
	} else if ((warn_inconsistent(&cfg), unlink(path) < 0) || mtc_fsync_dir(dir) < 0) {
		mtc_error("cannot delete '%s':", path);
		rc = MTC_EXIT_FAILURE;
	} else {
		mtc_info("accepted '%s'", path);
		rc = print_config(&cfg);
	}
	mtc_config_free(&cfg);
	free(path);
	return rc;
}

static int do_watch(void)
{
	int rc;
	if ((rc = need_dir()))
		return rc;
	if (mtc_wait_config(dir, mtc_deadline(timeout_s)) < 0) {
		char *what = xasprintf("a new '%s/%s'", dir, MTC_CONFIG_FILE);
		rc = timed_out(what);
		free(what);
		return rc;
	}
	char *path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	rc = json ? mtc_json_print(json_pack("{s:s}", "config", path)) : printf("%s\n", path);
	free(path);
	return rc < 0 || fflush(stdout) != 0 ? MTC_EXIT_FAILURE : MTC_EXIT_OK;
}

static int do_check(const char *file)
{
	struct mtc_config cfg;
	char err[512];

	if (!file)
		return mtc_usage_error("check needs a FILE (or - for stdin)");
	if (read_config_file(file, 0, &cfg, err, sizeof err) < 0) {
		mtc_error("invalid config '%s': %s", file, err);
		return MTC_EXIT_FAILURE;
	}
	int rc = print_config(&cfg);
	mtc_config_free(&cfg);
	return rc;
}

/* offer: the options of every key, the byte style, and what to wait for. */
static char *o_job, *o_framework = "orbax", *o_peers, *o_style = "orbax";
static int o_rank = -1, o_nodes = -1, o_ppn = -1, o_dp = -1, o_wpn = -1;
static int o_minutes = -1, o_steps = -1;
static int o_wait_restore, o_rename, o_replace;
static double o_restore_timeout = 300;

static int build_offer(struct mtc_config *cfg, enum mtc_yaml_style *style)
{
	json_t *o = json_object();
	char err[512];
	int rc;

	if (!strcmp(o_style, "orbax"))
		*style = MTC_STYLE_ORBAX;
	else if (!strcmp(o_style, "nemo"))
		*style = MTC_STYLE_NEMO;
	else
		return mtc_usage_error("--style must be orbax or nemo, not '%s'", o_style);
	if (o_job)
		json_object_set_new(o, "job-name", json_string(o_job));
	json_object_set_new(o, "framework", json_string(o_framework));
#define SET_INT(key, v) \
	if ((v) >= 0)   \
		json_object_set_new(o, key, json_integer(v))
	SET_INT("node-rank", o_rank);
	SET_INT("nodes", o_nodes);
	SET_INT("peers-per-node", o_ppn);
	SET_INT("assume-data-parallelism", o_dp);
	SET_INT("backup-interval-minutes", o_minutes);
	SET_INT("backup-interval-steps", o_steps);
	SET_INT("workers-per-node", o_wpn);
#undef SET_INT
	if (o_peers) {
		json_t *a = json_array();
		char *list = xstrdup(o_peers), *save = NULL;
		for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
			long long v;
			if (mtc_parse_uint(t, &v) < 0) {
				free(list);
				json_decref(a);
				json_decref(o);
				return mtc_usage_error("--peer-ranks takes ranks like 1,2, not '%s'", o_peers);
			}
			json_array_append_new(a, json_integer(v));
		}
		free(list);
		json_object_set_new(o, "peer-ranks", a);
	}
	rc = mtc_config_from_json(o, cfg, err, sizeof err);
	json_decref(o);
	if (rc < 0)
		return mtc_usage_error("cannot offer this config: %s", err);
	/* NeMo writes peers-per-node beside peer-ranks; the accepted config keeps what was given. */
	return MTC_EXIT_OK;
}

static int write_offer(const struct mtc_config *cfg, enum mtc_yaml_style style)
{
	char *yaml = mtc_render_config_yaml(cfg, style);
	char *path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	int rc = 0;

	if (style == MTC_STYLE_ORBAX) {
		rc = mtc_write_atomic(path, yaml, strlen(yaml));
	} else {
		FILE *f = fopen(path, "w");
		if (!f || fputs(yaml, f) < 0)
			rc = -1;
		if (f && fclose(f) != 0)
			rc = -1;
	}
	if (rc < 0)
		mtc_error("cannot write '%s':", path);
	free(path);
	free(yaml);
	return rc;
}

/* Reads and deletes replicator.errors (logged) and replicator.failed (fatal), as NeMo does. */
static int read_status_files(void)
{
	char *path, *text;
	int rc = MTC_EXIT_OK;

	path = xasprintf("%s/%s", dir, MTC_ERRORS_FILE);
	if (mtc_read_file(path, 1 << 20, &text, NULL) == 0) {
		fprintf(stderr, "%s: replicator errors:\n%s", mtc_prog(), text);
		free(text);
		unlink(path);
	}
	free(path);
	path = xasprintf("%s/%s", dir, MTC_FAILED_FILE);
	if (mtc_read_file(path, 1 << 20, &text, NULL) == 0) {
		size_t n = strlen(text);
		while (n && text[n - 1] == '\n')
			text[--n] = '\0';
		mtc_error("replicator failed: %s", text);
		free(text);
		unlink(path);
		rc = MTC_EXIT_FAILURE;
	}
	free(path);
	return rc;
}

static int wait_restore(const struct mtc_config *cfg, enum mtc_yaml_style style)
{
	char *name = NULL, *from, *to = NULL;
	long long step;
	int rc = MTC_EXIT_OK;

	if (mtc_wait_restore_marker(dir, mtc_deadline(o_restore_timeout), &name, &step) < 0) {
		if (errno == ETIMEDOUT) {
			mtc_error("timed out after %g s waiting for a '*.restore' marker in '%s'",
				  o_restore_timeout, dir);
			return MTC_EXIT_TIMEOUT;
		}
		mtc_error("cannot wait for a restore marker in '%s':", dir);
		return MTC_EXIT_FAILURE;
	}
	from = xasprintf("%s/%s", dir, name);
	if (step == 0) {
		rc = MTC_EXIT_NOTFOUND;
	} else if (o_rename) {
		to = style == MTC_STYLE_ORBAX ? xasprintf("%s/%lld", dir, step)
					      : xasprintf("%s/step=%lld", dir, step);
		if (rename(from, to) < 0) {
			mtc_error("cannot rename '%s' to '%s':", from, to);
			rc = MTC_EXIT_FAILURE;
		}
	}
	if (rc != MTC_EXIT_FAILURE) {
		const char *where = to ? to : from;
		if (json ? mtc_json_print(json_pack("{s:I, s:s}", "step", (json_int_t)step, "path",
						    where))
			 : printf("%lld %s\n", step, where) < 0 || fflush(stdout) != 0)
			rc = MTC_EXIT_FAILURE;
	}
	(void)cfg;
	free(from);
	free(to);
	free(name);
	return rc;
}

static int do_offer(void)
{
	struct mtc_config cfg;
	enum mtc_yaml_style style = MTC_STYLE_ORBAX;
	char *path;
	int rc;

	if ((rc = build_offer(&cfg, &style)))
		return rc;
	if ((rc = need_dir()))
		goto out;
	path = xasprintf("%s/%s", dir, MTC_CONFIG_FILE);
	if (o_replace && unlink(path) == 0)
		mtc_info("removed a stale '%s'", path);
	if (mtc_wait_gone(dir, MTC_CONFIG_FILE, mtc_deadline(timeout_s)) < 0) {
		char *what = xasprintf("the previous '%s' to disappear", path);
		rc = timed_out(what);
		free(what);
	} else if (write_offer(&cfg, style) < 0) {
		rc = MTC_EXIT_FAILURE;
	} else if (mtc_wait_gone(dir, MTC_CONFIG_FILE, mtc_deadline(timeout_s)) < 0) {
		char *what = xasprintf("'%s' to be accepted", path);
		rc = timed_out(what);
		free(what);
	} else if ((rc = read_status_files()) == MTC_EXIT_OK && o_wait_restore) {
		rc = wait_restore(&cfg, style);
	}
	free(path);
out:
	mtc_config_free(&cfg);
	return rc;
}

int main(int argc, const char **argv)
{
	struct poptOption dir_opts[] = {
		{ "dir", 'd', POPT_ARG_STRING, &dir, 0, "the local dir (a RAM disk)", "DIR" },
		{ "timeout", 't', POPT_ARG_DOUBLE, &timeout_s, 0,
		  "give up after SEC seconds with exit 3 (default: wait forever; offer: 300)", "SEC" },
		{ "json", '\0', POPT_ARG_NONE, &json, 0,
		  "result lines as JSON: watch's path, offer's restore marker (accept and check print "
		  "JSON either way)", NULL },
		POPT_TABLEEND
	};
	struct poptOption offer_opts[] = {
		{ "job-name", '\0', POPT_ARG_STRING, &o_job, 0, "job-name", "NAME" },
		{ "framework", '\0', POPT_ARG_STRING, &o_framework, 0,
		  "orbax, pytorch.distributed or pytorch (default orbax)", "NAME" },
		{ "node-rank", '\0', POPT_ARG_INT, &o_rank, 0, "node-rank", "R" },
		{ "nodes", '\0', POPT_ARG_INT, &o_nodes, 0, "nodes", "N" },
		{ "peer-ranks", '\0', POPT_ARG_STRING, &o_peers, 0, "peer-ranks, comma separated ('' for [])",
		  "R,R" },
		{ "peers-per-node", '\0', POPT_ARG_INT, &o_ppn, 0, "peers-per-node", "K" },
		{ "assume-data-parallelism", '\0', POPT_ARG_INT, &o_dp, 0, "assume-data-parallelism", "D" },
		{ "backup-interval-minutes", '\0', POPT_ARG_INT, &o_minutes, 0, "backup-interval-minutes",
		  "M" },
		{ "backup-interval-steps", '\0', POPT_ARG_INT, &o_steps, 0, "backup-interval-steps", "S" },
		{ "workers-per-node", '\0', POPT_ARG_INT, &o_wpn, 0, "workers-per-node", "W" },
		{ "style", '\0', POPT_ARG_STRING, &o_style, 0,
		  "write the bytes as orbax (tmp+rename) or nemo (yaml.dump in place)", "orbax|nemo" },
		{ "replace-stale", '\0', POPT_ARG_NONE, &o_replace, 0,
		  "delete a leftover replicator.yaml instead of waiting for it to go", NULL },
		{ "wait-restore", '\0', POPT_ARG_NONE, &o_wait_restore, 0,
		  "then wait for a *.restore marker; print its step and path (exit 4 for step 0)", NULL },
		{ "restore-timeout", '\0', POPT_ARG_DOUBLE, &o_restore_timeout, 0,
		  "seconds to wait for the marker (default 300)", "SEC" },
		{ "rename", '\0', POPT_ARG_NONE, &o_rename, 0,
		  "consume the marker as the framework does (orbax: <step>, nemo: step=<step>)", NULL },
		POPT_TABLEEND
	};
	struct rank_opts ro = { .index = -1, .jax_port = 8482 };
	char *r_coord = NULL, *r_host = NULL, *r_token = NULL;
	struct poptOption rank_opts[] = {
		{ "coordinator-url", '\0', POPT_ARG_STRING, &r_coord, 0,
		  "the rank server: the coordinator (default $MTC_COORDINATOR)", "URL" },
		{ "index", '\0', POPT_ARG_INT, &ro.index, 0, "this node's pod index, 0 <= I < nodes",
		  "I" },
		{ "host", '\0', POPT_ARG_STRING, &r_host, 0,
		  "where JAX reaches this node, should it be process 0", "HOST" },
		{ "jax-port", '\0', POPT_ARG_INT, &ro.jax_port, 0,
		  "the JAX coordinator's port on process 0's host (default 8482)", "PORT" },
		{ "peer-token-file", '\0', POPT_ARG_STRING, &r_token, 0,
		  "the job's shared token for the coordinator", "FILE" },
		POPT_TABLEEND
	};
	struct poptOption opts[] = {
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, dir_opts, 0, "Options:", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, offer_opts, 0, "offer:", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, rank_opts, 0, "rank:", NULL },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum verb verb = NVERBS;
	poptContext ctx;
	int rc;

	mtc_log_init(argv[0]);
	mtc_http_init();
	if (argc > 1)
		for (int v = 0; v < NVERBS; v++)
			if (!strcmp(argv[1], verbs[v].name))
				verb = (enum verb)v;
	if (verb != NVERBS)
		argv[1] = argv[0]; /* popt prints "Usage: ARGV0 USAGE", and each usage starts with its verb */
	ctx = mtc_cli_context(verbs[verb].help, verb == NVERBS ? argc : argc - 1,
			      verb == NVERBS ? argv : argv + 1, opts, verbs[verb].usage);
	if (mtc_cli_parse(ctx, &rc) < 0)
		goto out;
	if (verb == NVERBS) {
		rc = argc > 1 && argv[1][0] != '-'
			     ? mtc_usage_error("unknown command '%s'", argv[1])
			     : mtc_usage_error("a command is needed: accept, watch, offer, check or rank");
		goto out;
	}
	if (verb == OFFER && timeout_s < 0)
		timeout_s = 300;
	if (verb == RANK && timeout_s < 0)
		timeout_s = 900;
	if (verb != RANK && (r_coord || r_host || r_token || ro.index >= 0)) {
		rc = mtc_usage_error("--coordinator-url, --index, --host and --peer-token-file belong to 'rank'");
		goto out;
	}
	const char *arg = poptGetArg(ctx);
	if (arg && verb != CHECK) {
		rc = mtc_usage_error("unexpected argument '%s'", arg);
		goto out;
	}
	if (verb != OFFER && (o_job || o_peers || o_rank >= 0 || o_nodes >= 0 || o_wait_restore)) {
		rc = mtc_usage_error("the key options belong to 'offer'");
		goto out;
	}
	switch (verb) {
	case ACCEPT: rc = do_accept(); break;
	case WATCH: rc = do_watch(); break;
	case OFFER: rc = do_offer(); break;
	case CHECK: rc = do_check(arg); break;
	case RANK:
		ro.dir = dir;
		ro.coordinator = mtc_coord_url(r_coord);
		ro.host = r_host;
		ro.token_file = r_token;
		ro.timeout_s = timeout_s;
		if (!ro.coordinator || !r_host || ro.index < 0)
			rc = mtc_usage_error("rank needs --coordinator-url, --host and --index");
		else if (ro.jax_port <= 0 || ro.jax_port > 65535)
			rc = mtc_usage_error("--jax-port must be in [1, 65535]");
		else if (!(rc = need_dir()))
			rc = do_rank(&ro);
		break;
	default: break;
	}
out:
	free(r_coord);
	free(r_host);
	free(r_token);
	poptFreeContext(ctx);
	return rc;
}
