/*
 * mtc-restore: bring a checkpoint back.
 *   --from LOCATION --job JOB [--name NAME] [--rank R] --out DIR | --archive FILE|- | --verify
 *       0. the backup: --name, restore.version, or the newest valid one
 *       1. list the backup; pick rank R's .meta files (of its newest step)
 *       2. download each <hash>.data in parallel into a staging dir that a
 *          killed run left for this backup and rank, keeping what it holds
 *       3. verify it against its name and its manifest (exit 5 if not)
 *       4. make it visible: DIR/<step> by rename (--layout hash: DIR/<hash>.data,
 *          then the .meta files); or write the same as one tar stream
 *          (libarchive, compressed as its suffix says, by temporary and
 *          rename: lib/step_archive.h); --verify re-hashes the whole backup
 *          streamed (lib/backup_check.h) and writes nothing
 *   --pin LOCATION --job JOB NAME  write restore.version (a valid backup only, unless --force)
 *   --unpin LOCATION --job JOB     remove restore.version
 *   --dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL | --standalone]
 *       the restore of a node at a job's start (lib/cluster_restore.h): the LKG
 *       plan from the coordinator, replicator.prerestore, fetch and verify,
 *       the restore-done barrier, local GC, and the .restore markers last
 */
#include "common/interrupt.h"
#include "mtc-restore/restore.h"

enum mode { MODE_NONE, MODE_FROM, MODE_PIN, MODE_UNPIN, MODE_CLUSTER };

/* The options, as main parses them (mtc-restore/restore.h). */
char *from, *out_dir, *archive_path, *compress, *pin_root, *unpin_root, *token_file, *s3_endpoint,
	*rank_text, *job_opt, *name_opt, *layout = "step";
int parallel = MTC_CLI_UNSET, threads, force, json_out, no_progress, verify_only;
char *slice_threshold_text;
long long slice_threshold;
int slices;
char *dir, *config_file, *backup, *coordinator_url, *address, *peer_token_file;
int standalone;
double timeout_s, heartbeat_s;

int cmd_argc;
const char **cmd_argv;

