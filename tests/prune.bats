#!/usr/bin/env bats
# mtc-prune: the policy through --list, then the directory backend, the location rule,
# backup-warden's flags and INI config, and the JSON lines.

load helpers

NONE=(--minutely 0 --hourly 0 --daily 0 --weekly 0 --monthly 0 --yearly 0)

# decide POLICY... < names: prints "action name [reasons]" without the summary.
decide() { mtc-prune --list - "$@" 2>/dev/null | sed '$d' | tr -s ' '; }
kept() { mtc-prune --list - --print-kept "$@" 2>/dev/null | tr '\n' ' '; }
# names_are NAME...: the backups' names, one a line, that kept_is and decide read
names_are() { names=$(printf '%s\n' "$@"); }
# kept_is 'KEPT ' FLAGS...: of $names, FLAGS on top of NONE keep exactly KEPT.
kept_is() {
	local want=$1
	shift
	run kept "${NONE[@]}" "$@" <<<"$names"
	assert_output "$want"
}

setup() {
	ROOT=$(mktemp -d /dev/shm/mtc-prune.XXXXXX)
	mkdir -p "$ROOT/job"
}

teardown() { rm -rf "$ROOT"; }

# mkbackup NAME NODES [SKIP_RANK]: every node's .meta and a <hash>.data directory of 3 files.
mkbackup() {
	local dir="$ROOT/job/$1" r h
	mkdir -p "$dir"
	for ((r = 0; r < $2; r++)); do
		[ "$r" = "${3:--1}" ] && continue
		h=$(printf '%s-%s' "$1" "$r" | sha256sum | cut -c1-64)
		mkdir -p "$dir/$h.data"
		printf 'a' >"$dir/$h.data/a"
		printf 'b' >"$dir/$h.data/b"
		printf 'c' >"$dir/$h.data/c"
		printf '%s' "$h" >"$dir/job-s100-n$r-w0.meta"
	done
}

snapshot() { (cd "$ROOT" && find . | sort); }
dirs() { (cd "$ROOT/job" && find . -mindepth 1 -maxdepth 1 -type d | sed 's|^\./||' | sort | tr '\n' ' '); }

@test "strict windows drop old periods, relaxed keeps the last N" {
	names_are 2025-06-30_08-00 2025-06-30_09-00 2025-06-30_13-00
	kept_is '2025-06-30_13-00 ' --hourly 3
	kept_is '2025-06-30_08-00 2025-06-30_09-00 2025-06-30_13-00 ' --hourly 3 --relaxed
	kept_is '2025-06-30_09-00 2025-06-30_13-00 ' --hourly 4
	kept_is '2025-06-30_08-00 2025-06-30_09-00 2025-06-30_13-00 ' --hourly 5
}

@test "the oldest of each period by default, the newest with --prefer-recent" {
	names_are 2025-06-30_10-00 2025-06-30_10-30 2025-06-30_11-00 2025-06-30_11-30
	kept_is '2025-06-30_10-00 2025-06-30_11-00 ' --hourly 2
	kept_is '2025-06-30_10-30 2025-06-30_11-30 ' --hourly 2 --prefer-recent
}

@test "minutely periods, and the reasons name every rule that keeps a backup" {
	names_are 2025-06-30_10-00-10 2025-06-30_10-00-40 2025-06-30_10-01-05 2025-06-30_10-03-00
	run decide "${NONE[@]}" --minutely 2 --hourly 1 <<<"$names"
	assert_output 'keep 2025-06-30_10-00-10 hourly
would-delete 2025-06-30_10-00-40
keep 2025-06-30_10-01-05 minutely
keep 2025-06-30_10-03-00 minutely'
	run decide "${NONE[@]}" --minutely 3 --hourly 1 <<<"$names"
	assert_line 'keep 2025-06-30_10-00-10 minutely, hourly'
}

@test "include and exclude globs select the backups considered" {
	names_are db-2025-06-30_10-00 db-2025-06-30_11-00 logs-2025-06-30_10-30 logs-2025-06-30_11-30
	kept_is 'db-2025-06-30_11-00 ' --hourly 1 --include 'db-*'
	run decide "${NONE[@]}" --hourly 1 --exclude 'db-*' <<<"$names"
	assert_output 'would-delete logs-2025-06-30_10-30
keep logs-2025-06-30_11-30 hourly'
	kept_is 'db-2025-06-30_10-00 logs-2025-06-30_10-30 ' --minutely 90 -I 'db-*, logs-*' -E '*11-*'
}

