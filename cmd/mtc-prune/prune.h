#ifndef MTC_PRUNE_PRUNE_H
#define MTC_PRUNE_PRUNE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fnmatch.h>
#include <time.h>
#include <sys/stat.h>
#include <jansson.h>

#include "backup_check.h"
#include "backup_location.h"
#include "backups.h"
#include "../common/cli.h"
#include "config.h"
#include "fault.h"
#include "exitcode.h"
#include "http.h"
#include "json_out.h"
#include "log.h"
#include "naming.h"
#include "retention.h"
#include "store/store.h"
#include "timestamp.h"
#include "warden_ini.h"
#include "xalloc.h"

/*
 * The parts of mtc-prune: cmd/mtc-prune.c parses the options into these
 * globals (options.c checks them and builds the rules) and runs one mode
 * (delete.c: a directory, --list or a location; ini.c: a backup-warden INI);
 * select.c says which names a run judges and what protects a backup,
 * report.c prints the decisions. Each returns an exit code.
 */

enum { UNCHECKED = -1, NAMES_SHOWN = 3, SEARCH_DEPTH = 8 };

/* How the backups of one directory are judged: the command line's, or an INI section's. */
struct rules {
	const struct mtc_warden_section *section; /* NULL: the command line */
	struct mtc_retention_policy policy;
	struct mtc_ts_pattern *ts;
	char **in, **out;
	size_t n_in, n_out;
};

struct backup {
	char *name;
	int state; /* enum mtc_backup_state, or UNCHECKED */
	char reason[640];
	int deleted;
};

/* One directory of backups under one set of rules. */
struct run {
	const char *root; /* NULL for --list */
	const struct rules *r;
	struct mtc_retention_item *items;
	struct backup *bs;
	size_t n;
	size_t ignored;
	char ignored_names[200];
	int location_named; /* mtc_job_store_open already named what is not an mtc backup name */
};

struct totals {
	size_t paths, backups, kept, deleted, failed, ignored;
};

extern char **counts[MTC_FREQ_COUNT];
extern int prefer_recent, relaxed, do_delete, dry_run, print_deleted, print_kept, print_not_deleted,
	json_out, utc, debug, silent, show_version, verify;
extern char *location, *path_opt, *list_file, *pattern, *grace_text, *config_file, *token_file,
	*s3_endpoint, *job;
extern char **include, **exclude, **include_list, **exclude_list;
extern int parallel, compat_flag;
extern struct mtc_warden_config ini;
extern struct mtc_store_options store_opt;
extern long long grace;

void add_globs(char ***dst, size_t *n, char **src, int split);
int parse_duration(const char *s, long long *out);
char *join(const char *root, const char *name);
void add_item(struct run *run, const char *name);
void report_ignored(const struct run *run);
int read_list(const char *file, struct run *run);
struct backup *backup_of(const struct run *run, const char *name);
int protect(struct mtc_store *s, struct run *run, const char *restore_version, int nodes, int workers);
int report(const struct run *run, struct totals *t);
int report_summary(const struct totals *t, const struct rules *r);
int open_dir(const char *root, struct mtc_store **s);
int prune_dir(struct mtc_store *s, const char *root, const struct rules *r, int nodes, int workers,
	      int location_named, struct totals *t);
int prune_list(const struct rules *r, struct totals *t);
int prune_location(const struct rules *r, struct totals *t);
int prune_ini(const struct rules *all, struct totals *t);
int parse_policy(struct mtc_retention_policy *p);
int rules_init(struct rules *r, const char *pat, char **inc, char **exc, char **inc_list,
	       char **exc_list);
void rules_free(struct rules *r);
int load_ini(struct rules **all);
void free_options(void);
int check_modes(int ini_mode);

#endif
