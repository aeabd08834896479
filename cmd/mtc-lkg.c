/*
 * mtc-lkg: the last known good step.
 *   --backups LOCATION/<job>   list a job's backups newest first with their
 *                              validity (DESIGN.md §7), step, nodes and size;
 *                              mark the newest valid one and restore.version
 * (The cluster LKG over local dirs and peers is a further mode.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "backups.h"
#include "cli.h"
#include "exitcode.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

enum mode { MODE_NONE, MODE_BACKUPS };

static char *backups_root, *token_file;
static int json_out, parallel, nodes_opt, workers_opt;

static long long backup_bytes(struct mtc_store *s, const char *name)
{
	struct mtc_store_list l;
	char *prefix = xasprintf("%s/", name);
	long long total = -1;

	if (mtc_store_list(s, prefix, NULL, &l) == 0) {
		total = 0;
		for (size_t i = 0; i < l.n_objects; i++)
			total += l.objects[i].size;
	}
	mtc_store_list_free(&l);
	free(prefix);
	return total;
}

static void human_size(long long n, char *out, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static int list_backups(void)
{
	struct mtc_store_options opt = { .token_file = token_file, .parallel = parallel };
	struct mtc_backup_entry *list = NULL;
	struct mtc_store *s;
	size_t n = 0;
	char err[512], pinned[256] = "";
	const char *newest_valid = NULL;
	json_t *arr = json_array();
	int rc, pin;

	if (mtc_store_open(backups_root, &opt, &s, err, sizeof err) < 0) {
		mtc_error("cannot open '%s': %s", backups_root, err);
		json_decref(arr);
		return MTC_EXIT_USAGE;
	}
	pin = mtc_backups_restore_version(s, pinned, sizeof pinned);
	if (pin < 0 || mtc_backups_list(s, &list, &n) < 0) {
		mtc_error("cannot list '%s': %s", backups_root, mtc_store_error(s));
		mtc_store_close(s);
		json_decref(arr);
		return MTC_EXIT_FAILURE;
	}
	rc = MTC_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		struct mtc_backup_info info;
		long long bytes;
		if (mtc_backup_inspect(s, list[i].name, nodes_opt, workers_opt, &info) < 0) {
			mtc_error("cannot read backup '%s/%s': %s", backups_root, list[i].name,
				  mtc_store_error(s));
			rc = MTC_EXIT_FAILURE;
			break;
		}
		bytes = backup_bytes(s, list[i].name);
		if (info.state == MTC_BACKUP_VALID && !newest_valid)
			newest_valid = list[i].name;
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:I, s:b, s:b}", "name",
				       list[i].name, "state", mtc_backup_state_name(info.state),
				       "reason", info.reason, "step", (json_int_t)info.step, "nodes",
				       info.nodes, "workers", info.workers, "bytes", (json_int_t)bytes,
				       "newest_valid", newest_valid == list[i].name, "pinned",
				       pin == 1 && !strcmp(pinned, list[i].name)));
		mtc_backup_info_free(&info);
	}
	if (rc == MTC_EXIT_OK && json_out) {
		json_t *top = json_pack("{s:s, s:o, s:O, s:o}", "location", backups_root,
					"restore_version", pin == 1 ? json_string(pinned) : json_null(),
					"backups", arr, "newest_valid",
					newest_valid ? json_string(newest_valid) : json_null());
		char *text = json_dumps(top, JSON_COMPACT);
		printf("%s\n", text);
		free(text);
		json_decref(top);
	} else if (rc == MTC_EXIT_OK) {
		size_t i;
		json_t *b;
		printf("%-1s %-16s  %-10s  %10s  %5s  %10s  %s\n", "", "BACKUP", "STATE", "STEP",
		       "NODES", "SIZE", "NOTE");
		json_array_foreach(arr, i, b)
		{
			char size[32], step[32];
			long long st = json_integer_value(json_object_get(b, "step"));
			int is_pinned = json_is_true(json_object_get(b, "pinned"));
			const char *reason = json_string_value(json_object_get(b, "reason"));
			human_size(json_integer_value(json_object_get(b, "bytes")), size, sizeof size);
			snprintf(step, sizeof step, st < 0 ? "-" : "%lld", st);
			printf("%-1s %-16s  %-10s  %10s  %5lld  %10s  %s%s%s\n",
			       json_is_true(json_object_get(b, "newest_valid")) ? "*" : "",
			       json_string_value(json_object_get(b, "name")),
			       json_string_value(json_object_get(b, "state")), step,
			       (long long)json_integer_value(json_object_get(b, "nodes")), size,
			       is_pinned ? "restore.version" : "", is_pinned && *reason ? "; " : "",
			       reason);
		}
		if (pin == 1)
			printf("restore.version: %s\n", pinned);
	}
	if (rc == MTC_EXIT_OK && !newest_valid)
		rc = MTC_EXIT_NOTFOUND;
	json_decref(arr);
	mtc_backups_free_list(list, n);
	mtc_store_close(s);
	return rc;
}

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		{ "backups", 'b', POPT_ARG_STRING, &backups_root, 0, "list the backups of a job", "LOCATION/JOB" },
		{ "json", '\0', POPT_ARG_NONE, &json_out, 0, "print JSON", NULL },
		{ "nodes", '\0', POPT_ARG_INT, &nodes_opt, 0, "judge against N nodes (default: inferred)", "N" },
		{ "workers", '\0', POPT_ARG_INT, &workers_opt, 0, "judge against W workers per node (default: inferred)", "W" },
		{ "token-file", '\0', POPT_ARG_STRING, &token_file, 0, "gs:// bearer token file", "FILE" },
		{ "parallel", 'j', POPT_ARG_INT, &parallel, 0, "gs:// requests in flight (default 16)", "N" },
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum mode mode = MODE_NONE;
	poptContext ctx;
	int rc;

	mtc_log_init(argv[0]);
	ctx = mtc_cli_context("mtc-lkg", argc, argv, opts, "--backups LOCATION/JOB [--json]");
	if ((rc = mtc_cli_parse(ctx)) >= 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (poptPeekArg(ctx)) {
		mtc_usage_error("unexpected argument '%s'", poptPeekArg(ctx));
		goto out;
	}
	if (backups_root)
		mode = MODE_BACKUPS;
	if (nodes_opt < 0 || workers_opt < 0 || parallel < 0) {
		mtc_usage_error("--nodes, --workers and --parallel take a positive number");
		goto out;
	}
	switch (mode) {
	case MODE_BACKUPS:
		rc = list_backups();
		break;
	case MODE_NONE:
		mtc_usage_error("say what to compute: --backups LOCATION/JOB");
		break;
	}
out:
	poptFreeContext(ctx);
	return rc;
}