@test "a custom timestamp pattern reads its named groups by name" {
	names_are snap-31.12.2024-23h snap-01.01.2025-01h snap-15.01.2025-00h other-2025-01-20
	kept_is 'snap-31.12.2024-23h snap-01.01.2025-01h ' --monthly 2 -t '(?P<day>\d{2})\.(?P<month>\d{2})\.(?<year>\d{4}) - (?P<hour>\d\d)h'
	run mtc-prune --list - -t '(?P<year>\d{4})' </dev/null
	assert_failure 2
	assert_output --partial "no group named 'month'"
	run mtc-prune --list - -t '(?P<year>\d{4})(?P<month>\d\d)(?P<day>\d\d)+?' </dev/null
	assert_failure 2
	run kept "${NONE[@]}" --daily 9 -t '(?P<unixtime>\d+)' <<<'u1700000000
u1700100000123'
	assert_output 'u1700000000 u1700100000123 '
}

@test "backup-warden's default pattern: all its spellings parse, invalid dates are not backups" {
	names_are 2025-06-30_14-30 2013-10-10@20:07 backup-20160110_214500 20160111 2025-02-30_10-00 2025-13-01_10-00 restore.version notes
	run decide "${NONE[@]}" --daily always <<<"$names"
	assert_output 'keep 2013-10-10@20:07 daily
keep backup-20160110_214500 daily
keep 20160111 daily
keep 2025-06-30_14-30 daily'
}

@test "ties in time are broken by name" {
	names_are b-2025-06-30_10-00 a-2025-06-30_10-00
	kept_is 'a-2025-06-30_10-00 ' --daily 1
	kept_is 'b-2025-06-30_10-00 ' --daily 1 --prefer-recent
}

@test "weeks are ISO weeks: the week around New Year is one period" {
	# 2024-12-30 is the Monday of ISO week 2025-W01; 2021-01-01 is in 2020-W53.
	names_are 2024-12-30_10-00 2025-01-01_10-00 2025-01-06_10-00 2020-12-28_10-00 2021-01-01_10-00
	kept_is '2020-12-28_10-00 2024-12-30_10-00 2025-01-06_10-00 ' --weekly always
}

@test "always keeps every period; calendar months bound the strict window" {
	names_are 2019-03-01_00-00 2019-07-01_00-00 2023-05-05_00-00 2025-02-27_12-00 2025-03-31_12-00
	kept_is '2019-03-01_00-00 2023-05-05_00-00 2025-02-27_12-00 ' --yearly always
	# 2025-03-31 minus one month is 2025-02-28 12:00: February's backup is outside.
	kept_is '2025-03-31_12-00 ' --monthly 0+1
	kept_is '2025-02-27_12-00 2025-03-31_12-00 ' --monthly 2 --relaxed
}

@test "counts take sums and products like backup-warden's expressions" {
	names=$(for h in 00 01 02 03 04 05 06 07 08 09; do echo "2025-06-30_$h-00"; done)
	kept_is '2025-06-30_07-00 2025-06-30_08-00 2025-06-30_09-00 ' --hourly 2+1
	kept_is '2025-06-30_06-00 2025-06-30_07-00 2025-06-30_08-00 2025-06-30_09-00 ' --hourly '2 * 2'
	run mtc-prune --list - --hourly 2-1 </dev/null
	assert_failure 2
	assert_output --partial "--hourly: '2-1' is not a count"
}

@test "a policy where every count is zero is refused" {
	run mtc-prune --list - "${NONE[@]}" </dev/null
	assert_failure 2
	assert_output --partial 'refusing a policy where every count is 0'
	mkbackup 2025-06-30_10-00 2
	before=$(snapshot)
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --delete
	assert_failure 2
	assert_equal "$(snapshot)" "$before"
}