int main(int argc, const char **argv)
{
	struct poptOption opts[] = {
		{ "from", 'f', POPT_ARG_STRING, &from, 0,
		  "restore from a backup of the job at this bucket root", "LOCATION" },
		MTC_POPT_JOB(job_opt,
			     "the job whose backups --from, --pin and --unpin mean (default: the config's)"),
		MTC_POPT_NAME(name_opt, "the backup (default: restore.version, else the newest valid)"),
		{ "rank", 'r', POPT_ARG_STRING, &rank_text, 0,
		  "the node whose data to restore (default 0 for one node)", "R" },
		{ "out", 'o', POPT_ARG_STRING, &out_dir, 0, "write the step into DIR (see --layout)",
		  "DIR" },
		{ "layout", '\0', POPT_ARG_STRING, &layout, 0,
		  "step: DIR/<step> as the framework saved it; hash: <hash>.data and the .meta files (default step)",
		  "step|hash" },
		MTC_POPT_VERIFY(
			verify_only,
			"with --from: re-hash the whole backup against its manifests and names, writing nothing"),
		{ "archive", 'a', POPT_ARG_STRING, &archive_path, 0,
		  "write a tar stream instead (- for stdout), laid out as --layout, compressed as FILE's suffix says",
		  "FILE|-" },
		{ "compress", '\0', POPT_ARG_STRING, &compress, 0,
		  "compress the archive whatever its suffix", "zstd" },
		{ "pin", '\0', POPT_ARG_STRING, &pin_root, 0, "write restore.version naming NAME",
		  "LOCATION" },
		{ "unpin", '\0', POPT_ARG_STRING, &unpin_root, 0, "remove restore.version", "LOCATION" },
		{ "force", '\0', POPT_ARG_NONE, &force, 0, "pin a backup that is not valid", NULL },
		MTC_POPT_STORE_AUTH(token_file, s3_endpoint),
		MTC_POPT_PARALLEL(parallel),
		MTC_POPT_THREADS(threads),
		MTC_POPT_SLICES(slice_threshold_text, slices,
				"gs://: fetch a file at least this big as parallel ranged GETs (default 64M)",
				"ranged GETs of one such file (default 16, at most 32; 1: one stream)"),
		MTC_POPT_NO_PROGRESS(no_progress),
		MTC_POPT_DIR_FOR(dir, "restore this node's local dir (cluster mode)"),
		MTC_POPT_CONFIG(config_file),
		MTC_POPT_BACKUP(backup, "the backup location (the job name is added)"),
		MTC_POPT_COORDINATOR_URL(coordinator_url),
		{ "standalone", '\0', POPT_ARG_NONE, &standalone, 0,
		  "decide alone, without a coordinator", NULL },
		{ "address", '\0', POPT_ARG_STRING, &address, 0,
		  "this node's peer URL as the others reach it", "URL" },
		MTC_POPT_PEER_TOKEN_FILE(peer_token_file),
		MTC_POPT_TIMEOUT(timeout_s, "seconds for the whole restore (default 600)"),
		MTC_POPT_HEARTBEAT(heartbeat_s),
		MTC_POPT_JSON(json_out, "the summary line as JSON"),
		MTC_POPT_COMMON POPT_TABLEEND
	};
	enum mode mode = MODE_NONE;
	poptContext ctx;
	const char *name = NULL;
	char *job = NULL;
	int rc;

	cmd_argc = argc;
	cmd_argv = argv;
	if (mtc_cli_start(
		    "mtc-restore", argc, argv, opts,
		    "--dir DIR --config CFG [--backup LOCATION] [--coordinator-url URL | --standalone]\n"
		    "  or: mtc-restore --from LOCATION --job JOB [--name NAME] [--rank R] (--out DIR | --archive FILE|- | --verify)\n"
		    "  or: mtc-restore --pin LOCATION --job JOB NAME [--force]\n"
		    "  or: mtc-restore --unpin LOCATION --job JOB",
		    &ctx, &rc) < 0)
		goto out;
	rc = MTC_EXIT_USAGE;
	if (!!from + !!pin_root + !!unpin_root + !!dir > 1) {
		mtc_usage_error("--dir, --from, --pin and --unpin exclude each other");
		goto out;
	}
	mode = from	    ? MODE_FROM
	       : pin_root   ? MODE_PIN
	       : unpin_root ? MODE_UNPIN
	       : dir	    ? MODE_CLUSTER
			    : MODE_NONE;
	if (mode != MODE_CLUSTER &&
	    (backup || coordinator_url || standalone || address || peer_token_file)) {
		mtc_usage_error(
			"--backup, --coordinator-url, --standalone, --address and --peer-token-file go with --dir");
		goto out;
	}
	if (mode == MODE_CLUSTER && job_opt) {
		mtc_usage_error(
			"--job goes with --from, --pin and --unpin (with --dir the config names the job)");
		goto out;
	}
	if (config_file && !job_opt && mode != MODE_CLUSTER) {
		if ((rc = load_job(&job)) != MTC_EXIT_OK)
			goto out;
		rc = MTC_EXIT_USAGE;
	}
	if (standalone && coordinator_url) {
		mtc_usage_error("--standalone and --coordinator-url exclude each other");
		goto out;
	}
	if (mode == MODE_PIN) {
		name = poptGetArg(ctx);
		if (!name || mtc_parse_backup_name(name, NULL) < 0) {
			mtc_usage_error("--pin needs a backup NAME (YYYY-MM-DD_HH-MM)%s%s%s",
					name ? ", not '" : "", name ? name : "", name ? "'" : "");
			goto out;
		}
	}
	if (mtc_cli_no_args(ctx))
		goto out;
	if (mode != MODE_FROM && (out_dir || archive_path || compress || rank_text || no_progress ||
				  name_opt || verify_only)) {
		mtc_usage_error(
			"--out, --archive, --compress, --rank, --name, --verify and --no-progress go with --from");
		goto out;
	}
	if (mode != MODE_PIN && force) {
		mtc_usage_error("--force goes with --pin");
		goto out;
	}
	if (mtc_cli_count("--parallel", &parallel))
		goto out;
	if (threads < 0) {
		mtc_usage_error("--threads takes a positive number");
		goto out;
	}
	if (mode != MODE_FROM && mode != MODE_CLUSTER && (slice_threshold_text || slices)) {
		mtc_usage_error("--slice-threshold and --slices go with --from or --dir");
		goto out;
	}
	if (mtc_cli_slices(slice_threshold_text, slices, &slice_threshold))
		goto out;
	switch (mode) {
	case MODE_FROM:
		if (!out_dir + !archive_path + !verify_only != 2) {
			mtc_usage_error("--from needs one of --out DIR, --archive FILE|- and --verify");
			break;
		}
		if (compress && (!archive_path || strcmp(compress, "zstd"))) {
			mtc_usage_error("--compress takes 'zstd', with --archive");
			break;
		}
		if (compress && mtc_archive_filter_of(archive_path) &&
		    strcmp(mtc_archive_filter_of(archive_path), compress)) {
			mtc_usage_error("--compress %s contradicts the suffix of '%s' (%s): drop one",
					compress, archive_path, mtc_archive_filter_of(archive_path));
			break;
		}
		if (strcmp(layout, "step") && strcmp(layout, "hash")) {
			mtc_usage_error("--layout takes 'step' or 'hash', not '%s'", layout);
			break;
		}
		if (name_opt && mtc_parse_backup_name(name_opt, NULL) < 0) {
			mtc_usage_error("--name takes a backup name (YYYY-MM-DD_HH-MM), not '%s'",
					name_opt);
			break;
		}
		if (archive_path && !strcmp(archive_path, "-") && isatty(STDOUT_FILENO)) {
			mtc_usage_error(
				"--archive - would write a tar stream to a terminal: redirect it or pipe it into tar");
			break;
		}
		mtc_cli_on_interrupt(out_dir != NULL);
		rc = from_backup(job_opt ? job_opt : job);
		break;
	case MODE_PIN: rc = pin(job_opt ? job_opt : job, name); break;
	case MODE_UNPIN: rc = unpin(job_opt ? job_opt : job); break;
	case MODE_CLUSTER:
		if (!config_file) {
			mtc_usage_error("--dir needs --config CFG");
			break;
		}
		mtc_cli_on_interrupt(0);
		rc = restore_cluster();
		break;
	case MODE_NONE: mtc_usage_error("say what to do: --dir, --from, --pin or --unpin"); break;
	}
out:
	poptFreeContext(ctx);
	free(job);
	return rc;
}
