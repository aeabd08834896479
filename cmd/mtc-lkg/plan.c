#include "modes.h"

static void print_summary(json_t *plan)
{
	json_t *step = json_object_get(plan, "step"), *v, *r;
	const char *source = json_string_value(json_object_get(plan, "source"));
	const char *backup = json_string_value(json_object_get(plan, "backup"));
	const char *pinned = json_string_value(json_object_get(plan, "restore-version"));
	size_t i, shown = 0, ready = 0, n_rejected;

	if (json_is_integer(step))
		printf("step %lld from %s%s%s (%lld nodes x %lld worker%s)\n",
		       (long long)json_integer_value(step), backup ? "backup " : "the cluster",
		       backup ? backup : "", pinned ? ", forced by restore.version" : "",
		       (long long)json_integer_value(json_object_get(plan, "nodes")),
		       (long long)json_integer_value(json_object_get(plan, "workers-per-node")),
		       json_integer_value(json_object_get(plan, "workers-per-node")) == 1 ? "" : "s");
	else
		printf("nothing to restore: %s\n", json_string_value(json_object_get(plan, "reason")));
	json_array_foreach (json_object_get(plan, "errors"), i, v)
		printf("error: %s\n", json_string_value(v));
	n_rejected = json_array_size(json_object_get(plan, "rejected"));
	json_array_foreach (json_object_get(plan, "rejected"), i, v) {
		if (i == 10) {
			printf("(%zu more rejected steps)\n", n_rejected - 10);
			break;
		}
		printf("rejected: step %lld in %s%s: %s\n",
		       (long long)json_integer_value(json_object_get(v, "step")),
		       json_object_get(v, "backup") ? "backup " : "the cluster",
		       json_object_get(v, "backup") ? json_string_value(json_object_get(v, "backup"))
						    : "",
		       json_string_value(json_object_get(v, "reason")));
	}
	if (!json_is_integer(step) || !source)
		return;
	json_array_foreach (json_object_get(plan, "ranks"), i, r) {
		json_t *m;
		size_t k;
		json_array_foreach (json_object_get(r, "metas"), k, m)
			if (json_is_integer(json_object_get(m, "substituted-from")))
				printf("rank %lld worker %lld: its own data exists nowhere; it takes "
				       "rank %lld's (assume-data-parallelism)\n",
				       (long long)json_integer_value(json_object_get(r, "node-rank")),
				       (long long)json_integer_value(json_object_get(m, "worker")),
				       (long long)json_integer_value(
					       json_object_get(m, "substituted-from")));
	}
	json_array_foreach (json_object_get(plan, "ranks"), i, r) {
		json_t *fetch = json_object_get(r, "fetch"), *f;
		size_t k;
		if (!json_array_size(fetch)) {
			ready++;
			continue;
		}
		if (!shown++)
			printf("%-6s %-8s %s\n", "RANK", "REPORTED", "FETCHES");
		printf("%-6lld %-8s", (long long)json_integer_value(json_object_get(r, "node-rank")),
		       json_is_true(json_object_get(r, "reported")) ? "yes" : "no");
		json_array_foreach (fetch, k, f) {
			const char *h = json_string_value(json_object_get(f, "hash"));
			json_t *from = json_object_get(f, "from");
			printf(" %s from ", h ? h : "?");
			if (json_array_size(from))
				printf("rank %lld%s",
				       (long long)json_integer_value(json_array_get(from, 0)),
				       json_is_true(json_object_get(f, "backup")) ? " or the backup"
										  : "");
			else
				printf("the backup");
			if (k + 1 < json_array_size(fetch))
				printf(";");
		}
		printf("\n");
	}
	printf("%zu of %zu ranks hold everything they need\n", ready,
	       json_array_size(json_object_get(plan, "ranks")));
}

/* Prints the plan; the exit code: 0 with a step, NOTFOUND without. */
static int show_plan(json_t *plan)
{
	if (json_out) {
		char *text = json_dumps(plan, JSON_COMPACT);
		printf("%s\n", text);
		free(text);
	} else
		print_summary(plan);
	return json_is_integer(json_object_get(plan, "step")) ? MTC_EXIT_OK : MTC_EXIT_NOTFOUND;
}

int plan_and_show(json_t *inv)
{
	char err[512];
	json_t *plan = mtc_lkg_plan(inv, err, sizeof err);
	int rc;

	if (!plan) {
		mtc_error("invalid inventory '%s': %s", inventory_path ? inventory_path : "-", err);
		return MTC_EXIT_FAILURE;
	}
	rc = show_plan(plan);
	json_decref(plan);
	return rc;
}

int from_inventory(void)
{
	char *text = NULL;
	size_t len;
	json_error_t jerr;
	json_t *inv;
	int rc, r = !strcmp(inventory_path, "-")
			    ? mtc_read_fd(0, INVENTORY_MAX_BYTES, &text, &len)
			    : mtc_read_file(inventory_path, INVENTORY_MAX_BYTES, &text, &len);

	if (r < 0) {
		int e = errno;
		mtc_error("cannot read inventory '%s': %s", inventory_path, strerror(e));
		return e == ENOENT ? MTC_EXIT_NOTFOUND : e == EISDIR ? MTC_EXIT_USAGE : MTC_EXIT_FAILURE;
	}
	inv = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!inv) {
		mtc_error("invalid inventory '%s': line %d: %s", inventory_path, jerr.line, jerr.text);
		return MTC_EXIT_FAILURE;
	}
	rc = plan_and_show(inv);
	json_decref(inv);
	return rc;
}