@test "bad command lines are usage errors" {
	run mtc-prune
	assert_failure 2
	run mtc-prune --list - --print-kept --print-deleted </dev/null
	assert_failure 2
	run mtc-prune --list - --delete </dev/null
	assert_failure 2
	run mtc-prune "$ROOT" --job job --grace soon
	assert_failure 2
	run mtc-prune "$ROOT" --job job -n --delete
	assert_failure 2
	run mtc-prune -p "$ROOT/job" --job job
	assert_failure 2
}

@test "a few hundred generated names decide as the independent Python model does" {
	python3 "$MTC_TESTS/prune_ref.py" --generate 7 400 >"$ROOT/names"
	for policy in \
		"--hourly 24 --daily 7 --weekly 5 --monthly always --yearly always --prefer-recent" \
		"" \
		"--relaxed --hourly 30 --daily 10" \
		"--minutely 10 --hourly 5+2 --daily 3 --weekly 2 --monthly 3 --yearly 2" \
		"--minutely 10 --hourly 5 --daily 3 --weekly 2*2 --monthly 30 --yearly 2 --relaxed --prefer-recent" \
		"--weekly always --hourly 0 --daily 0 --monthly 0 --yearly 0" \
		"--hourly 48 --weekly 52 --exclude *@* --include 20*"; do
		# shellcheck disable=SC2086
		mine=$(set -f; decide $policy <"$ROOT/names")
		# shellcheck disable=SC2086
		ref=$(set -f; python3 "$MTC_TESTS/prune_ref.py" $policy <"$ROOT/names")
		[ -n "$ref" ]
		assert_equal "$mine" "$ref"
	done
}

@test "the operator's backup-warden command line is accepted as is" {
	mkbackup 2025-06-30_10-00 2
	mkbackup 2025-06-30_10-30 2
	run mtc-prune -p "$ROOT/job" --hourly 24 --daily 7 --weekly 5 --monthly always --yearly always --prefer-recent --utc
	assert_success
	assert_line --regexp '^would-delete +2025-06-30_10-00$'
	assert_line --regexp '^keep +2025-06-30_10-30 +hourly, daily, weekly, monthly, yearly, newest valid$'
}

@test "a dry run deletes nothing" {
	for m in 00 10 20 30 40 50; do mkbackup "2025-06-30_09-$m" 2; done
	before=$(snapshot)
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --hourly 1 -n
	assert_success
	assert_output --partial '6 backups: 2 kept, 4 to delete'
	assert_equal "$(snapshot)" "$before"
}

@test "--delete deletes exactly the reported set and leaves other entries alone" {
	for d in 01 02 03 04 05 06 07 08; do mkbackup "2025-06-$d""_12-00" 3; done
	mkdir "$ROOT/job/notes" "$ROOT/job/lost+found"
	echo hi >"$ROOT/job/README"
	echo x >"$ROOT/job/2025-06-09_12-00.txt"
	reported=$(mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 3 --print-deleted 2>/dev/null | tr '\n' ' ')
	expected=$(for d in 01 02 03 04 05; do printf '%s ' "$ROOT/job/2025-06-$d""_12-00"; done)
	assert_equal "$reported" "$expected"
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 3 --delete --print-deleted
	assert_success
	assert_output --partial "$ROOT/job: 4 names that are not backups, ignored"
	assert_equal "$(mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 3 --print-not-deleted 2>/dev/null | tr '\n' ' ')" \
		"$ROOT/job/2025-06-06_12-00 $ROOT/job/2025-06-07_12-00 $ROOT/job/2025-06-08_12-00 "
	assert_equal "$(dirs)" '2025-06-06_12-00 2025-06-07_12-00 2025-06-08_12-00 lost+found notes '
	assert_file_exists "$ROOT/job/README"
	assert_file_exists "$ROOT/job/2025-06-09_12-00.txt"
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 3 --delete --json
	assert_success
	assert_line --partial '"summary":true,"total":3,"kept":3,"deleted":0,"failed":0'
}

@test "the newest valid backup is never deleted" {
	mkbackup 2020-01-01_00-00 3
	mkbackup 2020-01-02_00-00 3 1
	mkbackup 2020-01-03_00-00 3 0
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 1 --delete
	assert_success
	assert_line --regexp '^keep +2020-01-01_00-00 +newest valid$'
	assert_line --regexp '^deleted +2020-01-02_00-00$'
	assert_line --regexp '^keep +2020-01-03_00-00 +daily$'
	assert_equal "$(dirs)" '2020-01-01_00-00 2020-01-03_00-00 '
}

