#include "prune.h"

static const char *action_of(const struct mtc_retention_item *it, const struct backup *b)
{
	if (mtc_retention_kept(it))
		return "keep";
	if (!do_delete)
		return "would-delete";
	return b->deleted ? "deleted" : "failed";
}

static void reasons_json(const struct mtc_retention_item *it, json_t *why)
{
	for (int f = 0; f < MTC_FREQ_COUNT; f++)
		if (it->kept_by & (1u << f))
			json_array_append_new(why, json_string(mtc_freq_name((enum mtc_freq)f)));
	if (it->protects & MTC_PROTECT_NEWEST_VALID)
		json_array_append_new(why, json_string(verify ? "newest verified" : "newest valid"));
	if (it->protects & MTC_PROTECT_RESTORE_VERSION)
		json_array_append_new(why, json_string("restore.version"));
	if (it->protects & MTC_PROTECT_IN_PROGRESS)
		json_array_append_new(why, json_string("in progress"));
}

static json_t *policy_json(const struct mtc_retention_policy *p)
{
	json_t *pol = json_object();
	for (int f = 0; f < MTC_FREQ_COUNT; f++) {
		long long c = p->count[f];
		json_object_set_new(pol, mtc_freq_name((enum mtc_freq)f),
				    c == MTC_KEEP_ALWAYS ? json_string("always") : json_integer(c));
	}
	json_object_set_new(pol, "prefer-recent", json_boolean(p->prefer_recent));
	json_object_set_new(pol, "relaxed", json_boolean(p->relaxed));
	return pol;
}

/* One JSON line a backup: backup, job-root, time, action, reasons, state. */
static int report_json(const struct run *run)
{
	int rc = 0;
	for (size_t i = 0; i < run->n; i++) {
		const struct mtc_retention_item *it = &run->items[i];
		struct backup *b = backup_of(run, it->name);
		json_t *o = json_object(), *why = json_array();
		json_object_set_new(o, "backup", json_string(it->name));
		if (run->root)
			json_object_set_new(o, "job-root", json_string(run->root));
		if (run->r->section)
			json_object_set_new(o, "section", json_string(run->r->section->path));
		json_object_set_new(o, "time", mtc_json_seconds((double)it->when));
		json_object_set_new(o, "action", json_string(action_of(it, b)));
		reasons_json(it, why);
		json_object_set_new(o, "reasons", why);
		if (b->state != UNCHECKED)
			json_object_set_new(o, "state",
					    json_string(mtc_backup_state_name(
						    (enum mtc_backup_state)b->state)));
		if (b->reason[0])
			json_object_set_new(o, "reason", json_string(b->reason));
		rc |= mtc_json_print(o);
	}
	return rc;
}

/* The reasons as the table shows them; with --verify the protected one is the newest verified. */
static void reasons_text(const struct mtc_retention_item *it, char *buf, size_t len)
{
	char plain[256], *at;
	mtc_retention_reasons(it, plain, sizeof plain);
	at = verify ? strstr(plain, "newest valid") : NULL;
	if (at)
		snprintf(buf, len, "%.*snewest verified%s", (int)(at - plain), plain, at + 12);
	else
		snprintf(buf, len, "%s", plain);
}

static void row(const struct mtc_retention_item *it, const struct backup *b, int width)
{
	char why[300];
	reasons_text(it, why, sizeof why);
	if (why[0])
		printf("%-12s %-*s  %s\n", action_of(it, b), width, it->name, why);
	else
		printf("%-12s %s\n", action_of(it, b), it->name);
}

int report(const struct run *run, struct totals *t)
{
	size_t kept = 0, width = 0, failed = 0;

	for (size_t i = 0; i < run->n; i++) {
		const struct mtc_retention_item *it = &run->items[i];
		struct backup *b = backup_of(run, it->name);
		int keep = mtc_retention_kept(it);
		char *path = run->root ? join(run->root, it->name) : xstrdup(it->name);
		if (print_kept && keep)
			printf("%s\n", it->name);
		if (print_not_deleted && keep)
			printf("%s\n", path);
		if (print_deleted && !keep && (!do_delete || b->deleted))
			printf("%s\n", path);
		free(path);
		if (strlen(it->name) > width)
			width = strlen(it->name);
		kept += keep;
		failed += !keep && do_delete && !b->deleted;
	}
	t->paths++;
	t->backups += run->n;
	t->kept += kept;
	t->failed += failed;
	t->deleted += run->n - kept - failed;
	t->ignored += run->ignored;
	if (json_out)
		return report_json(run);
	if (print_kept || print_deleted || print_not_deleted || silent)
		return 0;
	if (run->r->section)
		printf("%s (policy of [%s])\n", run->root, run->r->section->path);
	for (size_t i = 0; i < run->n; i++)
		row(&run->items[i], backup_of(run, run->items[i].name), (int)width);
	if (do_delete)
		printf("%zu backups: %zu kept, %zu deleted%s\n", run->n, kept, run->n - kept - failed,
		       failed ? ", some failed" : "");
	else
		printf("%zu backups: %zu kept, %zu to delete (dry run: nothing deleted without --delete)\n",
		       run->n, kept, run->n - kept);
	if (run->r->section)
		printf("\n");
	return 0;
}

int report_summary(const struct totals *t, const struct rules *r)
{
	json_t *o;
	if (!json_out)
		return 0;
	o = json_object();
	json_object_set_new(o, "summary", json_true());
	if (ini.n)
		json_object_set_new(o, "paths", json_integer((json_int_t)t->paths));
	json_object_set_new(o, "total", json_integer((json_int_t)t->backups));
	json_object_set_new(o, "kept", json_integer((json_int_t)t->kept));
	if (do_delete) {
		json_object_set_new(o, "deleted", json_integer((json_int_t)t->deleted));
		json_object_set_new(o, "failed", json_integer((json_int_t)t->failed));
	} else {
		json_object_set_new(o, "would-delete", json_integer((json_int_t)t->deleted));
	}
	json_object_set_new(o, "ignored", json_integer((json_int_t)t->ignored));
	json_object_set_new(o, "dry-run", json_boolean(!do_delete));
	if (r)
		json_object_set_new(o, "policy", policy_json(&r->policy));
	return mtc_json_print(o);
}