@test "the backup named in restore.version is never deleted" {
	mkbackup 2020-01-01_00-00 2
	mkbackup 2020-01-02_00-00 2
	mkbackup 2020-01-03_00-00 2
	printf '2020-01-02_00-00\n' >"$ROOT/job/restore.version"
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 1 --delete --json
	assert_success
	assert_output --partial '"backup":"2020-01-01_00-00","job-root":"'"$ROOT/job"'","time":1577836800.0,"action":"deleted"'
	assert_equal "$(dirs)" '2020-01-02_00-00 2020-01-03_00-00 '
	assert_file_exists "$ROOT/job/restore.version"
}

@test "a backup still being written is kept until the grace period is over" {
	now=$(date +%s)
	mkdir -p "$ROOT/job/u$now"
	old="u$((now - 60))"
	mkdir -p "$ROOT/job/$old/x.data"
	h=$(echo x | sha256sum | cut -c1-64)
	mkdir "$ROOT/job/$old/$h.data" && echo 1 >"$ROOT/job/$old/$h.data/f"
	printf '%s' "$h" >"$ROOT/job/$old/job-s1-n0-w0.meta"
	run mtc-prune -p "$ROOT/job" -t '^u(?P<unixtime>\d+)$' "${NONE[@]}" --yearly 1 --delete
	assert_success
	assert_line --regexp "^keep +u$now +in progress$"
	assert_line --regexp "^keep +$old +yearly, newest valid$"
	run mtc-prune -p "$ROOT/job" -t '^u(?P<unixtime>\d+)$' "${NONE[@]}" --yearly 1 --delete --grace 0
	assert_success
	assert_line --regexp "^deleted +u$now$"
	assert_equal "$(dirs)" "$old "
}

@test "a missing location is 'not found'" {
	run mtc-prune "$ROOT/nothing-here" --hourly 1
	assert_failure 4
	assert_output --partial "$ROOT/nothing-here"
}

@test "the location is the bucket root and the job comes from --job: a wrong level is an error, never 0 backups" {
	mkbackup 2025-06-30_10-00 2
	# the bucket root without a job: which job? (a cron line that never pruned before)
	run mtc-prune "$ROOT" --delete
	assert_failure 2
	assert_output --partial "which job? give --job NAME"
	# a job's root given as LOCATION: explained with the command that works
	run mtc-prune "$ROOT/job" --delete
	assert_failure 2
	assert_output --partial "give the bucket root and the job: $ROOT --job job"
	# a job with no backups there: not found, naming the jobs there are
	run mtc-prune "$ROOT" --job other --delete
	assert_failure 4
	assert_output --partial "jobs there: job"
	# -p is the directory of the backups: a bucket root there holds none
	run mtc-prune -p "$ROOT" --delete
	assert_failure 4
	assert_output --partial "no backups at '$ROOT' (1 name without a timestamp: 'job')"
	assert_output --partial "--job NAME"
	run mtc-prune "$ROOT/nothing-here" --job job
	assert_failure 4
	run mtc-prune "$ROOT" --job job
	assert_success
	assert_line --regexp '^keep +2025-06-30_10-00 +hourly, daily, weekly, monthly, yearly, newest valid$'
}

@test "names that are not backups are named at the default verbosity, in every mode" {
	run mtc-prune --list - <<<$'foo\nbar\n2025-06-30_10-00'
	assert_success
	assert_output --partial "2 names without a timestamp ignored (not backups): 'foo', 'bar'"
	assert_line --partial '1 backups: 1 kept'
	run mtc-prune --list - --json <<<$'a\nb\nc\nd\ne'
	assert_success
	assert_output --partial "5 names without a timestamp ignored (not backups): 'a', 'b', 'c', ..."
	run mtc-prune --list - -q <<<'foo'
	assert_success
	assert_output ''
	mkbackup 2025-06-30_10-00 1
	mkdir "$ROOT/job/snapshot-old"
	run mtc-prune -p "$ROOT/job" --print-kept
	assert_output --partial "$ROOT/job: 1 name without a timestamp ignored (not backups): 'snapshot-old'"
}

@test "backup-warden's flags: -n, -V, --debug, --silent, --print-not-deleted" {
	for h in 10 11 12; do mkbackup "2025-06-30_$h-00" 1; done
	before=$(snapshot)
	run mtc-prune -p "$ROOT/job" "${NONE[@]}" --hourly 1 -n
	assert_success
	assert_line --regexp '^would-delete +2025-06-30_10-00$'
	run mtc-prune -V
	assert_success
	assert_output --regexp '^mtc-prune \(mtc\) [0-9]'
	run mtc-prune -p "$ROOT/job" "${NONE[@]}" --hourly 1 --debug
	assert_success
	assert_output --partial "debug: $ROOT/job: 3 names listed"
	run mtc-prune -p "$ROOT/job/" "${NONE[@]}" --hourly 1 --print-not-deleted
	assert_success
	assert_output "$ROOT/job/2025-06-30_12-00"
	run mtc-prune -p "$ROOT/job" "${NONE[@]}" --hourly 1 --silent
	assert_success
	assert_output ''
	run mtc-prune -p "$ROOT/nope" --silent
	assert_failure 4
	assert_output --partial "no such location"
	run mtc-prune -p "$ROOT/job" --debug --silent
	assert_failure 2
	run mtc-prune -p "$ROOT/job" --print-deleted --print-not-deleted
	assert_failure 2
	assert_equal "$(snapshot)" "$before"
}

@test "-c reads backup-warden's INI config: per-path policies, several sections, globs below [main] path" {
	for c in cluster1 cluster2; do
		for d in 27 28 29 30; do mkdir -p "$ROOT/backups/$c/logical/2025-06-$d""_12-00"; done
	done
	for d in 29 30; do
		mkdir -p "$ROOT/backups/db/full-2025-06-$d""_01-00" "$ROOT/backups/db/inc-2025-06-$d""_01-00" \
			"$ROOT/backups/db/inc-2025-06-$d""_02-00"
	done
	cat >"$ROOT/warden.ini" <<INI
[main]
path = $ROOT/backups
environment = dev
source = local

; every cluster's logical backups
[$ROOT/backups/*/logical]
hourly = 0
daily = 1 + 1
weekly = 0
monthly = 0
yearly = 0
include_list =
exclude_list =

[$ROOT/backups/cluster2/logical]
daily = 3
Prefer_Recent = yes

[$ROOT/backups/db/full*]
daily = 7
yearly = always
include_list = *full*

[$ROOT/backups/db/inc*]
daily = 1
include_list = *inc*
INI
	run --separate-stderr mtc-prune -c "$ROOT/warden.ini" --print-not-deleted
	assert_success
	assert_output "$ROOT/backups/cluster1/logical/2025-06-29_12-00
$ROOT/backups/cluster1/logical/2025-06-30_12-00
$ROOT/backups/cluster2/logical/2025-06-28_12-00
$ROOT/backups/cluster2/logical/2025-06-29_12-00
$ROOT/backups/cluster2/logical/2025-06-30_12-00
$ROOT/backups/db/full-2025-06-29_01-00
$ROOT/backups/db/full-2025-06-30_01-00
$ROOT/backups/db/inc-2025-06-30_01-00"
	run mtc-prune -c "$ROOT/warden.ini"
	assert_success
	assert_line "$ROOT/backups/db (policy of [$ROOT/backups/db/inc*])"
	assert_line --regexp '^would-delete +inc-2025-06-30_02-00$'
	# the policy is the file's: backup-warden refuses these beside it, and so does mtc-prune
	for extra in "--hourly 3" "--prefer-recent" "-p $ROOT/backups" "-I *x*" "$ROOT/backups"; do
		# shellcheck disable=SC2086
		run mtc-prune -c "$ROOT/warden.ini" $extra
		assert_failure 2
		assert_output --partial "cannot be given with the backup-warden config '$ROOT/warden.ini'"
	done
	run mtc-prune -c "$ROOT/warden.ini" --delete --silent
	assert_success
	assert_output ''
	assert_equal "$(ls "$ROOT/backups/cluster1/logical" | tr '\n' ' ')" '2025-06-29_12-00 2025-06-30_12-00 '
	assert_equal "$(ls "$ROOT/backups/db" | tr '\n' ' ')" \
		'full-2025-06-29_01-00 full-2025-06-30_01-00 inc-2025-06-30_01-00 '
}

@test "-c without [main] path: each section is a directory; bad files are refused with the line" {
	for d in 28 29 30; do mkdir -p "$ROOT/a/2025-06-$d""_12-00" "$ROOT/b/2025-06-$d""_12-00"; done
	printf '[%s]\ndaily = 1\n\n[%s]\nhourly = 5 * 5\ndaily = always\n' "$ROOT/a" "$ROOT/b" >"$ROOT/w.ini"
	run --separate-stderr mtc-prune -c "$ROOT/w.ini" --print-deleted
	assert_success
	assert_output "$ROOT/a/2025-06-28_12-00
$ROOT/a/2025-06-29_12-00"
	printf '[%s]\nhourly = 0\n' "$ROOT/a" >"$ROOT/zero.ini"
	run mtc-prune -c "$ROOT/zero.ini"
	assert_failure 2
	assert_output --partial "keeps nothing"
	printf '[%s]\nhourley = 24\ndaily = 1\n' "$ROOT/a" >"$ROOT/typo.ini"
	run mtc-prune -c "$ROOT/typo.ini"
	assert_failure 2
	assert_output --partial "line 2: unknown key 'hourley'"
	printf '[main]\nsource = s3\n[%s]\ndaily = 1\n' "$ROOT/a" >"$ROOT/s3.ini"
	run mtc-prune -c "$ROOT/s3.ini"
	assert_failure 2
	assert_output --partial "source = s3"
	printf '[%s/*]\ndaily = 1\n' "$ROOT" >"$ROOT/glob.ini"
	run mtc-prune -c "$ROOT/glob.ini"
	assert_failure 2
	assert_output --partial "globs need a [main] path"
	run mtc-prune -c "$ROOT/missing.ini"
	assert_failure 4
}

@test "--json: one compact line a backup and a summary line, kebab-case keys, a dry run never says deleted" {
	for h in 10 11 12; do mkbackup "2025-06-30_$h-00" 1; done
	for mode in -n --delete; do
		run --separate-stderr mtc-prune "$ROOT" --job job "${NONE[@]}" --hourly 1 --prefer-recent --json "$mode"
		assert_success
		want=$([ "$mode" = -n ] && echo would-delete would-delete keep || echo deleted deleted keep)
		echo "$output" | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
def keys(o):
    if isinstance(o, dict):
        for k, v in o.items():
            yield k
            yield from keys(v)
    elif isinstance(o, list):
        for v in o:
            yield from keys(v)
assert all("_" not in k for o in lines for k in keys(o)), lines
assert [o.get("action") for o in lines[:-1]] == sys.argv[1].split(), lines
assert lines[-1]["summary"] and lines[-1]["total"] == 3 and lines[-1]["kept"] == 1, lines
assert ("deleted" in lines[-1]) == (sys.argv[2] == "--delete"), lines
assert lines[0]["time"] == 1751277600, lines
' "$want" "$mode"
	done
}

@test "the newest intact backup is protected: a data file cut short does not count, --verify re-hashes" {
	load backup
	config "$ROOT/cfg" job 0 1
	for b in 10 11 12; do
		rm -rf "$ROOT/n0"
		saved_step "$ROOT/n0" job "$b" 0 "seed-$b" 20000 >/dev/null
		mtc-backup --dir "$ROOT/n0" --config "$ROOT/cfg" --step "$b" --to "$ROOT/bk" --name "2025-06-30_$b-00" >/dev/null
	done
	# the newest is cut short: its metas still read valid, its sizes do not
	w=$(ls "$ROOT"/bk/job/2025-06-30_12-00/*.data/weights)
	truncate -s 303 "$w"
	run mtc-prune "$ROOT/bk" --job job "${NONE[@]}" --yearly 1 --prefer-recent
	assert_success
	assert_line --regexp '^keep +2025-06-30_11-00 +newest valid$'
	assert_line --regexp '^keep +2025-06-30_12-00 +yearly$'
	# a byte changed in place keeps every size: only --verify sees it
	rm -rf "$ROOT/bk/job/2025-06-30_12-00"
	w=$(ls "$ROOT"/bk/job/2025-06-30_11-00/*.data/weights)
	printf 'X' | dd of="$w" bs=1 seek=100 conv=notrunc status=none
	run mtc-prune "$ROOT/bk" --job job "${NONE[@]}" --yearly 1 --prefer-recent
	assert_success
	assert_line --regexp '^keep +2025-06-30_11-00 +yearly, newest valid$'
	run mtc-prune "$ROOT/bk" --job job "${NONE[@]}" --yearly 1 --prefer-recent --verify --delete
	assert_success
	assert_line --regexp '^keep +2025-06-30_10-00 +newest verified$'
	assert_output --partial "backup '2025-06-30_11-00' is damaged"
}

# Reads like mtc(7) §6.5 without a config: valid when ranks 0..max and worker 0 all have a
# .meta whose data is there. Prints the backups that read valid but lost data.
half_valid() {
	python3 - "$ROOT/job" <<'EOF'
import os, re, sys
root = sys.argv[1]
for b in sorted(os.listdir(root)):
    d = os.path.join(root, b)
    metas = {}
    for f in os.listdir(d):
        m = re.match(r"job-s\d+-n(\d+)-w(\d+)\.meta$", f)
        if m:
            metas[int(m.group(1))] = open(os.path.join(d, f)).read()
    if not metas:
        continue
    n = max(metas) + 1
    reads_valid = all(r in metas and os.path.isdir(os.path.join(d, metas[r] + ".data")) for r in range(n))
    # only a backup that reads as valid has every rank's meta to look at
    whole = reads_valid and n == 8 and all(len(os.listdir(os.path.join(d, metas[r] + ".data"))) == 3 for r in range(n))
    if reads_valid and not whole:
        print(b)
EOF
}

@test "kill -9 during --delete never leaves a backup that reads as valid with data gone" {
	count=40
	sanitized && count=16
	python3 - "$ROOT/job" "$count" <<'EOF'
import hashlib, os, sys
root, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    b = os.path.join(root, "2020-01-%02d_%02d-00" % (1 + i // 24, i % 24))
    os.makedirs(b)
    for r in range(8):
        h = hashlib.sha256(("%s-%d" % (b, r)).encode()).hexdigest()
        os.makedirs(os.path.join(b, h + ".data"))
        for f in "abc":
            open(os.path.join(b, h + ".data", f), "w").write(f)
        open(os.path.join(b, "job-s1-n%d-w0.meta" % r), "w").write(h)
EOF
	partial=0
	for delay in 0.002 0.005 0.01 0.02 0.03 0.05 0.08; do
		mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 1 --delete >/dev/null 2>&1 &
		pid=$!
		sleep "$delay"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		run half_valid
		assert_output ''
		for b in "$ROOT"/job/*/; do
			n=$(find "$b" -name '*.meta' | wc -l)
			[ "$n" -lt 8 ] && partial=$((partial + 1))
		done
	done
	echo "# backups seen half-deleted after a kill: $partial" >&3
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 1 --delete
	assert_success
	run half_valid
	assert_output ''
}

@test "Ctrl-C during --delete exits 130 saying the same command continues, and it does" {
	for d in 01 02 03; do mkbackup "2025-06-$d""_12-00" 2; done
	MTC_FAULT_STALL="prune-delete=2025-06-02_12-00:$ROOT/stalled" mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 1 --delete >/dev/null 2>"$ROOT/err" &
	pid=$!
	for ((i = 0; i < 200; i++)); do grep -qs '^[0-9][0-9]*$' "$ROOT/stalled" && break; sleep 0.05; done
	grep -qs '^[0-9][0-9]*$' "$ROOT/stalled"
	kill -INT "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 130
	run cat "$ROOT/err"
	assert_output "mtc-prune: interrupted; run the same command to continue"
	assert_dir_exists "$ROOT/job/2025-06-02_12-00"
	run mtc-prune "$ROOT" --job job "${NONE[@]}" --daily 1 --delete
	assert_success
	assert_equal "$(dirs)" "2025-06-03_12-00 "
}
